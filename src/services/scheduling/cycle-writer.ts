import { LockMode, type EntityManager } from '@mikro-orm/core';
import type { Scheduler } from '../../core/scheduler.js';
import type { CycleResult } from '../../core/types.js';
import { Job } from '../../persistence/scheduling-entities.js';
import type { LeaderEpochs } from './leader-epoch.js';
import { recordJobEvent, recordOutbox } from './outbox.js';

export interface FencedWriter {
  em: EntityManager;
  dialect: 'sqlite' | 'postgresql';
  epochs: LeaderEpochs;
  /** The epoch this replica took the leadership with. */
  epoch: number;
}

/**
 * Writes one cycle's decisions in one transaction: job rows, job events, outbox rows,
 * after checking (first, under the epoch row's lock) that this replica still leads.
 * Returns jobs the core admitted that the database no longer has pending (cancelled
 * meanwhile). Throws StaleLeaderError, having written nothing, when another replica leads.
 *
 * Within one cycle the core may admit a job and then preempt it, or preempt a running
 * job and admit it again elsewhere; so each job is written as the core holds it at the
 * end of the cycle, not by replaying the two lists one after the other.
 */
export async function persistCycle(writer: FencedWriter, core: Scheduler, result: CycleResult): Promise<string[]> {
  const skipped: string[] = [];
  const preemptionOf = new Map(result.preempted.map((p) => [p.victimId, p]));
  await writer.em.transactional(async (em) => {
    await writer.epochs.assertCurrent(em, writer.epoch);
    const ids = [...new Set([...result.preempted.map((p) => p.victimId), ...result.admitted.map((a) => a.jobId), ...result.preempted.map((p) => p.preemptorId)])];
    const jobs = new Map(
      (await em.find(Job, { id: { $in: ids } }, { populate: ['queue'], lockMode: writer.dialect === 'postgresql' ? LockMode.PESSIMISTIC_WRITE : undefined })).map((j) => [j.id, j]),
    );
    const at = new Date(result.at);
    const touched = [...new Set([...result.preempted.map((p) => p.victimId), ...result.admitted.map((a) => a.jobId)])];
    for (const id of touched) {
      const job = jobs.get(id);
      const final = core.jobState(id) === 'admitted' ? core.admissionOf(id) : undefined;
      const wasLive = job?.state === 'ADMITTED' || job?.state === 'RUNNING';
      if (!job || (!wasLive && job.state !== 'PENDING')) {
        // Gone from the database's point of view (cancelled, finished): release it in the core.
        if (final) skipped.push(id);
        continue;
      }
      const preemption = preemptionOf.get(id);
      const movedAway = wasLive && (!final || final.at !== job.admission?.at);
      if (movedAway && preemption) {
        const preemptor = jobs.get(preemption.preemptorId);
        job.state = 'PENDING';
        job.admission = null;
        job.admittedAt = null;
        job.startedAt = null;
        job.preemptionCount += 1;
        recordJobEvent(em, job, 'PREEMPTED', at, preemption.reason, `Preempted (${preemption.reason}) to make room for another job`, { preemptorJobId: preemption.preemptorId });
        recordOutbox(em, 'job.preempted', {
          jobId: job.id,
          tenantId: job.tenant.id,
          queueId: job.queue.id,
          reason: preemption.reason,
          preemptorJobId: preemption.preemptorId,
          preemptorTenantId: preemptor?.tenant.id ?? null,
          preemptorQueueId: preemptor?.queue.id ?? null,
          at: result.at,
          epoch: writer.epoch,
        });
      }
      if (final && job.state === 'PENDING') {
        job.state = 'ADMITTED';
        job.admission = final;
        job.admittedAt = at;
        recordJobEvent(em, job, 'ADMITTED', at, final.mode, final.borrowed ? 'Admitted, borrowing quota from its cohort' : 'Admitted within its quota', { placements: final.podSets });
        // The epoch says which leader made the decision (audits, the split-brain test).
        recordOutbox(em, 'job.admitted', { jobId: job.id, tenantId: job.tenant.id, queueId: job.queue.id, borrowed: final.borrowed, at: result.at, epoch: writer.epoch });
      }
    }
    await em.flush();
  });
  return skipped;
}
