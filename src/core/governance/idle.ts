// Idle and held detection: a running job whose GPU utilization stays under its policy's
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
 * Details: "below" is strict (<); samples later than `now` are not read; meanUtilization is the plain
 * mean of the stretch's samples; forMs = now − since, at = now, limitMs = the policy limit crossed
 * (idleForMs or notRunningForMs), utilizationBelow = the threshold for IDLE, null for NOT_RUNNING.
 * decision: RECLAIM for action RECLAIM, and for RECLAIM_IF_BORROWING while queueBorrowing; else NOTIFY.
 * A running job (runningSince set) is never NOT_RUNNING; one not running is never IDLE.
 */
export function flagJob(
  now: number,
  admittedAt: number,
  runningSince: number | null,
  samples: readonly ProbeSample[],
  policy: IdlePolicy,
  queueBorrowing: boolean,
): JobFlag | null {
  const decision: JobFlag['decision'] =
    policy.action === 'RECLAIM' || (policy.action === 'RECLAIM_IF_BORROWING' && queueBorrowing)
      ? 'RECLAIM'
      : 'NOTIFY';
  if (runningSince === null) {
    const forMs = now - admittedAt;
    if (forMs < policy.notRunningForMs) return null;
    return {
      kind: 'NOT_RUNNING',
      since: admittedAt,
      forMs,
      at: now,
      meanUtilization: null,
      utilizationBelow: null,
      limitMs: policy.notRunningForMs,
      action: policy.action,
      decision,
    };
  }
  // The trailing stretch of low samples, newest first: samples after `now` are not read yet, one at
  // or above the threshold (or taken before this run started) ends it.
  let since: number | null = null;
  let sum = 0;
  let count = 0;
  for (let i = samples.length - 1; i >= 0; i--) {
    const s = samples[i] as ProbeSample;
    if (s.at > now) continue;
    if (s.at < runningSince || !(s.gpuUtilization < policy.utilizationBelow)) break;
    since = s.at;
    sum += s.gpuUtilization;
    count++;
  }
  if (since === null || now - since < policy.idleForMs) return null;
  return {
    kind: 'IDLE',
    since,
    forMs: now - since,
    at: now,
    meanUtilization: sum / count,
    utilizationBelow: policy.utilizationBelow,
    limitMs: policy.idleForMs,
    action: policy.action,
    decision,
  };
}
