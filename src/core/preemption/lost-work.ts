// What a preemption throws away: the GPU-time a victim has run since its last checkpoint
// (JobSpec.checkpoint), and the victim queue's minimum run before a reclaim (minRunBeforeReclaimMs).
import type { JobState, QueueState } from '../state.js';
import { gpuOf } from '../units.js';

/**
 * Run time (ms) a running job would lose if stopped at `now`: 0 when it is resumable; the time since
 * its last checkpoint when it checkpoints every `intervalMs` (counted from its admission); otherwise
 * all of it since admission (it restarts from zero).
 */
export function lostRunMs(job: JobState, now: number): number {
  const run = Math.max(0, now - job.admittedAt);
  const cp = job.spec.checkpoint;
  if (cp?.resumable) return 0;
  if (cp?.intervalMs !== undefined && cp.intervalMs > 0) return run % cp.intervalMs;
  return run;
}

/** GPU-milliseconds a running job would lose if stopped at `now`: its GPUs (flavor units) × lostRunMs. */
export function lostGpuMs(job: JobState, now: number): number {
  return (gpuOf(job.usage) / 1000) * lostRunMs(job, now);
}

/** The victim queue's minimum run before another queue may take one of its jobs back (0: none). */
export function minRunBeforeReclaim(q: QueueState): number {
  return q.spec.preemption?.minRunBeforeReclaimMs ?? 0;
}

/** Too young to be taken by another queue (reclaim, fair share, window-closed)? */
export function tooYoungForReclaim(job: JobState, now: number): boolean {
  const min = minRunBeforeReclaim(job.queue);
  return min > 0 && now - job.admittedAt < min;
}

/**
 * Would taking this job in a fair-share preemption throw away more run time than its queue allows
 * (fairShareMaxLostRunMs)? Only asked when the preemptor ends up borrowing under fair sharing.
 */
export function tooCostlyForFairShare(job: JobState, now: number): boolean {
  const max = job.queue.spec.preemption?.fairShareMaxLostRunMs;
  return max !== undefined && !job.queue.windowReclaimable && lostRunMs(job, now) > max;
}
