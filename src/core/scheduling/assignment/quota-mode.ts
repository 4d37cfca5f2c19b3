// Quota mode of a request on one flavor (Kueue's flavorassigner): Fit → Borrow → Preempt →
// Preempt+Borrow, or no fit, from the quota tree arithmetic.
import { guaranteedRoom, neverPreempted } from '../guaranteed.js';
import { available, GPU, potentialAvailable, RESOURCE_COUNT } from '../quota.js';
import type { JobState, QueueState } from '../state.js';

// Assignment modes, ordered from best to worst.
export const FIT = 0;
export const BORROW = 1;
export const PREEMPT = 2;
export const PREEMPT_BORROW = 3;
export const NOFIT = 4;

/**
 * A job of a priority class that is never preempted (`preemptible: 'no'`) runs only within its
 * queue's nominal: admitted on borrowed quota, no reclaim could ever give the lender its nominal
 * back (its floor would be broken for as long as the job runs). The nominal is judged against the
 * queue's guaranteed usage (its never-preempted jobs, guaranteed.ts), not its whole usage: the
 * queue's preemptible jobs and what it lent are room the job takes back by preemption (its own
 * lower-priority jobs, whatever withinQueue says; reclaim of lent nominal by the queue's reclaim
 * policy). 'reclaim-only' jobs may borrow: reclaim takes them.
 */
export function nominalOnly(job: JobState): boolean {
  return neverPreempted(job);
}

/**
 * Quota mode of adding `vec` on flavor f to the queue, given what this job already charged
 * (`jobCharged`, counted in `available` but not in `potentialAvailable`). For a job that may not
 * borrow (`withinNominal`: callers pass `nominalOnly(job)`) there is no Borrow nor Preempt+Borrow:
 * beyond its nominal it is no fit; within what the nominal leaves beside the queue's guaranteed usage
 * (which counts what the job already charged on the trail) it fits when the quota is available now,
 * even if the queue's preemptible jobs take the queue above its nominal; otherwise Preempt — by
 * preemption when within that room (preemptor.ts), by waiting for guaranteed jobs to end when not.
 */
export function quotaMode(
  q: QueueState,
  f: string,
  vec: readonly number[],
  jobCharged: readonly number[] | undefined,
  withinNominal = false,
): { mode: number; r: number; requested: number } {
  const fq = q.node.flavors.get(f);
  if (!fq || !q.node.own.has(f)) return { mode: NOFIT, r: GPU, requested: vec[GPU] as number };
  let mode = FIT;
  let worstR = -1;
  for (let r = 0; r < RESOURCE_COUNT; r++) {
    const x = vec[r] as number;
    if (x === 0 || !fq.declared[r]) continue;
    const total = x + (jobCharged ? (jobCharged[r] as number) : 0);
    let m: number;
    if (total > potentialAvailable(q.node, f, r) || (withinNominal && total > (fq.nominal[r] as number)))
      m = NOFIT;
    else {
      const borrow = (fq.usage[r] as number) + x > (fq.nominal[r] as number);
      if (withinNominal) m = x <= guaranteedRoom(q, f, r) && x <= available(q.node, f, r) ? FIT : PREEMPT;
      else if (x <= available(q.node, f, r)) m = borrow ? BORROW : FIT;
      else m = borrow ? PREEMPT_BORROW : PREEMPT;
    }
    if (m > mode || worstR < 0) {
      mode = Math.max(mode, m);
      worstR = r;
    }
  }
  const r = worstR < 0 ? GPU : worstR;
  return { mode, r, requested: (vec[r] as number) + (jobCharged ? (jobCharged[r] as number) : 0) };
}

/** Would the head exceed its queue's nominal on its first preferred flavor? (Non-borrowing heads go first
 * without fair sharing, as in Kueue.) Never for a job that is never preempted: it runs only within the
 * nominal's room beside its queue's guaranteed usage.
 */
export function headBorrows(j: JobState): boolean {
  if (nominalOnly(j)) return false;
  const q = j.queue;
  for (const ps of j.podSets) {
    const f = ps.flavors[0] as string;
    const fq = q.node.flavors.get(f);
    if (!fq) continue;
    const vec = [ps.shape.gpu * ps.count, ps.shape.cpu * ps.count, ps.shape.mem * ps.count];
    for (let r = 0; r < RESOURCE_COUNT; r++)
      if (fq.declared[r] && (fq.usage[r] as number) + (vec[r] as number) > (fq.nominal[r] as number))
        return true;
  }
  return false;
}
