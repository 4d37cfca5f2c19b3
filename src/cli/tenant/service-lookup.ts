// Inference services by the names people type, and how `serve` and `services` print one.
import { type CliContext, CliError, EXIT } from './context.js';
import { gpus } from './format.js';
import { resolveTenant } from './lookup.js';
import { type ResultOf, type Service, send, TenantServices } from './operations.js';

export type TenantRef = { id: string; slug: string };

/** Every service of the tenant, oldest first (the graph pages them 100 at a time). */
export async function tenantServices(ctx: CliContext, tenant: TenantRef): Promise<Service[]> {
  const all: Service[] = [];
  let after: string | null = null;
  for (;;) {
    const page: ResultOf<typeof TenantServices> = await send(ctx, TenantServices, {
      slug: tenant.slug,
      after,
    });
    const connection = page.tenant.inferenceServices;
    all.push(...connection.edges.map((e) => e.node));
    if (!connection.pageInfo.hasNextPage || !connection.pageInfo.endCursor) return all;
    after = connection.pageInfo.endCursor;
  }
}

/** An InferenceService ID (base64 of `InferenceService:…`) rather than a name. */
export function isServiceId(s: string): boolean {
  return (
    /^[A-Za-z0-9+/]+=*$/.test(s) && Buffer.from(s, 'base64').toString('utf8').startsWith('InferenceService:')
  );
}

/**
 * The service a command names: its ID as given (the server answers NOT_FOUND for another tenant's),
 * else the tenant's service of that name (--tenant, FAIRWAY_TENANT or the caller's only tenant).
 */
export async function resolveService(
  ctx: CliContext,
  nameOrId: string,
  tenantSlug: string | undefined,
): Promise<{ id: string; name: string | null }> {
  if (isServiceId(nameOrId)) return { id: nameOrId, name: null };
  const tenant = await resolveTenant(ctx, tenantSlug);
  const found = (await tenantServices(ctx, tenant)).find((s) => s.name === nameOrId);
  if (!found) throw new CliError(`no service '${nameOrId}' in ${tenant.slug}`, EXIT.NOT_FOUND);
  return found;
}

/**
 * A one-word state (the graph has none), from the replica counts and jobs: SCALED_TO_ZERO (none
 * wanted), ROLLING (a slot has a new replica beside the one it replaces), READY (all wanted
 * replicas serve), WAITING (some wait for quota or room; see their jobs' pending reasons),
 * STARTING (admitted, not serving yet).
 */
export function serviceState(s: Pick<Service, 'replicas' | 'replicaJobs'>): string {
  const r = s.replicas;
  if (r.desired === 0 && r.admitted === 0 && s.replicaJobs.length === 0) return 'SCALED_TO_ZERO';
  if (new Set(s.replicaJobs.map((j) => j.replicaSlot)).size < s.replicaJobs.length) return 'ROLLING';
  if (r.ready >= r.desired) return 'READY';
  if (r.pending > 0) return 'WAITING';
  return 'STARTING';
}

const round = (v: number) => String(Math.round(v * 100) / 100);

/** The signal's last reading against its target: "req/s 42 (10/replica)", "p95 180ms (target 200ms)". */
export function signalText(scaling: Service['scaling'], value: number | null | undefined): string {
  const v = (f: (x: number) => string) => (value == null ? '-' : f(value));
  switch (scaling.signal) {
    case 'IN_FLIGHT':
      return `in-flight ${v(round)} (${round(scaling.target)}/replica)`;
    case 'REQUESTS_PER_SECOND':
      return `req/s ${v(round)} (${round(scaling.target)}/replica)`;
    case 'P95_LATENCY_MS':
      return `p95 ${v((x) => `${round(x)}ms`)} (target ${round(scaling.target)}ms)`;
    case 'GPU_UTILIZATION':
      return `gpu ${v((x) => `${Math.round(x * 100)}%`)} (target ${Math.round(scaling.target * 100)}%)`;
    default:
      return `${scaling.signal} ${v(round)} (target ${round(scaling.target)})`;
  }
}

/** "READY  replicas: 2 desired, 2 admitted, 2 ready, 0 pending (2 guaranteed); bounds 2-6; 2 × 1 GPU" */
export function serviceSummary(s: Service): string {
  const r = s.replicas;
  const pods = s.replica.count > 1 ? `${s.replica.count} pods × ${gpus(s.replica.gpusPerPod)} GPU` : '';
  const shape = `${pods || `${gpus(s.replica.gpusPerPod)} GPU`} a replica`;
  return `${serviceState(s)}  replicas: ${r.desired} desired, ${r.admitted} admitted, ${r.ready} ready, ${r.pending} pending (${r.minimum} guaranteed); bounds ${s.minReplicas}-${s.maxReplicas}; ${shape}`;
}
