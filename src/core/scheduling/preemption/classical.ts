// Kueue's classical preemption rules (no fair sharing): which other queues may lose jobs, and the
// staged search (borrowWithinCohort; reclaim without borrowing while under nominal; own queue).
import type { CoreState, JobState, QueueState } from '../state.js';
import type { Candidate } from './candidates.js';
import { minimalSet } from './minimal-set.js';

/**
 * Without fair sharing, other queues may lose jobs to this one only when it reclaims while under
 * its nominal (reclaimWithinCohort), or with borrowWithinCohort. Decided once per search.
 */
export function classicalOtherQueues(q: QueueState, underNominal: boolean): (v: QueueState) => boolean {
  const others = (underNominal && q.reclaim !== 'Never') || q.borrowPolicy !== 'Never';
  return () => others;
}

/**
 * Kueue's stages when candidates come from other queues: with borrowWithinCohort, reclaimable or
 * borrow-allowed candidates (borrowing allowed); otherwise reclaim without borrowing while under
 * nominal, then the own queue alone with borrowing.
 */
export function classicalSearch(
  core: CoreState,
  job: JobState,
  request: Map<string, number[]>,
  need: [string, number][],
  ordered: Candidate[],
  own: Candidate[],
  underNominal: boolean,
  fits: (allowBorrowing: boolean) => boolean,
  taken: Set<JobState>,
): JobState[] | null {
  const q = job.queue;
  if (q.borrowPolicy === 'LowerPriority') {
    const cs = underNominal
      ? ordered.filter((c) => !c.other || c.reclaimOk || c.borrowOk)
      : ordered.filter((c) => !c.other || c.borrowOk);
    return minimalSet(core, job, request, need, cs, true, fits, taken);
  }
  let found: JobState[] | null = null;
  if (underNominal)
    found = minimalSet(
      core,
      job,
      request,
      need,
      ordered.filter((c) => !c.other || c.reclaimOk),
      false,
      fits,
      taken,
    );
  if (!found && own.length > 0) found = minimalSet(core, job, request, need, own, true, fits, taken);
  return found;
}
