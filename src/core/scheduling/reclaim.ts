// Governance reclaim: a running job flagged idle or admitted-but-not-running gives its
// resources back. Asked for between cycles (Scheduler.reclaim), carried out by the next cycle() call
// before any head is tried, so the decision and its effect come out of a cycle together like every
// other preemption: listed first among its preemptions, the job back to pending with its original
// submit time, and — for a hold — kept out of admission (in the held set, as an admission hold
// keeps jobs) until the hold's end.
import { release } from './admit.js';
import { SchedulerInputError } from './errors.js';
import { holdNew, matchingHold, unhold } from './holds.js';
import { lostGpuMs } from './preemption/lost-work.js';
import { enqueue, joinQueue } from './queueing.js';
import type { CoreState, JobState } from './state.js';
import type { Preemption } from './types.js';

export type ReclaimReason = 'idle' | 'not-running';

/**
 * Records a reclaim of an admitted job for the next cycle. Refuses unknown jobs (UNKNOWN_JOB), jobs
 * not admitted (NOT_ADMITTED), another reason or a holdMs that is not a finite number ≥ 0
 * (INVALID_SPEC). Asked again before that cycle, the later call replaces the earlier (one preemption).
 */
export function requestReclaim(core: CoreState, jobId: string, reason: ReclaimReason, holdMs: number): void {
  const j = core.jobs.get(jobId);
  if (!j) throw new SchedulerInputError('UNKNOWN_JOB', `unknown job ${jobId}`);
  if (j.status !== 'admitted')
    throw new SchedulerInputError('NOT_ADMITTED', `job ${jobId} is not admitted: nothing to reclaim`);
  if (reason !== 'idle' && reason !== 'not-running')
    throw new SchedulerInputError('INVALID_SPEC', `reclaim ${jobId}: reason must be 'idle' or 'not-running'`);
  if (typeof holdMs !== 'number' || !Number.isFinite(holdMs) || holdMs < 0)
    throw new SchedulerInputError('INVALID_SPEC', `reclaim ${jobId}: holdMs must be a number ≥ 0`);
  core.reclaims.set(jobId, { job: j, reason, holdUntil: core.clock.now() + holdMs });
}

/**
 * At the start of a cycle call (after the cycle's preparation, before its heads): evicts every job a
 * reclaim was asked for that is still the same admitted job, in the order asked, into `preempted`.
 * Its quota and nodes are freed as when a running job ends (admit.ts release: who can gain is
 * woken); as a victim of commit() (admit.ts) it goes back to pending with its original submit time
 * and is not admitted again in this cycle; with a hold still in force it waits in the held set.
 */
export function applyReclaims(core: CoreState, now: number, preempted: Preemption[]): void {
  if (core.reclaims.size === 0) return;
  const asked = [...core.reclaims.values()];
  core.reclaims.clear();
  for (const { job: j, reason, holdUntil } of asked) {
    if (core.jobs.get(j.spec.id) !== j || j.status !== 'admitted') continue; // finished or cancelled since
    const p: Preemption = {
      victimId: j.spec.id,
      victimQueue: j.queue.spec.name,
      preemptorId: '',
      preemptorQueue: '',
      reason,
      at: now,
      lostGpuMs: lostGpuMs(j, now),
    };
    preempted.push(p);
    release(core, j, now);
    j.admission = null;
    j.preemptions++;
    j.lastPreemption = p;
    j.preemptedCycle = core.cycleNo;
    j.disruptionHold = false;
    backToQueue(core, j, now, holdUntil, `reclaimed (${reason}); requeued with its original submit time`);
  }
}

/**
 * The backend lost an admitted job's run (a pod evicted, its node drained or lost): its quota
 * and nodes are freed now, as an ended job's, and it waits in its queue again with its original
 * submit time, after `holdMs` (a backoff: the cluster's view of a drained or lost node reaches the
 * inventory a moment later). Not a preemption: no cycle lists it and no preemptor is named.
 * Refuses unknown jobs (UNKNOWN_JOB), jobs not admitted (NOT_ADMITTED) and a holdMs that is not a
 * finite number ≥ 0 (INVALID_SPEC).
 */
export function requeueDisrupted(core: CoreState, jobId: string, now: number, holdMs = 0): void {
  const j = core.jobs.get(jobId);
  if (!j) throw new SchedulerInputError('UNKNOWN_JOB', `unknown job ${jobId}`);
  if (j.status !== 'admitted')
    throw new SchedulerInputError('NOT_ADMITTED', `job ${jobId} is not admitted: nothing to requeue`);
  if (typeof holdMs !== 'number' || !Number.isFinite(holdMs) || holdMs < 0)
    throw new SchedulerInputError('INVALID_SPEC', `requeue ${jobId}: holdMs must be a number ≥ 0`);
  core.reclaims.delete(jobId);
  release(core, j, now);
  j.admission = null;
  j.disruptionHold = holdMs > 0;
  backToQueue(core, j, now, now + holdMs, 'disrupted by the cluster; requeued with its original submit time');
}

function backToQueue(core: CoreState, j: JobState, now: number, holdUntil: number, message: string): void {
  j.parkKind = 'any';
  j.parkNeeds = [];
  j.wakeNodes = null;
  j.releasable = null;
  j.preemptedBy = null; // no preemptor job: lastPreemption says why
  j.decisionVersion = -1;
  j.status = 'pending';
  if (holdUntil > now) {
    j.decision = null;
    j.reclaimHoldUntil = holdUntil;
    core.reclaimHeld.add(j);
    holdNew(core, j);
  } else {
    j.decision = { jobId: j.spec.id, queue: j.queue.spec.name, reason: 'WaitingForQuota', message };
    enqueue(core, j);
    core.deferred.add(j.queue);
  }
}

/**
 * Before a cycle's heads: reclaim holds that have ended are lifted; the job rejoins its queue as a
 * submit would, unless an admission hold matches it (it stays held, now for the budget).
 */
export function liftReclaimHolds(core: CoreState, now: number): void {
  if (core.reclaimHeld.size === 0) return;
  for (const j of [...core.reclaimHeld]) {
    if ((j.reclaimHoldUntil as number) > now) continue;
    if (matchingHold(core, j.spec)) {
      core.reclaimHeld.delete(j);
      j.reclaimHoldUntil = null;
      continue;
    }
    unhold(core, j); // ends the reclaim hold too
    joinQueue(core, j);
  }
}
