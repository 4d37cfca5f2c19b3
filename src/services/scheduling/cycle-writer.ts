import { type EntityManager, LockMode } from '@mikro-orm/core';
import { reclaimNotice } from '../../core/governance/index.js';
import type { Admission, CycleResult, Scheduler } from '../../core/scheduling/index.js';
import { insertRows, updateRows } from '../../persistence/bound-sql.js';
import { Job } from '../../persistence/jobs/index.js';
import { findPlain } from '../../persistence/plain-rows.js';
import { jobEventRow, outboxRow, recordJobEvent, recordOutbox } from '../../persistence/scheduling/index.js';
import type { Metering } from '../metering/index.js';
import type { LeaderEpochs } from './leader-epoch.js';
import { reclaimGraceSeconds } from './reclaim-grace.js';

export interface FencedWriter {
  em: EntityManager;
  dialect: 'sqlite' | 'postgresql';
  epochs: LeaderEpochs;
  /** The epoch this replica took the leadership with. */
  epoch: number;
  /** Charges a hold that ends (or is checkpointed) in the same transaction as the change. */
  metering: Metering;
}

/**
 * One fenced scheduling write: a transaction that first checks, under the epoch row's lock,
 * that this replica still leads (StaleLeaderError otherwise, and nothing is written), then
 * runs `work` and flushes. Job rows read with `jobLock` stay locked until commit where the
 * database has row locks (SQLite serialises writers anyway).
 */
export async function writeFenced(
  writer: FencedWriter,
  work: (em: EntityManager, jobLock: { lockMode?: LockMode.PESSIMISTIC_WRITE }) => Promise<void>,
): Promise<void> {
  await writer.em.transactional(async (em) => {
    await writer.epochs.assertCurrent(em, writer.epoch);
    await work(em, writer.dialect === 'postgresql' ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {});
    await em.flush();
  });
}

/**
 * The core's GPU-milliseconds lost by a victim (in the backend's clock) → declared GPU-hours, as the
 * ledger counts them (× timeScale); null when the core did not say.
 */
export function lostGpuHoursOf(lostGpuMs: number | undefined, timeScale: number): number | null {
  return lostGpuMs === undefined || !Number.isFinite(lostGpuMs) ? null : (lostGpuMs * timeScale) / 3_600_000;
}

/** The job no longer holds an admission (preempted, or requeued after a restore conflict). */
export function backToPending(job: Job): void {
  job.state = 'PENDING';
  job.admission = null;
  job.admittedAt = null;
  job.startedAt = null;
  // Charged by the caller before this (Metering.charge); nothing more is open.
  job.meteredFrom = null;
}

/**
 * Marks a preempted job's run as stopping from `at` (its admission kept for the charge), when the
 * backend's runs stop over a grace; a run still stopping from an earlier preemption is charged
 * up to now first.
 */
async function stopping(
  writer: FencedWriter,
  em: EntityManager,
  job: Job,
  at: number,
  policyGraceSeconds: number | undefined,
): Promise<void> {
  const backendGrace = writer.metering.settings.stopGraceSeconds;
  if (backendGrace === undefined || !job.admission || job.startedAt == null) return;
  if (job.stoppingSince != null) await writer.metering.chargeStopping(em, [job], at);
  job.stoppingSince = at;
  job.stoppingUntil = at + (policyGraceSeconds ?? backendGrace) * 1000;
  job.stoppingAdmission = job.admission;
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
export async function persistCycle(
  writer: FencedWriter,
  core: Scheduler,
  result: CycleResult,
): Promise<string[]> {
  if (result.preempted.length === 0) return persistAdmissions(writer, core, result);
  const skipped: string[] = [];
  const preemptionOf = new Map(result.preempted.map((p) => [p.victimId, p]));
  await writeFenced(writer, async (em, jobLock) => {
    const ids = [
      ...new Set([
        ...result.preempted.map((p) => p.victimId),
        ...result.admitted.map((a) => a.jobId),
        ...result.preempted.map((p) => p.preemptorId).filter((id) => id !== ''),
      ]),
    ]; // '': a governance reclaim has no preemptor (and '' is no uuid)
    const jobs = new Map(
      (await em.find(Job, { id: { $in: ids } }, { populate: ['queue'], ...jobLock })).map((j) => [j.id, j]),
    );
    const at = new Date(result.at);
    const graces = await reclaimGraceSeconds(
      em,
      result.preempted.map((p) => jobs.get(p.victimId)).filter((j): j is Job => j !== undefined),
    );
    const touched = [
      ...new Set([...result.preempted.map((p) => p.victimId), ...result.admitted.map((a) => a.jobId)]),
    ];
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
        // Charged for the time it held GPUs: up to the preemption, then (on a backend whose pods stop
        // over a grace) until the backend reports them gone, at most for the grace.
        await writer.metering.charge(em, [job], result.at, 'preempted');
        await stopping(writer, em, job, result.at, graces.get(job.id));
        backToPending(job);
        job.preemptionCount += 1;
        const lostGpuHours = lostGpuHoursOf(preemption.lostGpuMs, writer.metering.settings.timeScale);
        // A governance reclaim ('idle', 'not-running') has no preemptor: its events carry the flag's numbers
        // instead.
        const notice = reclaimNotice(job.governanceFlag, preemption.reason);
        // The stop signal's grace, when the queue's policy sets it and the backend's pods stop over
        // one: the time the job has to checkpoint.
        const graceSeconds =
          writer.metering.settings.stopGraceSeconds === undefined ? undefined : graces.get(job.id);
        const said = notice?.message ?? `Preempted (${preemption.reason}) to make room for another job`;
        const message =
          graceSeconds === undefined
            ? said
            : `${said.replace(/\.$/, '')}; its pods get ${graceSeconds} s to stop and checkpoint (its queue's policy).`;
        recordJobEvent(em, job, 'PREEMPTED', at, preemption.reason, message, {
          ...(notice
            ? { preemptorJobId: null, lostGpuHours, flag: notice.flag }
            : { preemptorJobId: preemption.preemptorId, lostGpuHours }),
          ...(graceSeconds === undefined ? {} : { graceSeconds }),
        });
        recordOutbox(em, 'job.preempted', {
          jobId: job.id,
          tenantId: job.tenant.id,
          queueId: job.queue.id,
          reason: preemption.reason,
          preemptorJobId: preemption.preemptorId,
          preemptorTenantId: preemptor?.tenant.id ?? null,
          preemptorQueueId: preemptor?.queue.id ?? null,
          lostGpuHours,
          ...(notice ? { message, flag: notice.flag } : graceSeconds === undefined ? {} : { message }),
          at: result.at,
          epoch: writer.epoch,
        });
      }
      if (final && job.state === 'PENDING') {
        job.state = 'ADMITTED';
        job.admission = final;
        job.admittedAt = at;
        recordJobEvent(
          em,
          job,
          'ADMITTED',
          at,
          final.mode,
          final.borrowed ? 'Admitted, borrowing quota from its cohort' : 'Admitted within its quota',
          { placements: final.podSets },
        );
        // The epoch says which leader made the decision (audits, the split-brain test).
        recordOutbox(em, 'job.admitted', {
          jobId: job.id,
          tenantId: job.tenant.id,
          queueId: job.queue.id,
          borrowed: final.borrowed,
          at: result.at,
          epoch: writer.epoch,
        });
      }
    }
  });
  return skipped;
}

/**
 * A cycle that only admitted (the common case): no entity is loaded or flushed. The admitted jobs
 * are one multi-row UPDATE guarded by each job's state, so a job cancelled meanwhile changes
 * nothing (and a row lock on PostgreSQL is taken by the UPDATE itself); the job and outbox rows
 * are one multi-row INSERT each. Same rows and same order as the general path above.
 */
async function persistAdmissions(
  writer: FencedWriter,
  core: Scheduler,
  result: CycleResult,
): Promise<string[]> {
  const skipped: string[] = [];
  await writeFenced(writer, async (em) => {
    skipped.length = 0;
    const ids = [...new Set(result.admitted.map((a) => a.jobId))];
    const at = new Date(result.at);
    // Who owns each job (for the events' tenant and the outbox payload), without hydrating the rows.
    const owners = new Map(
      (await findPlain(em, Job, { id: ids }, { columns: ['id', 'state', 'tenant_id', 'queue_id'] })).map(
        (j) => [j.id, j] as const,
      ),
    );
    const events: Record<string, unknown>[] = [];
    const outbox: Record<string, unknown>[] = [];
    const admissions: { id: string; final: Admission; tenantId: string; queueId: string }[] = [];
    for (const id of ids) {
      const final = core.jobState(id) === 'admitted' ? core.admissionOf(id) : undefined;
      const owner = owners.get(id);
      if (!final || !owner) {
        if (final) skipped.push(id);
        continue;
      }
      admissions.push({ id, final, tenantId: owner.tenant.id, queueId: owner.queue.id });
    }
    // One UPDATE for the cycle's admissions, each guarded by its state (a job cancelled meanwhile is left alone).
    const updatedAt = new Date();
    const admitted = new Set(
      await updateRows(
        em,
        'Job',
        ['state', 'admission', 'admittedAt', 'updatedAt'],
        admissions.map((a) => ({ id: a.id, values: ['ADMITTED', a.final, at, updatedAt] })),
        { property: 'state', value: 'PENDING' },
      ),
    );
    const unchanged: string[] = [];
    for (const { id, final, tenantId, queueId } of admissions) {
      if (!admitted.has(id)) {
        unchanged.push(id);
        continue;
      }
      events.push(
        jobEventRow(
          id,
          tenantId,
          'ADMITTED',
          at,
          final.mode,
          final.borrowed ? 'Admitted, borrowing quota from its cohort' : 'Admitted within its quota',
          { placements: final.podSets },
        ),
      );
      // The epoch says which leader made the decision (audits, the split-brain test).
      outbox.push(
        outboxRow('job.admitted', {
          jobId: id,
          tenantId,
          queueId,
          borrowed: final.borrowed,
          at: result.at,
          epoch: writer.epoch,
        }),
      );
    }
    // Not pending any more: still admitted or running (nothing to write), or gone (cancelled, finished:
    // release it in the core).
    if (unchanged.length) {
      const now = await findPlain(em, Job, { id: unchanged }, { columns: ['id', 'state'] });
      const live = new Set(
        now.filter((j) => j.state === 'ADMITTED' || j.state === 'RUNNING').map((j) => j.id),
      );
      for (const id of unchanged) if (!live.has(id)) skipped.push(id);
    }
    await insertRows(em, 'JobEvent', events);
    await insertRows(em, 'OutboxEntry', outbox);
  });
  return skipped;
}
