// Recommendations from usage history (issue 16): queues that under-use their nominal quota
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

/**
 * One recommendation per queue at most, sorted by tenant then queue. UNDER_USED suggests
 * SHARED_POOL with nominal = ceil(peakUsedGpus) (never above the current); CONSTANT_BORROWER
 * suggests DEDICATED_POOL with nominal = ceil(meanUsedGpus). Queues with nominal 0 are never
 * UNDER_USED. The evidence names the figures (hours, mean and peak use, share of hours borrowing).
 */
export function recommend(history: readonly QueueUsageHistory[], opts: RecommendationOptions = {}): Recommendation[] {
  void history; void opts;
  throw new Error('recommend: not implemented yet');
}
