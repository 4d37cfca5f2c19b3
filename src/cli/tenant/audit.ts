// fairway audit: the tenant's audit log (or, --platform, every event), newest first.
import { COMMON_HELP, parse, positiveInt } from './args.js';
import { type CliContext, CliError, EXIT } from './context.js';
import { table } from './format.js';
import { requireToken, resolveTenant } from './lookup.js';
import { graphql, type ResultOf, send } from './operations.js';

export const AUDIT_HELP = `usage: fairway audit [--tenant SLUG] [--platform] [--action TEXT] [--limit N] [--json]

The tenant's audit log, newest first: every mutation, who made it, on what, and how it ended
(refused and failed attempts too, with their error code). Tenant admins and auditors.

  --tenant SLUG      when you belong to several tenants (or FAIRWAY_TENANT)
  --platform         (platform admins) every event, including refused attempts of no tenant
  --action TEXT      only actions containing TEXT (any case), e.g. quotaRequest
  --limit N          at most N events (default 50); with --action, the log is read back until
                     N events match or it begins
  --json             a JSON array of events, newest first
${COMMON_HELP}`;

/** Largest page the graph serves. */
const PAGE = 100;

const AuditEventFields = graphql(`
  fragment AuditEventFields on AuditEvent @_unmask {
    id
    createdAt
    actorName
    viaApiToken
    action
    targetType
    targetId
    outcome
    errorCode
    requestId
  }
`);

// Oldest first, as the graph pages them: `last` and `before` walk back from the newest.
const TenantAudit = graphql(
  `
  query TenantAudit($tenantId: ID!, $last: Int!, $before: String) {
    auditEvents(tenantId: $tenantId, last: $last, before: $before) {
      edges { node { ...AuditEventFields } }
      pageInfo { hasPreviousPage startCursor }
    }
  }
`,
  [AuditEventFields],
);

const PlatformAudit = graphql(
  `
  query PlatformAudit($last: Int!, $before: String) {
    platformAuditEvents(last: $last, before: $before) {
      edges { node { ...AuditEventFields } }
      pageInfo { hasPreviousPage startCursor }
    }
  }
`,
  [AuditEventFields],
);

export type AuditEvent = ResultOf<typeof AuditEventFields>;
type Page = ResultOf<typeof TenantAudit>['auditEvents'];

/** Pages back from the newest until `limit` events pass `keep` or the log begins; newest first. */
async function readBack(
  load: (last: number, before: string | null) => Promise<Page>,
  limit: number,
  keep: (e: AuditEvent) => boolean,
  filtered: boolean,
): Promise<AuditEvent[]> {
  const events: AuditEvent[] = [];
  let before: string | null = null;
  for (;;) {
    // Unfiltered, ask for what is still missing; filtered, whole pages (most may not match).
    const page = await load(filtered ? PAGE : Math.min(PAGE, limit - events.length), before);
    for (const { node } of [...page.edges].reverse()) {
      if (!keep(node)) continue;
      events.push(node);
      if (events.length === limit) return events;
    }
    if (!page.pageInfo.hasPreviousPage || !page.pageInfo.startCursor) return events;
    before = page.pageInfo.startCursor;
  }
}

const who = (e: AuditEvent) => `${e.actorName ?? '-'}${e.viaApiToken ? ' (token)' : ''}`;
const target = (e: AuditEvent) =>
  e.targetId ? `${e.targetType ?? ''} ${e.targetId}`.trim() : (e.targetType ?? '-');
const outcome = (e: AuditEvent) =>
  e.outcome === 'SUCCESS' || !e.errorCode ? e.outcome : `${e.outcome} ${e.errorCode}`;

export async function runAudit(argv: string[], ctx: CliContext): Promise<number> {
  const { values } = parse(argv, {
    tenant: { type: 'string' },
    platform: { type: 'boolean' },
    action: { type: 'string' },
    limit: { type: 'string' },
  });
  if (values.help) {
    ctx.out(AUDIT_HELP);
    return EXIT.OK;
  }
  const limit = positiveInt(values.limit, '--limit', 50);
  if (values.platform && values.tenant !== undefined)
    throw new CliError('--platform reads every tenant: not with --tenant', EXIT.USAGE);
  const wanted = values.action?.trim().toLowerCase();
  if (values.action !== undefined && !wanted) throw new CliError('--action must not be empty', EXIT.USAGE);
  const keep = (e: AuditEvent) => !wanted || e.action.toLowerCase().includes(wanted);

  let where: string;
  let load: (last: number, before: string | null) => Promise<Page>;
  if (values.platform) {
    requireToken(ctx);
    where = 'the platform';
    load = async (last, before) => (await send(ctx, PlatformAudit, { last, before })).platformAuditEvents;
  } else {
    const tenant = await resolveTenant(ctx, values.tenant);
    where = tenant.slug;
    load = async (last, before) =>
      (await send(ctx, TenantAudit, { tenantId: tenant.id, last, before })).auditEvents;
  }
  const events = await readBack(load, limit, keep, wanted !== undefined);
  if (ctx.json) {
    ctx.out(JSON.stringify(events));
    return EXIT.OK;
  }
  if (events.length === 0) {
    ctx.out(`no audit events in ${where}${wanted ? ` with an action containing '${values.action}'` : ''}`);
    return EXIT.OK;
  }
  const rows = events.map((e) => [`${e.createdAt.slice(0, 19)}Z`, who(e), e.action, target(e), outcome(e)]);
  ctx.out(table(['WHEN', 'WHO', 'ACTION', 'TARGET', 'OUTCOME'], rows));
  return EXIT.OK;
}
