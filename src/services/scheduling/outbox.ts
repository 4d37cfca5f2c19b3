import type { EntityManager, MikroORM } from '@mikro-orm/core';
import { type BackendJob, BackendNotReadyError, type ExecutionBackend } from '../../backends/port.js';
import type { JobFlag } from '../../core/governance/index.js';
import type { EventBus, JobStateName } from '../../events/index.js';
import { allBound, chunks, placeholders, runBound, tableOf } from '../../persistence/bound-sql.js';
import { Queue } from '../../persistence/cluster/index.js';
import { Job } from '../../persistence/jobs/index.js';
import { findPlain, plainRows } from '../../persistence/plain-rows.js';
import type { OutboxKind } from '../../persistence/scheduling/index.js';
import { OutboxEntry } from '../../persistence/scheduling/index.js';
import { systemEntityManager } from '../../persistence/tenant-filter.js';
import { reclaimGraceSeconds } from './reclaim-grace.js';
import { checkpointSpec } from './specs.js';

/** Outbox rows of distinct jobs performed at once (see `dispatch`). */
export const OUTBOX_PARALLEL = 16;

/** Jobs by id as plain rows (plain-rows.ts), each with its queue's row: what backendJobOf and the grace read. */
async function jobsWithQueues(em: EntityManager, ids: readonly string[]): Promise<Job[]> {
  if (!ids.length) return [];
  const jobs = await findPlain(em, Job, { id: [...ids] });
  const queues = new Map(
    (await findPlain(em, Queue, { id: [...new Set(jobs.map((j) => j.queue.id))] })).map((q) => [q.id, q]),
  );
  return jobs.map((job) => ({ ...job, queue: queues.get(job.queue.id) ?? job.queue }) as Job);
}

/** A stored admitted job → what the backend needs to run it (graceSeconds: its policy's, reclaim-grace.ts). */
export function backendJobOf(job: Job, graceSeconds?: number): BackendJob {
  return {
    jobId: job.id,
    tenant: job.tenant.id,
    queue: job.queue.name,
    name: job.name,
    podSets: job.podSets,
    admission: job.admission!,
    expectedDurationMs: job.expectedDurationMs ?? undefined,
    maxRunMs: job.maxRunMs ?? undefined,
    ...checkpointSpec(job),
    // Only when declared (as the checkpoint): a job without them reaches the backend as before.
    ...(job.workloadType
      ? { workloadType: job.workloadType as NonNullable<BackendJob['workloadType']> }
      : {}),
    ...(job.latencySensitive ? { latencySensitive: true } : {}),
    ...(job.maxRetries ? { maxRetries: job.maxRetries } : {}),
    ...(job.workloadKind && job.workloadKind !== 'BATCH' ? { workloadKind: job.workloadKind } : {}),
    ...(graceSeconds !== undefined ? { graceSeconds } : {}),
    workload: job.workload ?? undefined,
  };
}

export interface OutboxOptions {
  orm: MikroORM;
  backend: ExecutionBackend;
  events: EventBus;
  now: () => number;
  logError: (error: unknown) => void;
  /** An expected wait (BackendNotReadyError): one line. Default: stdout. */
  log?: (message: string) => void;
  /** Last reported GPU utilization per running job; performing a stop forgets it. */
  utilization: Map<string, number>;
}

/**
 * Performs the outbox: each row written with a scheduling decision becomes its backend call
 * and published events, then is marked performed. After a crash or a takeover the rows not
 * yet performed are performed again (backend calls are idempotent).
 */
export class OutboxDispatcher {
  /** The dispatch in progress; a call meanwhile makes it run once more (for rows written since it read). */
  private current: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  private log(message: string): void {
    if (this.options.log) this.options.log(message);
    else console.log(`[fairway] scheduler: ${message}`);
  }

  constructor(private readonly options: OutboxOptions) {}

  /**
   * Performs every row not yet performed, oldest first, one dispatch at a time: a call while
   * one runs resolves when a run that began after the call has finished, so the caller's
   * rows are performed (or left for a retry, if the backend failed).
   */
  dispatch(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.current) {
      this.again = true;
      return this.current;
    }
    const run = (async () => {
      try {
        do {
          this.again = false;
          await this.dispatchOnce();
        } while (this.again && !this.stopped);
      } finally {
        this.current = null;
      }
    })();
    this.current = run;
    return run;
  }

  /**
   * One pass over the rows not yet performed, oldest first. Rows of different jobs are
   * independent, so consecutive rows of distinct jobs are performed together (a wave, at most
   * OUTBOX_PARALLEL): a backend with a network round trip per call (Kubernetes) is not paid for
   * one job at a time. A job's own rows stay in order: a wave ends before a job's second row.
   */
  private async dispatchOnce(): Promise<void> {
    const em = systemEntityManager(this.options.orm);
    // Plain rows, not entities (plain-rows.ts): the outbox is read on every pass of a busy leader.
    const o = tableOf(em, 'OutboxEntry');
    const entries = plainRows(
      em,
      OutboxEntry,
      await allBound<Record<string, unknown>>(
        em,
        `select ${o.column('id')}, ${o.column('kind')}, ${o.column('payload')} from ${o.table} where ${o.column('performedAt')} is null order by ${o.column('id')} asc limit ?`,
        [1000],
      ),
    );
    if (!entries.length) return;
    // The admitted jobs' rows, read in one query rather than one per row, with their queues.
    const admittedIds = entries.filter((e) => e.kind === 'job.admitted').map((e) => String(e.payload.jobId));
    const admitted = new Map((await jobsWithQueues(em, admittedIds)).map((j) => [j.id, j] as const));
    const graces = await reclaimGraceSeconds(em, [...admitted.values()]);
    const performed: string[] = [];
    let next = 0;
    while (next < entries.length) {
      const wave: OutboxEntry[] = [];
      const jobs = new Set<string>();
      while (next < entries.length && wave.length < OUTBOX_PARALLEL) {
        const entry = entries[next]!;
        const jobId = String(entry.payload.jobId);
        if (jobs.has(jobId)) break;
        jobs.add(jobId);
        wave.push(entry);
        next++;
      }
      const results = await Promise.allSettled(
        wave.map((entry) => this.perform(entry.kind as OutboxKind, entry.payload, admitted, graces)),
      );
      let failed = false;
      results.forEach((result, i) => {
        if (result.status === 'fulfilled') performed.push(wave[i]!.id);
        else {
          // Left for the next dispatch (a backend that is briefly unavailable), with the rows after it.
          if (result.reason instanceof BackendNotReadyError) this.log(`outbox: ${result.reason.message}`);
          else this.options.logError(result.reason);
          failed = true;
        }
      });
      if (failed) break;
    }
    // A few statements for the pass (bound, in fixed-size chunks so their texts repeat), not an
    // entity update each. Performed again after a crash before this write: backend calls are
    // idempotent, published events are notifications.
    const performedAt = o.value('performedAt', new Date(this.options.now()));
    for (const [start, size] of chunks(performed.length)) {
      await runBound(
        em,
        `update ${o.table} set ${o.column('performedAt')} = ? where ${o.column('id')} in ${placeholders(size)}`,
        [performedAt, ...performed.slice(start, start + size)],
      );
    }
  }

  /**
   * No dispatch starts from now on; resolves when the one in progress has ended (the server closes
   * the backend after this, so no backend call is made on a closed backend). Rows left unperformed
   * are performed by the next leader.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.current?.catch(() => undefined);
  }

  /** After a takeover: the backend runs exactly the admitted jobs (starts missing runs, removes orphans). */
  async reconcileBackend(): Promise<void> {
    const em = systemEntityManager(this.options.orm);
    const jobs = await em.find(Job, { state: { $in: ['ADMITTED', 'RUNNING'] } }, { populate: ['queue'] });
    const live = jobs.filter((job) => job.admission);
    const graces = await reclaimGraceSeconds(em, live);
    await this.options.backend.reconcile(live.map((job) => backendJobOf(job, graces.get(job.id))));
  }

  private async perform(
    kind: OutboxKind,
    payload: Record<string, unknown>,
    admitted: Map<string, Job>,
    graces: Map<string, number>,
  ): Promise<void> {
    const jobId = String(payload.jobId);
    const at = Number(payload.at);
    const { events, utilization } = this.options;
    const queueUpdated = (queueId: unknown) =>
      events.publish('queue-updated', String(queueId), { queueId: String(queueId), at });
    switch (kind) {
      case 'job.admitted': {
        const em = systemEntityManager(this.options.orm);
        const job = admitted.get(jobId) ?? (await em.findOne(Job, { id: jobId }, { populate: ['queue'] }));
        if (job && (job.state === 'ADMITTED' || job.state === 'RUNNING')) {
          const grace = graces.has(job.id)
            ? graces.get(job.id)
            : (await reclaimGraceSeconds(em, [job])).get(job.id);
          await this.options.backend.start(backendJobOf(job, grace));
        }
        this.publishJob(jobId, 'ADMITTED', at);
        events.publish('tenant-event', String(payload.tenantId), {
          kind: 'ADMITTED',
          jobId,
          queueId: String(payload.queueId),
          at,
          borrowed: Boolean(payload.borrowed),
        });
        queueUpdated(payload.queueId);
        return;
      }
      case 'job.preempted': {
        await this.options.backend.suspend(jobId, String(payload.reason));
        utilization.delete(jobId);
        this.publishJob(jobId, 'PENDING', at);
        const sameTenant = payload.preemptorTenantId === payload.tenantId;
        events.publish('tenant-event', String(payload.tenantId), {
          kind: 'PREEMPTED',
          jobId,
          queueId: String(payload.queueId),
          at,
          reason: String(payload.reason),
          preemptorJobId: sameTenant ? String(payload.preemptorJobId) : null,
          // The victim's own work lost: its tenant's to see (rows written before this field carry none).
          lostGpuHours: typeof payload.lostGpuHours === 'number' ? payload.lostGpuHours : null,
          // A governance reclaim: why, with the numbers (the victim's own flag, its tenant's to see).
          ...(typeof payload.message === 'string'
            ? { message: payload.message, flag: (payload.flag ?? null) as JobFlag | null }
            : {}),
        });
        queueUpdated(payload.queueId);
        if (payload.preemptorQueueId && payload.preemptorQueueId !== payload.queueId)
          queueUpdated(payload.preemptorQueueId);
        return;
      }
      case 'job.requeued':
        // Put back to pending by the restore check (a double-booked admission): stop it.
        await this.options.backend.suspend(jobId, String(payload.reason));
        utilization.delete(jobId);
        this.publishJob(jobId, 'PENDING', at);
        queueUpdated(payload.queueId);
        return;
      case 'job.disrupted':
        utilization.delete(jobId);
        this.publishJob(jobId, 'PENDING', at);
        events.publish('tenant-event', String(payload.tenantId), {
          kind: 'DISRUPTED',
          jobId,
          queueId: String(payload.queueId),
          at,
          message: String(payload.reason),
        });
        queueUpdated(payload.queueId);
        return;
      case 'job.cancelled':
        await this.options.backend.cancel(jobId);
        utilization.delete(jobId);
        this.publishJob(jobId, 'CANCELLED', at);
        queueUpdated(payload.queueId);
        return;
      case 'job.started':
        this.publishJob(jobId, 'RUNNING', at);
        return;
      case 'job.not-running':
        events.publish('tenant-event', String(payload.tenantId), {
          kind: 'ADMITTED_NOT_RUNNING',
          jobId,
          queueId: String(payload.queueId),
          at,
          message: String(payload.message),
        });
        return;
      case 'job.finished':
        utilization.delete(jobId);
        this.publishJob(jobId, payload.state as JobStateName, at);
        queueUpdated(payload.queueId);
        return;
      case 'tenant.budget-alert': {
        const tenantId = String(payload.tenantId);
        events.publish('tenant-event', tenantId, {
          kind: 'BUDGET_ALERT',
          at,
          budgetId: String(payload.budgetId),
          projectId: payload.projectId == null ? null : String(payload.projectId),
          threshold: Number(payload.threshold),
          spent: Number(payload.spent),
          limit: Number(payload.limit),
          currency: String(payload.currency),
          period: String(payload.period),
        });
        if (payload.auditEventId)
          events.publish('audit-event', tenantId, { auditEventId: String(payload.auditEventId) });
        return;
      }
    }
  }

  private publishJob(jobId: string, state: JobStateName, at: number) {
    this.options.events.publish('job-updated', jobId, { jobId, state, at });
  }
}
