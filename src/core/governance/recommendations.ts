// Recommendations from usage history: queues that under-use their nominal quota
// (candidates for a shared pool) and queues that borrow nearly all the time (candidates for more
// nominal or a dedicated pool).
import type { QueueUsageHistory, Recommendation } from './types.js';

export interface RecommendationOptions {
  /** UNDER_USED when mean use / nominal is below this (default 0.3). */
  underUseBelow?: number;
  /** CONSTANT_BORROWER when hours borrowing / hours is above this (default 0.7). */
  borrowingShareAbove?: number;
  /** No recommendation from less history than this (default 24 h). */
  minHours?: number;
}

/** Whole GPUs, without float noise pushing 8.000000001 up to 9. */
const ceilGpus = (x: number): number => Math.max(0, Math.ceil(x - 1e-9));
/** A number as the evidence prints it: up to one decimal. */
const fmt = (x: number): string => String(Math.round(x * 10) / 10);
const pct = (x: number): string => `${Math.round(x * 100)} %`;

/**
 * One recommendation per queue at most, sorted by tenant then queue (plain string order).
 * CONSTANT_BORROWER (checked first) when hoursBorrowing / hours > borrowingShareAbove: DEDICATED_POOL
 * with nominal = ceil(meanUsedGpus), never below the current. UNDER_USED when nominal > 0 and
 * meanUsedGpus / nominal < underUseBelow: SHARED_POOL with nominal = ceil(peakUsedGpus), never above
 * the current. Nothing from fewer than minHours hours (nor from 0 hours). The evidence names the
 * figures (hours, mean and peak use, share of hours borrowing, mean borrowed).
 */
export function recommend(
  history: readonly QueueUsageHistory[],
  opts: RecommendationOptions = {},
): Recommendation[] {
  const underUseBelow = opts.underUseBelow ?? 0.3;
  const borrowingShareAbove = opts.borrowingShareAbove ?? 0.7;
  const minHours = opts.minHours ?? 24;
  const out: Recommendation[] = [];
  for (const h of history) {
    if (!(h.hours > 0) || h.hours < minHours) continue;
    const base = { queue: h.queue, tenant: h.tenant, currentNominalGpus: h.nominalGpus };
    const borrowingShare = h.hoursBorrowing / h.hours;
    const use = `over ${fmt(h.hours)} h: mean use ${fmt(h.meanUsedGpus)} GPUs, peak ${fmt(h.peakUsedGpus)}, nominal ${fmt(h.nominalGpus)}`;
    if (borrowingShare > borrowingShareAbove) {
      out.push({
        ...base,
        kind: 'CONSTANT_BORROWER',
        suggestion: 'DEDICATED_POOL',
        suggestedNominalGpus: Math.max(h.nominalGpus, ceilGpus(h.meanUsedGpus)),
        evidence: `${use}; borrowed in ${fmt(h.hoursBorrowing)} of ${fmt(h.hours)} h (${pct(borrowingShare)}, above ${pct(borrowingShareAbove)}), ${fmt(h.meanBorrowedGpus)} GPUs borrowed on average`,
      });
    } else if (h.nominalGpus > 0 && h.meanUsedGpus / h.nominalGpus < underUseBelow) {
      out.push({
        ...base,
        kind: 'UNDER_USED',
        suggestion: 'SHARED_POOL',
        suggestedNominalGpus: Math.min(h.nominalGpus, ceilGpus(h.peakUsedGpus)),
        evidence: `${use}; mean use is ${pct(h.meanUsedGpus / h.nominalGpus)} of nominal (below ${pct(underUseBelow)}), borrowed in ${pct(borrowingShare)} of the hours`,
      });
    }
  }
  return out.sort((a, b) =>
    a.tenant < b.tenant ? -1 : a.tenant > b.tenant ? 1 : a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0,
  );
}
