// Pending decisions as clients see them, kept true: a stale one is diagnosed again against now.
import type { CoreState, JobState } from '../state.js';
import { rollback } from '../trail.js';
import type { PendingDecision } from '../types.js';
import { assignDirect } from './direct.js';
import type { Fail } from './plan.js';

export function decisionFrom(job: JobState, res: Fail): PendingDecision {
  const d: PendingDecision = {
    jobId: job.spec.id,
    queue: job.queue.spec.name,
    reason: res.reason,
    message: res.message,
  };
  if (res.shortfall) d.shortfall = res.shortfall;
  if (res.nodeFit) d.nodeFit = res.nodeFit;
  if (job.preemptedBy) d.preemptedBy = { ...job.preemptedBy };
  return d;
}

/**
 * The job's pending decision as of the current state: the stored one if nothing changed since it
 * was made, else diagnosed again (a trial assignment, rolled back) and stored with the version.
 */
export function currentDecision(core: CoreState, j: JobState): PendingDecision {
  if (j.decision && j.decisionVersion === core.stateVersion) return j.decision;
  const mark = core.trail.length;
  const res = assignDirect(
    core,
    j,
    j.podSets.map((p) => p.count),
  );
  rollback(core, mark);
  let d: PendingDecision;
  if (res.ok) {
    d = {
      jobId: j.spec.id,
      queue: j.queue.spec.name,
      reason: 'NotYetEvaluated',
      message: 'fits now; waits for the next admission cycle',
    };
    if (j.preemptedBy) d.preemptedBy = { ...j.preemptedBy };
  } else d = decisionFrom(j, res);
  j.decision = d;
  j.decisionVersion = core.stateVersion;
  return d;
}
