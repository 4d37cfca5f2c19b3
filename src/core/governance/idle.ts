// Idle and held detection (issue 16): a running job whose GPU utilization stays under its policy's
// threshold for long enough, or an admitted job whose pods are not running after a while, is
// flagged; the queue's policy says whether that only notifies its owner or reclaims the GPUs.
import type { IdlePolicy, JobFlag, ProbeSample } from './types.js';

/**
 * The flag for a job at `now`, or null.
 * - NOT_RUNNING when `runningSince` is null and now − admittedAt ≥ policy.notRunningForMs
 *   (since = admittedAt).
 * - IDLE when the samples (sorted by time, taken while running) have a trailing stretch all below
 *   policy.utilizationBelow that started at least policy.idleForMs before now and began at or after
 *   runningSince (since = the first sample of that stretch; meanUtilization = its mean). One sample at
 *   or above the threshold ends a stretch. No samples: never IDLE.
 * `queueBorrowing`: whether the job's queue holds more than its nominal now (RECLAIM_IF_BORROWING).
 */
export function flagJob(
  now: number,
  admittedAt: number,
  runningSince: number | null,
  samples: readonly ProbeSample[],
  policy: IdlePolicy,
  queueBorrowing: boolean,
): JobFlag | null {
  void now; void admittedAt; void runningSince; void samples; void policy; void queueBorrowing;
  throw new Error('flagJob: not implemented yet');
}
