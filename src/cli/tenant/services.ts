// fairway services ls | scale NAME --min N --max M | delete NAME: a tenant's inference services.
import { COMMON_HELP, need, parse } from './args.js';
import { type CliContext, CliError, EXIT } from './context.js';
import { table } from './format.js';
import { requireToken, resolveTenant } from './lookup.js';
import { DeleteService, ScaleService, send } from './operations.js';
import {
  resolveService,
  serviceState,
  serviceSummary,
  signalText,
  tenantServices,
} from './service-lookup.js';

const TENANT_HELP = `  --tenant SLUG      when you belong to several tenants (or FAIRWAY_TENANT)`;

export const SERVICES_HELP = `usage: fairway services ls [--tenant SLUG] [--json]
       fairway services scale NAME --min N --max M [--tenant SLUG] [--json]
       fairway services delete NAME [--tenant SLUG] [--json]

The tenant's inference services (create or update one with 'fairway serve -f FILE').

  ls                 list them: name, queue, replicas desired/admitted/ready, bounds, the
                     signal's last reading against its target, and a state from the counts
                     (READY, ROLLING, STARTING, WAITING for quota or room, SCALED_TO_ZERO)
  scale NAME         change the bounds (--min, --max or both); the replicas move into them at once
  delete NAME        cancel the replicas (charged to now) and delete the service; asks nothing

NAME is the service's name in the tenant, or its ID.
${TENANT_HELP}
  --json             ls: a JSON array of services; scale: the service; delete: {"id", "name"}
${COMMON_HELP}`;

const SUBCOMMANDS = ['ls', 'scale', 'delete'] as const;

function bound(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value))
    throw new CliError(`${flag} must be an integer, 0 or more, got '${value}'`, EXIT.USAGE);
  return Number(value);
}

async function ls(ctx: CliContext, tenantSlug: string | undefined): Promise<number> {
  const tenant = await resolveTenant(ctx, tenantSlug);
  const list = await tenantServices(ctx, tenant);
  if (ctx.json) {
    ctx.out(JSON.stringify(list));
    return EXIT.OK;
  }
  if (list.length === 0) {
    ctx.out(`no inference services in ${tenant.slug}`);
    return EXIT.OK;
  }
  const rows = list.map((s) => [
    s.name,
    s.queue.name,
    `${s.replicas.desired}/${s.replicas.admitted}/${s.replicas.ready}`,
    `${s.minReplicas}-${s.maxReplicas}`,
    signalText(s.scaling, s.lastDecision?.signalValue),
    serviceState(s),
  ]);
  ctx.out(table(['NAME', 'QUEUE', 'REPLICAS D/A/R', 'MIN-MAX', 'SIGNAL', 'STATE'], rows, new Set([2, 3])));
  return EXIT.OK;
}

export async function runServices(argv: string[], ctx: CliContext): Promise<number> {
  const { values, positionals } = parse(
    argv,
    { tenant: { type: 'string' }, min: { type: 'string' }, max: { type: 'string' } },
    2,
  );
  const [sub, name] = positionals;
  if (values.help) {
    ctx.out(SERVICES_HELP);
    return EXIT.OK;
  }
  if (sub === undefined)
    throw new CliError(`a subcommand is required: ${SUBCOMMANDS.join(', ')}`, EXIT.USAGE);
  if (!(SUBCOMMANDS as readonly string[]).includes(sub))
    throw new CliError(`unknown subcommand '${sub}' (one of ${SUBCOMMANDS.join(', ')})`, EXIT.USAGE);
  if (sub !== 'scale' && (values.min !== undefined || values.max !== undefined))
    throw new CliError(`--min and --max go with 'services scale'`, EXIT.USAGE);
  if (sub === 'ls') {
    if (name !== undefined) throw new CliError(`unexpected argument '${name}'`, EXIT.USAGE);
    return ls(ctx, values.tenant);
  }
  const target = need(name, 'NAME');
  if (sub === 'scale') {
    const minReplicas = bound(values.min, '--min');
    const maxReplicas = bound(values.max, '--max');
    if (minReplicas === undefined && maxReplicas === undefined)
      throw new CliError('--min N, --max M or both are required', EXIT.USAGE);
    requireToken(ctx);
    const { id } = await resolveService(ctx, target, values.tenant);
    const { scaleInferenceService: s } = await send(ctx, ScaleService, {
      id,
      ...(minReplicas !== undefined ? { minReplicas } : {}),
      ...(maxReplicas !== undefined ? { maxReplicas } : {}),
    });
    if (ctx.json) ctx.out(JSON.stringify(s));
    else {
      ctx.out(`service ${s.id}  ${s.name}: bounds ${s.minReplicas}-${s.maxReplicas}`);
      ctx.out(serviceSummary(s));
    }
    return EXIT.OK;
  }
  requireToken(ctx);
  const service = await resolveService(ctx, target, values.tenant);
  const { deleteInferenceService: id } = await send(ctx, DeleteService, { id: service.id });
  ctx.out(
    ctx.json
      ? JSON.stringify({ id, name: service.name })
      : `service ${id}${service.name ? `  ${service.name}` : ''}: deleted (its replicas are cancelled)`,
  );
  return EXIT.OK;
}
