// Admission holds (a spent hard budget): matching pending jobs wait in `CoreState.held`, out of their
// queue's heap, parked set, positions and pending shapes, as if withdrawn; when no hold matches them
// any more they rejoin their queue exactly as a submit would. So a hold is never a preemptor, never
// a head, and lifting it costs the rest of the system nothing it would not pay for a submit.
import { SchedulerInputError } from './errors.js';
import { joinQueue, withdraw } from './queueing.js';
import type { CoreState, JobState } from './state.js';
import type { AdmissionHold, HoldInfo, JobSpec, Preemption } from './types.js';

const holdKey = (scope: AdmissionHold['scope'], id: string): string => `${scope}:${id}`;

/** The hold that keeps this spec from admission (tenant before project), or null. */
export function matchingHold(core: CoreState, spec: JobSpec): AdmissionHold | null {
  if (core.holds.size === 0) return null;
  const t = core.holds.get(holdKey('tenant', spec.tenant));
  if (t && !t.exemptPriorityClasses.includes(spec.priorityClass)) return t;
  if (spec.project === undefined) return null;
  const p = core.holds.get(holdKey('project', spec.project));
  if (p && !p.exemptPriorityClasses.includes(spec.priorityClass)) return p;
  return null;
}

export function holdInfo(h: AdmissionHold): HoldInfo {
  return {
    scope: h.scope,
    id: h.id,
    spent: h.budget.spent,
    limit: h.budget.limit,
    currency: h.budget.currency,
    period: h.budget.period,
  };
}

const money = new Intl.NumberFormat('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });

/** Plain text with the numbers (no job id): what the job waits for and until when. */
export function holdMessage(h: AdmissionHold): string {
  const b = h.budget;
  return (
    `The ${h.scope}'s monthly budget is exhausted: ${money.format(b.spent)} of ${money.format(b.limit)} ${b.currency} spent in ${b.period}; ` +
    'jobs of this priority class wait until it is raised or the month ends'
  );
}

/**
 * Replaces the whole set of holds. Newly matching pending jobs leave their queues (in submission
 * order), then held jobs no hold matches any more rejoin theirs (in the order they were held).
 * When only the numbers change (same scopes, ids and exempt classes) no job moves.
 */
export function setAdmissionHolds(core: CoreState, holds: AdmissionHold[]): void {
  const next = new Map<string, AdmissionHold>();
  for (const h of holds) {
    if ((h.scope !== 'tenant' && h.scope !== 'project') || typeof h.id !== 'string' || h.id === '')
      throw new SchedulerInputError(
        'INVALID_SPEC',
        `admission hold: scope must be 'tenant' or 'project' with an id`,
      );
    if (!Array.isArray(h.exemptPriorityClasses) || !h.budget)
      throw new SchedulerInputError(
        'INVALID_SPEC',
        `admission hold ${h.scope} ${h.id}: exemptPriorityClasses and budget are required`,
      );
    const key = holdKey(h.scope, h.id);
    if (next.has(key))
      throw new SchedulerInputError('INVALID_SPEC', `admission hold ${h.scope} ${h.id} given twice`);
    const { spent, limit, currency, period } = h.budget;
    next.set(key, {
      scope: h.scope,
      id: h.id,
      exemptPriorityClasses: [...h.exemptPriorityClasses],
      budget: { spent, limit, currency, period },
    });
  }
  const signature = JSON.stringify(
    [...next]
      .map(([k, h]) => [k, [...h.exemptPriorityClasses].sort()])
      .sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
  );
  core.holds = next;
  if (signature === core.holdsSignature) return;
  core.holdsSignature = signature;
  for (const j of core.jobs.values())
    if (j.status === 'pending' && !j.held && matchingHold(core, j.spec)) holdPending(core, j);
  // A job under a reclaim hold (reclaim.ts) stays held until that hold ends.
  for (const j of [...core.held])
    if (!matchingHold(core, j.spec) && j.reclaimHoldUntil === null) {
      unhold(core, j);
      joinQueue(core, j);
    }
}

/** After a cycle: its victims went back to pending; those a hold matches leave their queues now (not
 * mid-cycle: a victim is not retried in the cycle that evicted it anyway).
 */
export function holdVictims(core: CoreState, preempted: Preemption[]): void {
  if (core.holds.size === 0) return;
  for (const p of preempted) {
    const v = core.jobs.get(p.victimId);
    if (v && v.status === 'pending' && !v.held && matchingHold(core, v.spec)) holdPending(core, v);
  }
}

/** A job just submitted under a matching hold: straight into the held set. */
export function holdNew(core: CoreState, j: JobState): void {
  j.held = true;
  core.held.add(j);
}

export function unhold(core: CoreState, j: JobState): void {
  core.held.delete(j);
  j.held = false;
  core.reclaimHeld.delete(j);
  j.reclaimHoldUntil = null;
}

/** A pending job in its queue's lists leaves them (as a cancel would) and is held, with what it knew reset
 * as for a new job.
 */
function holdPending(core: CoreState, j: JobState): void {
  withdraw(core, j);
  j.decision = null;
  j.decisionVersion = -1;
  j.parkKind = 'any';
  j.parkNeeds = [];
  j.wakeNodes = null;
  j.releasable = null;
  holdNew(core, j);
}
