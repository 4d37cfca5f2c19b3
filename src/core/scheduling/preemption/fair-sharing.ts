// The fair-sharing preemption rules: which queues may lose jobs (share above the preemptor's after
// admission) and, per victim, no ping-pong (the preemptor's share stays below the victim queue's).
import { weightedShare } from '../queue-usage.js';
import type { CoreState, JobState, QueueState } from '../state.js';
import { rollback, tCharge, tUncharge } from '../trail.js';

/**
 * No ping-pong under fair sharing: after the move the preemptor's share must be ≤ the victim
 * queue's share, and strictly below the victim queue's share before it (so equal shares never
 * trade jobs back and forth).
 */
export function fairShareAllows(
  core: CoreState,
  q: QueueState,
  request: Map<string, number[]>,
  victim: JobState,
): boolean {
  const mark = core.trail.length;
  const vBefore = weightedShare(victim.queue);
  tUncharge(core, victim.queue, victim.usage);
  const vAfter = weightedShare(victim.queue);
  tCharge(core, q, request);
  const pAfter = weightedShare(q);
  rollback(core, mark);
  return pAfter <= vAfter && pAfter < vBefore;
}

/**
 * With fair sharing, only queues whose weighted share is above the preemptor's share after
 * admission can lose jobs to it. Decided once per search (a trial charge, rolled back).
 */
export function fairShareOtherQueues(
  core: CoreState,
  q: QueueState,
  request: Map<string, number[]>,
): (v: QueueState) => boolean {
  const m = core.trail.length;
  tCharge(core, q, request);
  const pAfter = weightedShare(q);
  rollback(core, m);
  return (v) => weightedShare(v) > pAfter;
}
