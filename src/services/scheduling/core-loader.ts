import type { EntityManager } from '@mikro-orm/core';
import { governanceInForce, isGoverned } from '../../core/governance/index.js';
import type { AdmissionHold, RestoredAdmission } from '../../core/scheduling/index.js';
import { Scheduler } from '../../core/scheduling/index.js';
import { ClusterNode, Cohort, Flavor, PriorityClassRow, Queue } from '../../persistence/cluster/index.js';
import { loadPolicyLibrary } from '../../persistence/governance/index.js';
import { Job } from '../../persistence/jobs/index.js';
import { recordJobEvent, recordOutbox } from '../../persistence/scheduling/index.js';
import { Tenant } from '../../persistence/tenancy/index.js';
import { backToPending, type FencedWriter, writeFenced } from './cycle-writer.js';
import { type DoubleBooking, findDoubleBookings } from './restore-check.js';
import { cohortSpec, flavorSpec, jobSpec, nodeSpec, priorityClass, queueSpec } from './specs.js';

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
 */
export async function loadCore(
  em: EntityManager,
  options: CoreLoaderOptions,
  withJobs: boolean,
): Promise<LoadedCore> {
  const [flavors, cohorts, nodes, queues, classes, library] = await Promise.all([
    em.find(Flavor, {}, { orderBy: { id: 'asc' } }),
    em.find(Cohort, {}, { orderBy: { id: 'asc' }, populate: ['parent'] }),
    em.find(ClusterNode, {}, { orderBy: { id: 'asc' }, populate: ['pool', 'flavor'] }),
    em.find(Queue, {}, { orderBy: { id: 'asc' }, populate: ['cohort'] }),
    em.find(PriorityClassRow, {}, { orderBy: { value: 'desc' } }),
    loadPolicyLibrary(em),
  ]);
  // Governed queues' limits depend on their tenant's tier (the rules): read only when one is governed.
  const governed = queues.filter(isGoverned);
  const tenants = governed.length
    ? await em.find(Tenant, { id: { $in: [...new Set(governed.map((q) => q.tenant.id))] } })
    : [];
  const tiers = new Map<string, string>(tenants.map((t) => [t.id, t.tier]));
  const core = new Scheduler({
    clock: { now: options.now },
    placement: options.placement,
    fairSharing: { enabled: true },
    priorityClasses: classes.length ? classes.map(priorityClass) : undefined,
  });
  for (const flavor of flavors) core.upsertFlavor(flavorSpec(flavor));
  // Parents before children.
  const placed = new Set<string>();
  let remaining = cohorts;
  while (remaining.length) {
    const ready = remaining.filter((c) => !c.parent || placed.has(c.parent.id));
    if (!ready.length) throw new Error('cohort parents form a cycle');
    for (const cohort of ready) {
      core.upsertCohort(cohortSpec(cohort, cohort.parent?.name ?? null));
      placed.add(cohort.id);
    }
    remaining = remaining.filter((c) => !placed.has(c.id));
  }
  for (const node of nodes)
    core.upsertNode(nodeSpec(node, node.pool.name, node.flavor.name, node.pool.dedicatedTenant?.id ?? null));
  const queueIds = new Map<string, string>();
  for (const queue of queues) {
    const governance = isGoverned(queue)
      ? governanceInForce(library, queue, tiers.get(queue.tenant.id) ?? 'STANDARD')
      : null;
    core.upsertQueue(queueSpec(queue, queue.cohort?.name ?? null, options.timeScale, governance));
    queueIds.set(queue.name, queue.id);
  }
  if (!withJobs) return { core, queueIds, doubleBooked: [] };

  const live = await em.find(
    Job,
    { state: { $in: ['PENDING', 'ADMITTED', 'RUNNING'] } },
    { orderBy: { submitTime: 'asc', id: 'asc' }, populate: ['queue'] },
  );
  const stored: RestoredAdmission[] = [];
  for (const job of live)
    if (job.state !== 'PENDING' && job.admission)
      stored.push({ job: jobSpec(job, job.queue.name, options.timeScale), admission: job.admission });
  const { load, conflicts } = findDoubleBookings(stored, flavors.map(flavorSpec));
  core.restore(load);
  // Before the pending jobs go in: a held job waits in the held set from the start (followers' explanations
  // too).
  if (options.holds) core.setAdmissionHolds(await options.holds(em));
  const requeued = new Set(conflicts.map((c) => c.jobId));
  for (const job of live) {
    if (job.state !== 'PENDING' && !requeued.has(job.id)) continue;
    try {
      core.submit(jobSpec(job, job.queue.name, options.timeScale));
    } catch (error) {
      options.logError(error);
    }
  }
  return { core, queueIds, doubleBooked: conflicts };
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
