// Quota recommendations from the usage ledger's hourly rollup: per queue and hour, the
// GPUs its jobs held (GPU-seconds / 3600, device equivalents), against its current GPU nominal; the
// core's recommend() names the queues that under-use their nominal and those that borrow nearly
// all the time.

import type { QueueUsageHistory, Recommendation } from '../../core/governance/index.js';
import { recommend } from '../../core/governance/index.js';
import type { QuotaSpec } from '../../core/scheduling/index.js';
import { Flavor, Queue } from '../../persistence/cluster/index.js';
import { Tenant } from '../../persistence/tenancy/index.js';
import { badInput, forbidden } from '../../shared/index.js';
import { callerHasCapability, requirePrincipal, type ServiceContext } from '../context.js';
import { aggregateUsage, type UsageRow } from '../metering/index.js';

const HOUR = 3_600_000;
export const DEFAULT_RECOMMENDATION_DAYS = 14;
export const MAX_RECOMMENDATION_DAYS = 90;

/** A recommendation with the queue it is about. */
export interface RecommendationView extends Recommendation {
  queueRow: Queue;
}

/**
 * Which tenants' queues the caller may have recommendations for: platform admins every tenant
 * (null); tenant admins and auditors (usage:read) their own; anyone else FORBIDDEN. Usage history
 * per queue is cost-like data that members and viewers do not review.
 */
function tenantsFor(ctx: ServiceContext): string[] | null {
  const principal = requirePrincipal(ctx);
  if (principal.isPlatformAdmin && !principal.token?.tenantId) return null;
  const tenants = [...principal.roles]
    .filter(
      ([tenantId, role]) =>
        (role === 'TENANT_ADMIN' || role === 'AUDITOR') && callerHasCapability(ctx, tenantId, 'usage:read'),
    )
    .map(([tenantId]) => tenantId);
  if (!tenants.length)
    throw forbidden(
      'Quota recommendations are for platform admins, and for tenant admins and auditors (usage:read) about their own queues.',
    );
  return tenants;
}

/** GPUs of a queue's nominal in device equivalents (a MIG or time-slice flavor's nominal counts slices). */
export function nominalGpus(quotas: QuotaSpec, slicesPerGpu: ReadonlyMap<string, number>): number {
  let total = 0;
  for (const [flavor, line] of Object.entries(quotas))
    total += (line.gpu?.nominal ?? 0) / (slicesPerGpu.get(flavor) ?? 1);
  return total;
}

/**
 * One queue's history over [from, to): hours covered start at the later of `from` and the queue's
 * first sign of life (its creation or its first usage, whichever is earlier); hours without usage count as 0.
 */
export function historyOf(
  queue: { name: string; createdAt: Date },
  tenant: string,
  nominal: number,
  usedByHour: ReadonlyMap<number, number>,
  from: number,
  to: number,
): QueueUsageHistory {
  const firstUsage = usedByHour.size ? Math.min(...usedByHour.keys()) : Infinity;
  const born = Math.floor(Math.min(queue.createdAt.getTime(), firstUsage) / HOUR) * HOUR;
  const start = Math.max(from, born);
  const hours = Math.max(0, (to - start) / HOUR);
  let sum = 0;
  let peak = 0;
  let hoursBorrowing = 0;
  let borrowed = 0;
  for (const [hour, used] of usedByHour) {
    if (hour < start || hour >= to) continue;
    sum += used;
    peak = Math.max(peak, used);
    // A hair above nominal from rounding of GPU-seconds is not borrowing.
    if (used > nominal + 1e-9) {
      hoursBorrowing += 1;
      borrowed += used - nominal;
    }
  }
  return {
    queue: queue.name,
    tenant,
    nominalGpus: nominal,
    hours,
    meanUsedGpus: hours > 0 ? sum / hours : 0,
    peakUsedGpus: peak,
    hoursBorrowing,
    meanBorrowedGpus: hours > 0 ? borrowed / hours : 0,
  };
}

/** Recommendations from the last `days` whole hours of usage, for the queues the caller may review. */
export async function quotaRecommendations(
  ctx: ServiceContext,
  days: number = DEFAULT_RECOMMENDATION_DAYS,
): Promise<RecommendationView[]> {
  const tenants = tenantsFor(ctx);
  if (!Number.isInteger(days) || days < 1 || days > MAX_RECOMMENDATION_DAYS)
    throw badInput(`days must be a whole number from 1 to ${MAX_RECOMMENDATION_DAYS}.`);
  const to = Math.floor(ctx.now().getTime() / HOUR) * HOUR;
  const from = to - days * 24 * HOUR;
  const [queues, flavors] = await Promise.all([
    ctx.em.find(Queue, tenants ? { tenant: { $in: tenants } } : {}, { orderBy: { name: 'asc' } }),
    ctx.em.find(Flavor, {}),
  ]);
  if (!queues.length) return [];
  const tenantRows = await ctx.em.find(Tenant, { id: { $in: [...new Set(queues.map((q) => q.tenant.id))] } });
  const slugOf = new Map(tenantRows.map((t) => [t.id, t.slug]));
  const slices = new Map(
    flavors.filter((f) => f.slicesPerGpu && f.kind !== 'gpu').map((f) => [f.name, f.slicesPerGpu!]),
  );
  const rows: UsageRow[] = [];
  for (const tenantId of tenants ?? [null])
    rows.push(
      ...(await aggregateUsage(ctx.em, {
        tenantId,
        groupBy: ['QUEUE'],
        granularity: 'HOUR',
        from: new Date(from),
        to: new Date(to),
      })),
    );
  const used = new Map<string, Map<number, number>>();
  for (const row of rows) {
    if (!row.queueId || !row.periodStart) continue;
    let byHour = used.get(row.queueId);
    if (!byHour) used.set(row.queueId, (byHour = new Map()));
    const hour = row.periodStart.getTime();
    byHour.set(hour, (byHour.get(hour) ?? 0) + row.gpuHours);
  }
  const byName = new Map(queues.map((q) => [q.name, q]));
  const history = queues.map((q) =>
    historyOf(
      q,
      slugOf.get(q.tenant.id) ?? q.tenant.id,
      nominalGpus(q.quotas, slices),
      used.get(q.id) ?? new Map(),
      from,
      to,
    ),
  );
  return recommend(history).flatMap((r) => {
    const queueRow = byName.get(r.queue);
    return queueRow ? [{ ...r, queueRow }] : [];
  });
}
