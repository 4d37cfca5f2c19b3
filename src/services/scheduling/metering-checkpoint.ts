// The leader's metering checkpoint (LeaderSession.checkpoint): running jobs' open intervals written
// to the ledger while they run, not only when they end.
import { Job } from '../../persistence/jobs/index.js';
import type { Metering } from '../metering/index.js';
import { type FencedWriter, writeFenced } from './cycle-writer.js';

/** Jobs per checkpoint transaction. */
const CHECKPOINT_BATCH = 500;

/**
 * Charges every running job's open interval up to `now`, in fenced batches by job id: each batch's
 * rows and the jobs' new `meteredFrom` commit together. Stops early once `ended()` (the term is over).
 */
export async function chargeRunningJobs(
  writer: () => FencedWriter,
  metering: Metering,
  now: number,
  ended: () => boolean,
): Promise<void> {
  let after: string | null = null;
  for (;;) {
    let last: string | null = null;
    await writeFenced(writer(), async (em, jobLock) => {
      const jobs = await em.find(
        Job,
        after === null ? { state: 'RUNNING' } : { state: 'RUNNING', id: { $gt: after } },
        { orderBy: { id: 'asc' }, limit: CHECKPOINT_BATCH, populate: ['queue'], ...jobLock },
      );
      // Running since before metering existed (an upgrade): charged from its start.
      for (const job of jobs)
        if (job.meteredFrom == null && job.startedAt) job.meteredFrom = job.startedAt.getTime();
      await metering.charge(em, jobs, now, 'checkpoint');
      last = jobs.length === CHECKPOINT_BATCH ? jobs[jobs.length - 1]!.id : null;
    });
    if (ended() || last === null) break;
    after = last;
  }
  if (ended()) return;
  // Stopping runs past their grace: the cluster has killed their pods by now, whether or not the
  // backend said so (a report lost in a failover).
  await writeFenced(writer(), async (em, jobLock) => {
    const jobs = await em.find(Job, { stoppingUntil: { $lte: now } }, { populate: ['queue'], ...jobLock });
    await metering.chargeStopping(em, jobs, now);
  });
}
