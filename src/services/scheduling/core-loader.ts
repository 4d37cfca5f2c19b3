import type { EntityManager } from '@mikro-orm/core';
import type { AdmissionHold, RestoredAdmission } from '../../core/scheduling/index.js';
import { Scheduler } from '../../core/scheduling/index.js';
import { Job } from '../../persistence/jobs/index.js';
import { recordJobEvent, recordOutbox } from '../../persistence/scheduling/index.js';
import { loadConfig, type StoredConfig } from './config-reload.js';
import { backToPending, type FencedWriter, writeFenced } from './cycle-writer.js';
import { inChunks, readLiveJobs } from './live-jobs.js';
import { type DoubleBooking, findDoubleBookings } from './restore-check.js';

export interface CoreLoaderOptions {
  now: () => number;
  placement: 'best-fit' | 'fragmentation-aware';
  /** The backend's time scale: declared durations are divided by it (see `jobSpec`). */
  timeScale: number;
  logError: (error: unknown) => void;
  /** Admission holds in force now (exhausted hard budgets); none when absent. */
  holds?: (em: EntityManager) => Promise<AdmissionHold[]>;
}

export interface LoadedCore {
  core: Scheduler;
  /** Queue name → queue id. */
  queueIds: Map<string, string>;
  /** Stored admissions left out because an earlier one holds their GPUs (loaded as pending). */
  doubleBooked: DoubleBooking[];
}

/**
 * Builds a scheduler core from the database. With jobs: admitted ones are restored where
 * they were placed — except an admission that shares a GPU with an earlier one, which is
 * loaded as pending and returned in `doubleBooked` — and pending ones re-queued with their
 * original submit time. Without jobs: a scratch core with the stored configuration only.
 *
 * Jobs are read as plain rows in pages, and the event loop has its turn between pages and
 * between chunks of submits (live-jobs.ts): with 10,000 pending jobs the API keeps answering
 * meanwhile. The core is not in use until the caller installs it.
 */
export async function loadCore(
  em: EntityManager,
  options: CoreLoaderOptions,
  withJobs: boolean,
): Promise<LoadedCore> {
  const config = await loadConfig(em, options.timeScale);
  const core = coreOf(config, options);
  if (!withJobs) return { core, queueIds: config.queueIds, doubleBooked: [] };

  const queueNames = new Map([...config.queueIds].map(([name, id]) => [id, name]));
  const live = await readLiveJobs(em, queueNames, options.timeScale);
  const stored: RestoredAdmission[] = [];
  for (const job of live)
    if (job.state !== 'PENDING' && job.admission) stored.push({ job: job.spec, admission: job.admission });
  const { load, conflicts } = findDoubleBookings(stored, config.flavors);
  core.restore(load);
  // Before the pending jobs go in: a held job waits in the held set from the start (followers' explanations
  // too).
  if (options.holds) core.setAdmissionHolds(await options.holds(em));
  const requeued = new Set(conflicts.map((c) => c.jobId));
  const pending = live.filter((job) => job.state === 'PENDING' || requeued.has(job.id));
  await inChunks(pending, (job) => {
    try {
      core.submit(job.spec);
    } catch (error) {
      options.logError(error);
    }
  });
  return { core, queueIds: config.queueIds, doubleBooked: conflicts };
}

/** A core with the stored configuration and no jobs. */
export function coreOf(config: StoredConfig, options: CoreLoaderOptions): Scheduler {
  const core = new Scheduler({
    clock: { now: options.now },
    placement: options.placement,
    fairSharing: { enabled: true },
    priorityClasses: config.classes,
  });
  for (const flavor of config.flavors) core.upsertFlavor(flavor);
  for (const cohort of config.cohorts) core.upsertCohort(cohort);
  for (const node of config.nodes) core.upsertNode(node);
  for (const queue of config.queues) core.upsertQueue(queue);
  return core;
}

/**
 * Puts double-booked admissions back to pending in the database (fenced, one transaction):
 * a PREEMPTED job event saying why, and an outbox row that suspends the run on the backend.
 * Returns the jobs actually requeued (one finished or cancelled meanwhile is left alone).
 */
export async function requeueDoubleBooked(
  writer: FencedWriter,
  conflicts: DoubleBooking[],
  now: number,
): Promise<string[]> {
  if (!conflicts.length) return [];
  const requeued: string[] = [];
  await writeFenced(writer, async (em, jobLock) => {
    const at = new Date(now);
    for (const conflict of conflicts) {
      const job = await em.findOne(Job, { id: conflict.jobId }, { populate: ['queue'], ...jobLock });
      if (!job || (job.state !== 'ADMITTED' && job.state !== 'RUNNING')) continue;
      await writer.metering.charge(em, [job], now, 'requeued');
      backToPending(job);
      recordJobEvent(
        em,
        job,
        'PREEMPTED',
        at,
        'DoubleBooked',
        'Returned to the queue: its admission shared GPUs with an earlier admission',
        { gpus: conflict.gpus },
      );
      recordOutbox(em, 'job.requeued', {
        jobId: job.id,
        tenantId: job.tenant.id,
        queueId: job.queue.id,
        reason: 'DoubleBooked',
        at: now,
        epoch: writer.epoch,
      });
      requeued.push(job.id);
    }
  });
  return requeued;
}
