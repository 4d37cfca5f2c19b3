// explain(): a job's reason, shortfall, positions in its queue and cohort, and ETA; the cached
// view of a tree's pending jobs in admission order.
import { currentDecision } from './assignment/decision.js';
import { headBorrows } from './assignment/quota-mode.js';
import { SchedulerInputError } from './errors.js';
import { etaOf, expectedEnd } from './eta-tree.js';
import { holdInfo, holdMessage, matchingHold } from './holds.js';
import { weightedShare } from './queue-usage.js';
import type { QuotaNode } from './quota.js';
import { agedShare, keptOffReserved, reservationOf } from './reservation.js';
import { type CoreState, type JobState, type QueueState, queueLess, type TreeView } from './state.js';
import type { Admission, AdmissionHold, JobExplanation } from './types.js';

export function explain(core: CoreState, jobId: string): JobExplanation {
  const j = core.jobs.get(jobId);
  if (!j) throw new SchedulerInputError('UNKNOWN_JOB', `unknown job ${jobId}`);
  const base: JobExplanation = {
    jobId,
    queue: j.queue.spec.name,
    state: j.status,
    preemptions: j.preemptions,
  };
  if (j.lastPreemption) base.lastPreemption = j.lastPreemption;
  if (j.status === 'admitted') {
    base.admission = j.admission as Admission;
    base.expectedEnd = expectedEnd(j);
    return base;
  }
  if (j.held && j.reclaimHoldUntil !== null) {
    // Reclaimed (reclaim.ts): held out of every pending list until its hold ends.
    const until = j.reclaimHoldUntil;
    const why = j.disruptionHold
      ? 'disrupted by the cluster'
      : `reclaimed (${j.lastPreemption?.reason ?? 'idle'})`;
    base.reason = 'ReclaimHold';
    base.message =
      until > core.clock.now()
        ? `${why}: not admitted again before ${new Date(until).toISOString()}`
        : `${why}: its hold ended at ${new Date(until).toISOString()}; it rejoins its queue at the next admission cycle`;
    base.reclaimHoldUntil = until;
    base.eta = null;
    base.etaUnknownReason = 'ReclaimHold';
    return base;
  }
  if (j.held) {
    // Out of every pending list: no position, and no ETA until the hold is lifted.
    const h = matchingHold(core, j.spec) as AdmissionHold;
    base.reason = 'BudgetExhausted';
    base.message = holdMessage(h);
    base.hold = holdInfo(h);
    if (j.preemptedBy) base.preemptedBy = { ...j.preemptedBy };
    base.eta = null;
    base.etaUnknownReason = 'BudgetExhausted';
    return base;
  }
  const q = j.queue;
  const view = treeView(core, q.root);
  base.queuePending = q.heap.size + q.parked.size;
  base.positionInQueue = view.queuePos.get(j) ?? base.queuePending;
  const head = q.heap.peek();
  if (q.strategy === 'StrictFIFO' && q.blocked && head && head !== j) {
    base.reason = 'StrictFIFOBlocked';
    base.message = `StrictFIFO queue ${q.spec.name}: waiting behind the head of the queue, which cannot be admitted yet`;
    base.blockedBy = head.spec.id;
  } else if (j.decision) {
    const d = currentDecision(core, j);
    base.reason = d.reason;
    base.message = d.message;
    if (d.shortfall) base.shortfall = d.shortfall;
    if (d.nodeFit) base.nodeFit = d.nodeFit;
  } else {
    base.reason = 'NotYetEvaluated';
    base.message = 'waiting for the next admission cycle';
  }
  if (j.preemptedBy) base.preemptedBy = { ...j.preemptedBy };
  explainReservation(core, j, base);
  base.positionInCohort = (view.index.get(j) ?? view.order.length - 1) + 1;
  base.cohortPending = view.order.length;
  if (base.reason === 'ExceedsMaxQuota' || base.reason === 'WindowClosed') {
    base.eta = null;
    base.etaUnknownReason = base.reason === 'ExceedsMaxQuota' ? 'NeverFits' : 'WindowClosed';
  } else {
    const r = etaOf(core, view, j);
    base.eta = r.at === null ? null : Math.max(core.clock.now(), r.at);
    if (r.why) base.etaUnknownReason = r.why;
  }
  return base;
}

/** Bounded tails (reservation.ts): the nodes reserved for this job, or the reserved nodes it is kept off. */
function explainReservation(core: CoreState, j: JobState, base: JobExplanation): void {
  const r = reservationOf(core, j);
  if (r) {
    base.reservation = { flavor: r.flavor, nodes: r.nodes.map((n) => n.spec.name), start: r.start };
    base.message = `${base.message ?? ''}; it has waited long: ${r.nodes.length} node(s) of ${r.flavor} are reserved for it from ${new Date(r.start).toISOString()} (jobs that would borrow there must end by then)`;
    return;
  }
  if (base.reason !== 'NoNodeFits') return;
  const off = keptOffReserved(core, j, [...new Set(j.podSets.flatMap((p) => p.flavors))]);
  if (off) base.keptOffReserved = off;
}

export function pendingOf(q: QueueState): JobState[] {
  return [...q.heap.values(), ...q.parked];
}

/**
 * The tree's pending jobs in admission order, cached until running jobs, quotas, nodes or the
 * pending set change (explain runs per job per request: this keeps it a lookup).
 */
export function treeView(core: CoreState, root: QuotaNode): TreeView {
  const cur = core.treeViews.get(root);
  if (cur && cur.sv === core.stateVersion && cur.pv === core.pendingVersion) return cur;
  const order = cohortOrder(core, root);
  const index = new Map<JobState, number>();
  const queuePos = new Map<JobState, number>();
  const perQueue = new Map<QueueState, number>();
  order.forEach((j, i) => {
    index.set(j, i);
    const n = (perQueue.get(j.queue) ?? 0) + 1;
    perQueue.set(j.queue, n);
    queuePos.set(j, n);
  });
  const view: TreeView = {
    sv: core.stateVersion,
    pv: core.pendingVersion,
    order,
    index,
    queuePos,
    etas: null,
  };
  core.treeViews.set(root, view);
  return view;
}

/** Queues' pending lists merged by (queue share — or non-borrowing first without fair sharing —, priority,
 * submit, id).
 */
export function cohortOrder(core: CoreState, root: QuotaNode): JobState[] {
  const lists = (core.treeQueues.get(root) ?? []).map((q) => {
    const jobs = pendingOf(q).sort((a, b) => (queueLess(a, b) ? -1 : 1));
    return { q, jobs, i: 0, share: core.fairSharing ? weightedShare(q) : 0 };
  });
  const order: JobState[] = [];
  const now = core.clock.now();
  for (;;) {
    let best: (typeof lists)[number] | null = null;
    for (const l of lists) {
      const h = l.jobs[l.i];
      if (!h) continue;
      if (!best) {
        best = l;
        continue;
      }
      const b = best.jobs[best.i] as JobState;
      // Aging (reservation.ts): a head pending long goes first, as in the cycle's order phase.
      const ka = [agedShare(core, h, now, l.share), core.fairSharing ? 0 : Number(headBorrows(h))];
      const kb = [agedShare(core, b, now, best.share), core.fairSharing ? 0 : Number(headBorrows(b))];
      if (ka[0]! < kb[0]! || (ka[0] === kb[0] && (ka[1]! < kb[1]! || (ka[1] === kb[1] && queueLess(h, b)))))
        best = l;
    }
    if (!best) break;
    order.push(best.jobs[best.i++] as JobState);
  }
  return order;
}
