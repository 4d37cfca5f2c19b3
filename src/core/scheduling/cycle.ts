// The admission cycle, in phases, top to bottom: wake what the last cycle deferred, then passes of
// heads → order → try each head (assign, preempt: nominate.ts) → commit (admit.ts) or park/block.
import { commit } from './admit.js';
import { currentDecision, decisionFrom } from './assignment/decision.js';
import { evaluate } from './assignment/nominate.js';
import type { Fail } from './assignment/plan.js';
import { headBorrows } from './assignment/quota-mode.js';
import { holdVictims } from './holds.js';
import { historyAt, weightedShare } from './queue-usage.js';
import { knownPreemptFail, park, rememberPreemptFail, waitOn } from './queueing.js';
import { refreshWindows } from './quota-config.js';
import { applyReclaims, liftReclaimHolds } from './reclaim.js';
import { admittedWithReservation, agedShare, prepareReservations, reserveIfDue } from './reservation.js';
import { rescanAll } from './restore.js';
import type { CoreState, CycleRun, Head, JobState } from './state.js';
import { rollback } from './trail.js';
import type { CycleOptions, CycleResult, PendingDecision } from './types.js';
import { needMet, stillShort, wakeQueueIf } from './wake.js';

/**
 * One admission cycle. Each pass takes one head per active queue; a head is admitted, parked
 * (BestEffortFIFO) or blocks its queue (StrictFIFO), so every pass shrinks the work and the loop ends.
 *
 * With `maxHeads`, a call stops after that many work units (heads evaluated, decisions diagnosed
 * again) and answers `more: true`; the next call continues the same cycle (same cycle number:
 * its victims still wait for the next one; time windows are looked at only when a cycle starts)
 * from the next head of the same pass. With nothing happening between the calls, the slices'
 * admissions, preemptions and pending decisions, concatenated, are exactly those of one unsliced
 * cycle (test/core/scheduling/sliced-cycle.test.ts). Each slice reads the clock: its admissions carry its
 * time.
 */
export function cycle(core: CoreState, opts: CycleOptions = {}): CycleResult {
  const now = core.clock.now();
  const budget =
    opts.maxHeads !== undefined && Number.isFinite(opts.maxHeads)
      ? Math.max(1, Math.floor(opts.maxHeads))
      : Number.POSITIVE_INFINITY;
  let run = core.cycleRun;
  if (!run) {
    core.cycleNo++;
    prepareCycle(core, now);
    run = { heads: [], next: 0, pending: new Map(), refresh: null, refreshNext: 0, preempted: [] };
    core.cycleRun = run;
  }
  const result: CycleResult = { at: now, admitted: [], preempted: [], pending: [], more: true };
  // Reclaims asked since the last call (Scheduler.reclaim) come first, in every call of a sliced cycle.
  applyReclaims(core, now, result.preempted);
  let work = 0;
  while (run.refresh === null) {
    if (run.next >= run.heads.length) {
      run.heads = core.active.size > 0 ? takeHeads(core, now) : [];
      run.next = 0;
      if (run.heads.length === 0) {
        run.refresh = [...run.pending.values()];
        break;
      }
      orderHeads(run.heads);
    }
    if (work >= budget) return sliceEnd(run, result);
    if (tryHead(core, run.heads[run.next++]!.job, now, result, run.pending)) work++;
  }
  for (; run.refreshNext < run.refresh.length; run.refreshNext++, work++) {
    if (work >= budget) return sliceEnd(run, result);
    result.pending.push(refreshDecision(core, run.refresh[run.refreshNext]!));
  }
  sliceEnd(run, result);
  core.cycleRun = null;
  holdVictims(core, run.preempted);
  result.more = false;
  return result;
}

/** The end of one call: its victims join the cycle's (holds apply to all of them when the cycle ends). */
function sliceEnd(run: CycleRun, result: CycleResult): CycleResult {
  for (const p of result.preempted) run.preempted.push(p);
  return result;
}

/** Before the passes: time windows that opened or closed, the naive rescan (baseline only), and the queues
 * holding last cycle's victims.
 */
function prepareCycle(core: CoreState, now: number): void {
  refreshWindows(core, now);
  prepareReservations(core, now);
  if (core.rescanEveryCycle) rescanAll(core);
  liftReclaimHolds(core, now);
  for (const q of core.deferred) {
    const avail = new Map<string, number[]>();
    wakeQueueIf(core, q, (j) => needMet(j, avail));
  }
  core.deferred.clear();
}

/** Phase 1, heads: the best pending job of every active queue, skipping (re-parking) those that cannot gain
 * now.
 */
function takeHeads(core: CoreState, now: number): Head[] {
  const heads: Head[] = [];
  for (const q of [...core.active]) {
    let h = q.heap.peek();
    while (h && q.strategy !== 'StrictFIFO') {
      if (h.preemptedCycle === core.cycleNo) {
        // Evicted in this cycle: it waits for the next one (the caller is suspending it).
        park(core, h, null);
      } else if (stillShort(core, h)) {
        // Woken by a release that a job ahead already took: re-park it untried, here rather
        // than one pass per job, so a burst of such jobs costs one loop, not a pass each.
        park(core, h, null, true);
      } else break;
      h = q.heap.peek();
    }
    if (!h || h.preemptedCycle === core.cycleNo) {
      core.active.delete(q);
      if (h) q.blocked = true;
      continue;
    }
    heads.push({
      job: h,
      share: agedShare(core, h, now, core.fairSharing ? weightedShare(q) : 0),
      borrow: core.fairSharing ? 0 : headBorrows(h) ? 1 : 0,
      hist: core.halfLife !== null ? historyAt(core, q, now) / Math.max(q.weight, 1e-9) : 0,
    });
  }
  return heads;
}

/** Phase 2, order: lowest weighted share (or non-borrowing first), then decayed usage, higher priority,
 * earlier submit, id.
 */
function orderHeads(heads: Head[]): void {
  heads.sort(
    (a, b) =>
      a.share - b.share ||
      a.borrow - b.borrow ||
      a.hist - b.hist ||
      b.job.priority - a.job.priority ||
      a.job.spec.submitTime - b.job.spec.submitTime ||
      (a.job.spec.id < b.job.spec.id ? -1 : 1),
  );
}

/**
 * Phases 3-5 for one head, against the state earlier heads left: assign (Fit → Borrow, gang
 * minimum) then preempt (nominate.ts), then commit (admit.ts) or park/block it with its reason.
 */
function tryHead(
  core: CoreState,
  job: JobState,
  now: number,
  result: CycleResult,
  pending: Map<string, PendingDecision>,
): boolean {
  const q = job.queue;
  if (job.status !== 'pending' || q.heap.peek() !== job || q.blocked) return false;
  if (stillShort(core, job)) {
    // Woken by a release that someone ahead already took: still short of what it needs.
    park(core, job, null, true);
    return false;
  }
  const mark = core.trail.length;
  const known = knownPreemptFail(core, job);
  const res = evaluate(core, job, known === undefined);
  if (!res.ok) {
    if (known) job.releasable = known;
    else if (job.releasable) rememberPreemptFail(core, job);
  }
  if (res.ok) {
    result.admitted.push(commit(core, job, res, mark, now, result.preempted));
    admittedWithReservation(core, job);
    pending.delete(job.spec.id);
    return true;
  }
  rollback(core, mark);
  parkOrBlock(core, job, res, pending);
  reserveIfDue(core, job, res, now);
  return true;
}

/** Phase 6, requeue: the head gets its structured reason; BestEffortFIFO parks it, StrictFIFO blocks its
 * queue.
 */
function parkOrBlock(core: CoreState, job: JobState, res: Fail, pending: Map<string, PendingDecision>): void {
  const q = job.queue;
  const d = decisionFrom(job, res);
  job.decision = d;
  job.decisionVersion = core.stateVersion;
  pending.set(job.spec.id, d);
  if (q.strategy === 'StrictFIFO') {
    q.blocked = true;
    core.active.delete(q);
    for (const f of res.waitFlavors) waitOn(core, f, q);
  } else {
    park(core, job, res);
  }
}

/**
 * A decision made before later admissions of this cycle may no longer be true: diagnose it
 * again against the state the cycle leaves (only those made at an older state version). Every
 * job of the list is still pending here unless something happened between two slices (a cancel,
 * a hold): then its decision is as made.
 */
function refreshDecision(core: CoreState, d: PendingDecision): PendingDecision {
  const j = core.jobs.get(d.jobId);
  return j && j.status === 'pending' && !j.held ? currentDecision(core, j) : d;
}
