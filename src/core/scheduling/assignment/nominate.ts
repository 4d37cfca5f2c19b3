// Nomination of one job: direct assignment, then the gang minimum, then the preemption search.
import { preempting } from '../preemption/preemptor.js';
import type { CoreState, JobState } from '../state.js';
import { rollback } from '../trail.js';
import { assignDirect } from './direct.js';
import { planBorrows } from './flavor-score.js';
import { type Fail, type Plan, planFrom } from './plan.js';

/**
 * The full decision for one job (Kueue's nominate): Fit → Borrow on the flavors in preference
 * order (direct.ts), else the largest gang that fits, else a preemption search (preemption/).
 * On success the trial changes stay applied (the caller commits or rolls back).
 */
export function evaluate(core: CoreState, job: JobState, allowPreemption: boolean): Plan | Fail {
  job.releasable = null;
  const full = job.podSets.map((p) => p.count);
  const mark = core.trail.length;
  const direct = assignDirect(core, job, full);
  if (direct.ok) {
    // whenCanPreempt: Preempt — reclaiming within nominal beats borrowing (Kueue's flavorFungibility)
    if (
      allowPreemption &&
      job.queue.spec.flavorFungibility?.whenCanPreempt === 'Preempt' &&
      planBorrows(job, direct.usage)
    ) {
      rollback(core, mark);
      const p = preempting(core, job);
      if (p && !planBorrows(job, p.usage)) return p;
      rollback(core, mark);
      job.releasable = null;
      const again = assignDirect(core, job, full);
      if (again.ok) return planFrom(job, again.parts, again.usage, []);
      return again;
    }
    return planFrom(job, direct.parts, direct.usage, []);
  }
  const reduced = assignReducedGang(core, job);
  if (reduced) return reduced;
  if (
    allowPreemption &&
    !direct.reservedOff &&
    direct.reason !== 'ExceedsMaxQuota' &&
    direct.reason !== 'WindowClosed'
  ) {
    const p = preempting(core, job);
    if (p) return p;
  }
  return direct;
}

/**
 * Gang minimum: the largest reduction step (fewest pods taken off every pod set, never below its
 * minCount) that fits without preemption, by binary search. Null if none does or none may shrink.
 */
export function assignReducedGang(core: CoreState, job: JobState): Plan | null {
  const maxStep = Math.max(...job.podSets.map((p) => p.count - p.minCount));
  if (maxStep > 0) {
    let lo = 1;
    let hi = maxStep;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const counts = job.podSets.map((p) => Math.max(p.minCount, p.count - mid));
      const m = core.trail.length;
      const r = assignDirect(core, job, counts);
      if (r.ok) {
        found = mid;
        hi = mid - 1;
      } else lo = mid + 1;
      rollback(core, m);
    }
    if (found > 0) {
      const counts = job.podSets.map((p) => Math.max(p.minCount, p.count - found));
      const r = assignDirect(core, job, counts);
      if (r.ok) return planFrom(job, r.parts, r.usage, []);
    }
  }
  return null;
}
