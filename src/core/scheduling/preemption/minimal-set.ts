// The minimal victim set: take candidates until the job fits, then walk back and put back every
// victim not needed, the most expensive (GPU-time lost) first. Victims stay released on the trail.
import type { CoreState, JobState } from '../state.js';
import { rollback, tReadd, tRelease } from '../trail.js';
import { borrowingOnNeed, type Candidate } from './candidates.js';
import { fairShareAllows } from './fair-sharing.js';
import { lostGpuMs } from './lost-work.js';

/**
 * Take candidates in order until the job fits, then walk the chosen set back and put back every
 * victim whose release turns out not to be needed. The walk-back tries the victims that would lose
 * the most GPU-time first (ties: the last taken first, Kueue's backwards walk), so among the minimal
 * sets inside the taken one the search keeps a cheap one. The last one taken is always needed (the
 * set without it did not fit). Victims stay released on the trail.
 */
export function minimalSet(
  core: CoreState,
  job: JobState,
  request: Map<string, number[]>,
  need: [string, number][],
  cands: Candidate[],
  allowBorrowing: boolean,
  fits: (allowBorrowing: boolean) => boolean,
  taken?: Set<JobState>,
  shareRule = core.fairSharing,
): JobState[] | null {
  const q = job.queue;
  const mark = core.trail.length;
  const removed: JobState[] = [];
  for (const c of cands) {
    const v = c.job.queue;
    // borrowWithinCohort covers only victims at or below its threshold: once another queue's
    // job outside it is taken, the preemptor must fit without borrowing (as in Kueue; classical rule).
    if (c.other && !c.borrowOk && !core.fairSharing) allowBorrowing = false;
    // A queue is never pushed below its nominal by another queue's reclaim.
    if (v !== q && !borrowingOnNeed(v, request, need)) continue;
    // Fair sharing: no ping-pong between queues (fair-sharing.ts). Off (`shareRule`) for a reclaim that
    // leaves the preemptor's queue within its nominal (preemptor.ts, searchVictims).
    if (shareRule && v !== q && !fairShareAllows(core, q, request, c.job)) continue;
    tRelease(core, c.job);
    removed.push(c.job);
    taken?.add(c.job);
    if (!fits(allowBorrowing)) continue;
    const targets: JobState[] = [c.job];
    const now = core.clock.now();
    const walk = removed.slice(0, -1).map((j, i) => ({ j, i, lost: lostGpuMs(j, now) }));
    walk.sort((a, b) => b.lost - a.lost || b.i - a.i);
    for (const { j: back } of walk) {
      tReadd(core, back);
      if (fits(allowBorrowing)) continue;
      tRelease(core, back);
      targets.push(back);
    }
    return targets;
  }
  rollback(core, mark);
  return null;
}
