// fairway serve -f service.yaml [--dry-run]: the file checked locally, its queue and project
// resolved, then the tenant's service of that name updated (a rolling update when what the
// replicas run changes) or, when there is none, created. --dry-run previews instead.
import { COMMON_HELP, need, parse, positiveInt } from './args.js';
import { type CliContext, CliError, EXIT } from './context.js';
import { requireToken, resolveTenant } from './lookup.js';
import {
  CreateService,
  type PreviewPart,
  PreviewService,
  type Service,
  send,
  Targets,
  UpdateService,
} from './operations.js';
import { parseServiceFile, type ServiceFile, toCreateInput, toUpdateInput } from './service-file.js';
import { serviceSummary, type TenantRef, tenantServices } from './service-lookup.js';
import { readSource } from './submit.js';

export const SERVE_HELP = `usage: fairway serve -f FILE [--dry-run [--replicas N]] [--json]

Creates the inference service described in FILE (YAML; fields as CreateInferenceServiceInput's,
the queue and project by name), or, when the tenant has a service of that name, updates it:
a new container, port or replica rolls the replicas (maxSurge at a time, the new one first).
The file is checked first: a bad file exits 2 naming file:line, and nothing is sent. Bounds the
server refuses (minReplicas above maxReplicas, …) exit 1 with BAD_USER_INPUT, nothing written.
A service's queue, project and priority classes cannot change (exit 5, nothing sent).

  -f, --file FILE    the service file ('-' reads standard input)
  --dry-run          change nothing: would the replicas fit now, borrowing, preempting whom
  --replicas N       with --dry-run: preview N replicas (default: maxReplicas)
  --json             print the service (with "action") or the preview as JSON
${COMMON_HELP}`;

type Targeted = Pick<ServiceFile, 'tenant' | 'queue' | 'queueId' | 'project' | 'projectId'>;

/** The file's queue and project as IDs, and the tenant the service lives in. */
async function resolveTargets(
  ctx: CliContext,
  file: Targeted,
): Promise<{ tenant: TenantRef; queueId?: string; projectId?: string }> {
  if (!file.queue && !file.queueId && !file.project && !file.projectId)
    return { tenant: await resolveTenant(ctx, file.tenant) };
  const targets = await send(ctx, Targets, {});
  const inTenant = (t: TenantRef) => !file.tenant || t.slug === file.tenant;
  const scope = file.tenant ? ` in ${file.tenant}` : '';
  const one = <T extends { tenant: TenantRef }>(matches: T[], what: string): T => {
    if (matches.length === 0) throw new CliError(`no ${what}${scope} in your tenants`, EXIT.NOT_FOUND);
    if (matches.length > 1)
      throw new CliError(
        `${what} exists in several of your tenants (${matches.map((m) => m.tenant.slug).join(', ')}): add 'tenant:' to the file`,
        EXIT.USAGE,
      );
    return matches[0]!;
  };
  const queues = targets.queues.filter((q) => inTenant(q.tenant));
  const queue = file.queueId
    ? one(
        queues.filter((q) => q.id === file.queueId),
        `queue ${file.queueId}`,
      )
    : file.queue
      ? one(
          queues.filter((q) => q.name === file.queue),
          `queue '${file.queue}'`,
        )
      : undefined;
  const projects = targets.viewer.memberships
    .map((m) => m.tenant)
    .filter(inTenant)
    .flatMap((t) => t.projects.edges.map((e) => ({ ...e.node, tenant: { id: t.id, slug: t.slug } })));
  const project = file.projectId
    ? one(
        projects.filter((p) => p.id === file.projectId),
        `project ${file.projectId}`,
      )
    : file.project
      ? one(
          projects.filter((p) => p.slug === file.project),
          `project '${file.project}'`,
        )
      : undefined;
  if (queue && project && queue.tenant.id !== project.tenant.id)
    throw new CliError(
      `queue '${queue.name}' is in ${queue.tenant.slug}, project '${project.slug}' in ${project.tenant.slug}`,
      EXIT.USAGE,
    );
  const tenant = queue?.tenant ?? project?.tenant ?? (await resolveTenant(ctx, file.tenant));
  return {
    tenant,
    ...(queue ? { queueId: queue.id } : {}),
    ...(project ? { projectId: project.id } : {}),
  };
}

/** What an update cannot change: a difference is a CONFLICT (5), refused before anything is sent. */
function checkUnchangeable(
  existing: Service,
  file: ServiceFile,
  ids: { queueId?: string; projectId?: string },
  tenant: TenantRef,
): void {
  const differences: string[] = [];
  if (ids.queueId && ids.queueId !== existing.queue.id)
    differences.push(`queue '${existing.queue.name}' (the file: '${file.queue ?? file.queueId}')`);
  if (ids.projectId && ids.projectId !== existing.project.id)
    differences.push(`project '${existing.project.slug}' (the file: '${file.project ?? file.projectId}')`);
  if (file.guaranteedClass && file.guaranteedClass !== existing.guaranteedClass)
    differences.push(`guaranteedClass '${existing.guaranteedClass}' (the file: '${file.guaranteedClass}')`);
  if (file.burstClass && file.burstClass !== existing.burstClass)
    differences.push(`burstClass '${existing.burstClass}' (the file: '${file.burstClass}')`);
  if (differences.length)
    throw new CliError(
      `service '${existing.name}' in ${tenant.slug} has ${differences.join(', ')}: a service's queue, project and classes cannot change (delete it and serve again)`,
      EXIT.CONFLICT,
    );
}

function partLines(label: string, part: PreviewPart | null): string[] {
  if (!part) return [`  ${label}: none`];
  const verdict = part.admissible
    ? part.borrowed
      ? "fits now, borrowing the cohort's idle capacity"
      : 'fits now within the quota'
    : `would wait: ${part.message ?? part.reason ?? 'no room'}`;
  const lines = [`  ${label}: ${verdict}${part.mode ? ` [${part.mode}]` : ''}`];
  if (part.placement.length)
    lines.push(
      `    on ${part.placement.map((p) => `${p.node} (${p.pods} pod${p.pods === 1 ? '' : 's'}, ${p.flavor})`).join(', ')}`,
    );
  for (const v of part.wouldPreempt)
    lines.push(`    would preempt ${v.jobId ? `job ${v.jobId}` : 'a job of another tenant'}: ${v.reason}`);
  return lines;
}

async function dryRun(
  ctx: CliContext,
  file: ServiceFile,
  ids: { queueId?: string; projectId?: string },
  existing: Service | undefined,
  tenant: TenantRef,
  replicas: number,
): Promise<number> {
  // An existing service previews in its own queue and project.
  const input = toCreateInput(
    file,
    existing ? { queueId: existing.queue.id, projectId: existing.project.id } : ids,
  );
  const { previewService: p } = await send(ctx, PreviewService, { input, replicas });
  const action = existing ? 'update' : 'create';
  if (ctx.json) {
    ctx.out(JSON.stringify({ action, service: existing ?? null, preview: p }));
    return EXIT.OK;
  }
  ctx.out(
    existing
      ? `dry run: would update service ${existing.id}  ${existing.name} (revision ${existing.revision}) in ${tenant.slug}; nothing was changed`
      : `dry run: would create service ${file.name} in ${tenant.slug}; nothing was changed`,
  );
  ctx.out(
    `${p.replicas} replica${p.replicas === 1 ? '' : 's'}: ${p.admissible ? 'would fit now' : 'would not all fit now'}`,
  );
  for (const line of partLines(
    `guaranteed (${file.guaranteedClass ?? existing?.guaranteedClass ?? 'inference-critical'})`,
    p.guaranteed,
  ))
    ctx.out(line);
  for (const line of partLines(`burst (${file.burstClass ?? existing?.burstClass ?? 'production'})`, p.burst))
    ctx.out(line);
  if (existing && existing.replicas.admitted > 0)
    ctx.out(
      `  (previewed beside what runs, this service's ${existing.replicas.admitted} admitted replica${existing.replicas.admitted === 1 ? '' : 's'} included)`,
    );
  return EXIT.OK;
}

export async function runServe(argv: string[], ctx: CliContext): Promise<number> {
  const { values } = parse(argv, {
    file: { type: 'string', short: 'f' },
    'dry-run': { type: 'boolean' },
    replicas: { type: 'string' },
  });
  if (values.help) {
    ctx.out(SERVE_HELP);
    return EXIT.OK;
  }
  const path = need(values.file, '-f FILE');
  if (values.replicas !== undefined && !values['dry-run'])
    throw new CliError('--replicas goes with --dry-run', EXIT.USAGE);
  // Everything local first: a bad file or a missing login sends nothing.
  const file = parseServiceFile(await readSource(ctx, path), path === '-' ? '<stdin>' : path);
  requireToken(ctx);
  const replicas = positiveInt(values.replicas, '--replicas', Math.max(file.maxReplicas, 1));
  const { tenant, ...ids } = await resolveTargets(ctx, file);
  const existing = (await tenantServices(ctx, tenant)).find((s) => s.name === file.name);
  if (existing) checkUnchangeable(existing, file, ids, tenant);
  if (values['dry-run']) return dryRun(ctx, file, ids, existing, tenant, replicas);

  const service = existing
    ? (await send(ctx, UpdateService, { id: existing.id, input: toUpdateInput(file) })).updateInferenceService
    : (await send(ctx, CreateService, { input: toCreateInput(file, ids) })).createInferenceService;
  const action = existing ? 'updated' : 'created';
  if (ctx.json) {
    ctx.out(JSON.stringify({ ...service, action }));
    return EXIT.OK;
  }
  const how = !existing
    ? 'created'
    : service.revision > existing.revision
      ? `updated, rolling from revision ${existing.revision}`
      : 'updated (what the replicas run is unchanged: no roll)';
  ctx.out(
    `service ${service.id}  ${service.name}  queue ${service.queue.name}  revision ${service.revision}: ${how}`,
  );
  ctx.out(serviceSummary(service));
  return EXIT.OK;
}
