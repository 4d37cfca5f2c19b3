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

/**
 * The candidate order's cost key: GPU-time the victim would lose per GPU of the preemptor's request
 * (`needGpu`, internal units) it can cover — lostGpuMs / min(its GPUs, needGpu). For a preemptor
 * asking at least as much as the victim holds this is the run time lost (cheapest GPU-time first,
 * and for jobs that do not checkpoint exactly Kueue's "most recently admitted first"); for a small
 * preemptor it is the victim's whole loss, so a 1-GPU job does not evict a young 8-GPU job that
 * loses more in all than an older 1-GPU one. Jobs without GPUs (or a preemptor without) rank by run time
 * lost.
 */
export function victimCost(job: JobState, now: number, needGpu: number): number {
  const run = lostRunMs(job, now);
  const g = gpuOf(job.usage);
  if (g <= 0 || needGpu <= 0 || g <= needGpu) return run;
  return (run * g) / needGpu;
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
