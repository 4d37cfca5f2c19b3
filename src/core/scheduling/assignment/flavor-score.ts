// Flavor choice for one pod set: which flavors compete, and in which tiers (Kueue's flavorFungibility).
// A pod set that does not pin flavors (it uses its queue's list) is placed on every flavor of a tier
// and goes where the placement scores best (nodes.ts `scoreLess`: fragmentation increase, then
// best-fit), declaration order breaking ties; a pinned list keeps its order (first that places wins).
import type { CoreState, JobState } from '../state.js';
import { BORROW, FIT, nominalOnly } from './quota-mode.js';

export interface FlavorOption {
  f: string;
  pref: number;
  mode: number;
}

/** Does this pod set choose its flavor by score (unpinned, more than one option, the core's option on)? */
export function choosesByScore(core: CoreState, job: JobState, podSet: number): boolean {
  return core.flavorByScore && job.spec.podSets[podSet]?.flavors === undefined;
}

/**
 * The options (already filtered to mode ≤ Borrow) in tiers tried in turn; within a tier the best
 * score wins when `byScore`, else the first that places. `whenCanBorrow: TryNextFlavor` (default):
 * flavors that fit within quota form the first tier, those that need borrowing the second;
 * `Borrow`: one tier, borrowing is no worse than fitting.
 */
export function flavorTiers<T extends FlavorOption>(
  job: JobState,
  options: readonly T[],
  byScore: boolean,
): T[][] {
  const borrowCompetes = job.queue.spec.flavorFungibility?.whenCanBorrow === 'Borrow';
  const byPref = [...options].sort((a, b) => a.pref - b.pref);
  if (!byScore)
    return borrowCompetes
      ? byPref.map((o) => [o])
      : [...options].sort((a, b) => a.mode - b.mode || a.pref - b.pref).map((o) => [o]);
  if (borrowCompetes) return byPref.length > 0 ? [byPref] : [];
  return [byPref.filter((o) => o.mode === FIT), byPref.filter((o) => o.mode === BORROW)].filter(
    (t) => t.length > 0,
  );
}

/** After a plan's charge: does the job's queue now use more than its nominal on a flavor the plan charged?
 * Never for a job that is never preempted (it is within the nominal by its queue's guaranteed usage).
 */
export function planBorrows(job: JobState, usage: Map<string, number[]>): boolean {
  if (nominalOnly(job)) return false;
  const q = job.queue;
  for (const [f, v] of usage) {
    const fq = q.node.flavors.get(f);
    if (!fq) continue;
    for (let r = 0; r < v.length; r++)
      if ((v[r] as number) > 0 && fq.declared[r] && (fq.usage[r] as number) > (fq.nominal[r] as number))
        return true;
  }
  return false;
}
