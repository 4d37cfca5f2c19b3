import { LockMode, type EntityManager, type MikroORM } from '@mikro-orm/core';
import { Scheduler } from '../../core/scheduler.js';
import type { CycleResult, JobExplanation, JobSpec, Preview, QueueStatus, RestoredAdmission } from '../../core/types.js';
import type { BackendEvent, ExecutionBackend } from '../../core/ports.js';
import type { EventBus, JobStateName, SchedulerInput } from '../../events/bus.js';
import { systemEntityManager } from '../../persistence/entities.js';
import {
  ClusterNode,
  Cohort,
  Flavor,
  Job,
  JobEvent,
  OutboxEntry,
  PriorityClassRow,
  Queue,
  type JobEventType,
} from '../../persistence/scheduling-entities.js';
import type { Leadership } from './leadership.js';
import { cohortSpec, flavorSpec, jobSpec, nodeSpec, priorityClass, queueSpec } from './specs.js';

export interface SchedulerServiceOptions {
  orm: MikroORM;
  dialect: 'sqlite' | 'postgresql';
  backend: ExecutionBackend;
  events: EventBus;
  now: () => number;
  leadership: Leadership;
  logError: (error: unknown) => void;
  /** Wait this long after a wake-up before running a cycle, so a burst is one cycle. */
  debounceMs?: number;
  /** The leader compares its state with the database this often (lost wake-ups, other writers). */
  resyncIntervalMs?: number;
  /** A follower tries to take the leadership this often. */
  leaderRetryMs?: number;
  placement?: 'best-fit' | 'fragmentation-aware';
}

type OutboxKind = 'job.admitted' | 'job.preempted' | 'job.cancelled' | 'job.started' | 'job.finished';

/**
 * Runs the scheduler core in-process and keeps it and the database in step.
 *
 * The leader (one replica: SQLite's only process, or the holder of PostgreSQL's advisory
 * lock) applies submits and cancels from any replica (through the event bus), runs
 * debounced admission cycles, persists each cycle's decisions in one transaction with an
 * outbox row per side effect, then performs the outbox (backend calls, published events).
 * Followers keep a read model rebuilt from the database, for positions and queue usage.
 * A restart rebuilds the core from the database: admitted jobs are restored where they
 * were placed, pending ones re-queued with their original submit time.
 */
export class SchedulerService {
  private core!: Scheduler;
  private leader = false;
  private started = false;
  private stopped = false;
  private wakeTimer: NodeJS.Timeout | null = null;
  private resyncTimer: NodeJS.Timeout | null = null;
  private leaderTimer: NodeJS.Timeout | null = null;
  private followerRebuildTimer: NodeJS.Timeout | null = null;
  /** Leader work (cycles, inputs, backend events) runs one at a time in this chain. */
  private chain: Promise<unknown> = Promise.resolve();
  private readonly unsubscribers: (() => void)[] = [];
  private readonly queueIds = new Map<string, string>();
  private readonly utilization = new Map<string, number>();
  private readonly debounceMs: number;
  private readonly stateListeners = new Set<() => void>();

  constructor(private readonly options: SchedulerServiceOptions) {
    this.debounceMs = options.debounceMs ?? 5;
  }

  /** Called (in this process) whenever positions, ETAs or usage may have changed. */
  onStateChange(listener: () => void): () => void {
    this.stateListeners.add(listener);
    return () => this.stateListeners.delete(listener);
  }

  private stateChanged(): void {
    for (const listener of this.stateListeners) {
      try {
        listener();
      } catch (error) {
        this.options.logError(error);
      }
    }
  }

  get isLeader(): boolean {
    return this.leader;
  }

  async start(): Promise<void> {
    this.started = true;
    await this.rebuild();
    this.listen('scheduler-input', (input) => this.onInput(input));
    this.listen('scheduler-state', () => {
      if (!this.leader) this.scheduleFollowerRebuild();
    });
    this.unsubscribers.push(this.options.backend.onEvent((event) => void this.serial(() => this.onBackendEvent(event))));
    await this.tryLead();
    if (!this.leader) {
      this.leaderTimer = setInterval(() => void this.tryLead(), this.options.leaderRetryMs ?? 2000);
      this.leaderTimer.unref();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of [this.wakeTimer, this.resyncTimer, this.followerRebuildTimer]) if (timer) clearTimeout(timer);
    if (this.leaderTimer) clearInterval(this.leaderTimer);
    for (const unsubscribe of this.unsubscribers) unsubscribe();
    await this.chain.catch(() => undefined);
    await this.options.leadership.release();
  }

  // ─── reads (any replica) ───

  /** Validates a job against the current configuration without changing anything. */
  preview(spec: JobSpec): Preview {
    return this.core.preview(spec);
  }

  explain(jobId: string): JobExplanation | null {
    try {
      return this.core.explain(jobId);
    } catch {
      return null; // not (yet) known to the scheduler: just submitted, or finished
    }
  }

  queueStatus(name: string): QueueStatus | null {
    try {
      return this.core.queueStatus(name);
    } catch {
      return null;
    }
  }

  nodeStatus() {
    return this.core.nodeStatus();
  }

  lastUtilization(jobId: string): number | null {
    return this.utilization.get(jobId) ?? null;
  }

  // ─── inputs (from any replica, through the bus) ───

  announce(input: SchedulerInput): void {
    this.options.events.publish('scheduler-input', input);
  }

  private onInput(input: SchedulerInput): void {
    if (!this.leader) return;
    void this.serial(async () => {
      if (input.kind === 'config') {
        await this.rebuild();
      } else if (input.kind === 'submitted') {
        const job = await this.systemEm().findOne(Job, { id: input.jobId }, { populate: ['queue'] });
        if (job && job.state === 'PENDING' && !this.knows(job.id)) this.core.submit(jobSpec(job, job.queue.name));
      } else if (input.kind === 'cancelled') {
        if (this.knows(input.jobId)) this.core.cancel(input.jobId);
        await this.dispatchOutbox();
      }
      this.stateChanged();
      this.wake();
    });
  }

  /** Asks for an admission cycle soon; bursts of wake-ups coalesce into one cycle. */
  wake(): void {
    if (!this.leader || this.stopped || this.wakeTimer) return;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = null;
      void this.serial(() => this.runCycle());
    }, this.debounceMs);
  }

  // ─── leadership ───

  private async tryLead(): Promise<void> {
    if (this.leader || this.stopped) return;
    let acquired = false;
    try {
      acquired = await this.options.leadership.tryAcquire();
    } catch (error) {
      this.options.logError(error);
    }
    if (!acquired || this.stopped) return;
    this.leader = true;
    if (this.leaderTimer) clearInterval(this.leaderTimer);
    this.leaderTimer = null;
    await this.serial(async () => {
      // What the previous leader decided but did not finish performing is performed now.
      await this.rebuild();
      await this.dispatchOutbox();
      await this.reconcileBackend();
    });
    const every = this.options.resyncIntervalMs ?? 30_000;
    const resync = () => {
      this.resyncTimer = setTimeout(() => {
        void this.serial(() => this.resync()).finally(() => !this.stopped && resync());
      }, every);
      this.resyncTimer.unref();
    };
    resync();
    this.wake();
  }

  // ─── state ───

  private systemEm(): EntityManager {
    return systemEntityManager(this.options.orm);
  }

  private knows(jobId: string): boolean {
    return this.explain(jobId) !== null;
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.chain.then(work, work);
    this.chain = next.catch((error) => this.options.logError(error));
    return next;
  }

  /** Builds a fresh core from the database and makes it the current one. */
  async rebuild(): Promise<void> {
    this.core = await this.buildCore(true);
    this.stateChanged();
  }

  /**
   * A scratch core with the stored configuration and no jobs, to try a configuration
   * change on before writing it. Build it before opening the write transaction: SQLite
   * has one connection, which that transaction would hold.
   */
  async configSnapshot(): Promise<Scheduler> {
    return this.buildCore(false);
  }

  private async buildCore(withJobs: boolean): Promise<Scheduler> {
    const em = this.systemEm();
    const [flavors, cohorts, nodes, queues, classes] = await Promise.all([
      em.find(Flavor, {}, { orderBy: { id: 'asc' } }),
      em.find(Cohort, {}, { orderBy: { id: 'asc' }, populate: ['parent'] }),
      em.find(ClusterNode, {}, { orderBy: { id: 'asc' }, populate: ['pool', 'flavor'] }),
      em.find(Queue, {}, { orderBy: { id: 'asc' }, populate: ['cohort'] }),
      em.find(PriorityClassRow, {}, { orderBy: { value: 'desc' } }),
    ]);
    const core = new Scheduler({
      clock: { now: this.options.now },
      placement: this.options.placement ?? 'best-fit',
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
    for (const node of nodes) core.upsertNode(nodeSpec(node, node.pool.name, node.flavor.name, node.pool.dedicatedTenant?.id ?? null));
    if (withJobs) this.queueIds.clear();
    for (const queue of queues) {
      core.upsertQueue(queueSpec(queue, queue.cohort?.name ?? null));
      if (withJobs) this.queueIds.set(queue.name, queue.id);
    }
    if (!withJobs) return core;
    const live = await em.find(Job, { state: { $in: ['PENDING', 'ADMITTED', 'RUNNING'] } }, { orderBy: { submitTime: 'asc', id: 'asc' }, populate: ['queue'] });
    const restored: RestoredAdmission[] = [];
    for (const job of live) if (job.state !== 'PENDING' && job.admission) restored.push({ job: jobSpec(job, job.queue.name), admission: job.admission });
    core.restore(restored);
    for (const job of live) {
      if (job.state !== 'PENDING') continue;
      try {
        core.submit(jobSpec(job, job.queue.name));
      } catch (error) {
        this.options.logError(error);
      }
    }
    return core;
  }

  private scheduleFollowerRebuild(): void {
    if (this.followerRebuildTimer || this.stopped) return;
    this.followerRebuildTimer = setTimeout(() => {
      this.followerRebuildTimer = null;
      void this.rebuild().catch((error) => this.options.logError(error));
    }, 50);
  }

  /** Leader: bring the core in line with the database (jobs written while a wake-up was lost). */
  private async resync(): Promise<void> {
    const em = this.systemEm();
    const pending = await em.find(Job, { state: 'PENDING' }, { populate: ['queue'], orderBy: { submitTime: 'asc' } });
    for (const job of pending) {
      if (!this.knows(job.id)) this.core.submit(jobSpec(job, job.queue.name));
    }
    await this.dispatchOutbox();
    this.announceWindowChanges();
    // Time windows open and close with the clock, not with events: a periodic cycle lets
    // a closed window's excess become reclaimable and an opened one's quota be used.
    this.wake();
  }

  /** Queue name → index of its open time window (null: base quotas), as last announced. */
  private readonly announcedWindows = new Map<string, number | null>();

  private announceWindowChanges(): void {
    const at = this.options.now();
    for (const [name, queueId] of this.queueIds) {
      const status = this.queueStatus(name);
      if (!status) continue;
      const before = this.announcedWindows.get(name);
      this.announcedWindows.set(name, status.activeWindow);
      if (before === undefined || before === status.activeWindow) continue;
      this.options.events.publish('tenant-event', status.tenant, { kind: 'WINDOW_CHANGED', queueId, at });
      this.options.events.publish('queue-updated', queueId, { queueId, at });
    }
  }

  private async reconcileBackend(): Promise<void> {
    const running = new Set(await this.options.backend.running());
    const em = this.systemEm();
    const jobs = await em.find(Job, { state: { $in: ['ADMITTED', 'RUNNING'] } }, { populate: ['queue'] });
    for (const job of jobs) {
      if (!running.has(job.id) && job.admission) await this.startOnBackend(job);
    }
  }

  // ─── the cycle ───

  private async runCycle(): Promise<void> {
    if (!this.leader || this.stopped) return;
    const result = this.core.cycle();
    this.announceWindowChanges();
    if (result.admitted.length === 0 && result.preempted.length === 0) return;
    try {
      const skipped = await this.persist(result);
      // Jobs cancelled while the cycle ran: give back what the core reserved for them.
      for (const jobId of skipped) if (this.knows(jobId)) this.core.cancel(jobId);
      if (skipped.length) this.wake();
    } catch (error) {
      this.options.logError(error);
      await this.rebuild(); // the database is the truth: forget decisions that were not stored
      this.wake();
      return;
    }
    this.options.events.publish('scheduler-state', { at: result.at });
    this.stateChanged();
    await this.dispatchOutbox();
    // Admissions may free a StrictFIFO queue or leave room for the next head.
    this.wake();
  }

  /**
   * One transaction: job rows, job events, outbox rows. Returns jobs the core admitted
   * that the database no longer has pending (cancelled meanwhile).
   *
   * Within one cycle the core may admit a job and then preempt it, or preempt a running
   * job and admit it again elsewhere; so each job is written as the core holds it at the
   * end of the cycle, not by replaying the two lists one after the other.
   */
  private async persist(result: CycleResult): Promise<string[]> {
    const skipped: string[] = [];
    const preemptionOf = new Map(result.preempted.map((p) => [p.victimId, p]));
    await this.systemEm().transactional(async (em) => {
      const ids = [...new Set([...result.preempted.map((p) => p.victimId), ...result.admitted.map((a) => a.jobId), ...result.preempted.map((p) => p.preemptorId)])];
      const jobs = new Map(
        (await em.find(Job, { id: { $in: ids } }, { populate: ['queue'], lockMode: this.isPostgres() ? LockMode.PESSIMISTIC_WRITE : undefined })).map((j) => [j.id, j]),
      );
      const at = new Date(result.at);
      const touched = [...new Set([...result.preempted.map((p) => p.victimId), ...result.admitted.map((a) => a.jobId)])];
      for (const id of touched) {
        const job = jobs.get(id);
        const final = this.core.jobState(id) === 'admitted' ? this.core.admissionOf(id) : undefined;
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
          this.jobEvent(em, job, 'PREEMPTED', at, preemption.reason, `Preempted (${preemption.reason}) to make room for another job`, { preemptorJobId: preemption.preemptorId });
          this.outbox(em, 'job.preempted', {
            jobId: job.id,
            tenantId: job.tenant.id,
            queueId: job.queue.id,
            reason: preemption.reason,
            preemptorJobId: preemption.preemptorId,
            preemptorTenantId: preemptor?.tenant.id ?? null,
            preemptorQueueId: preemptor?.queue.id ?? null,
            at: result.at,
          });
        }
        if (final && job.state === 'PENDING') {
          job.state = 'ADMITTED';
          job.admission = final;
          job.admittedAt = at;
          this.jobEvent(em, job, 'ADMITTED', at, final.mode, final.borrowed ? 'Admitted, borrowing quota from its cohort' : 'Admitted within its quota', { placements: final.podSets });
          this.outbox(em, 'job.admitted', { jobId: job.id, tenantId: job.tenant.id, queueId: job.queue.id, borrowed: final.borrowed, at: result.at });
        }
      }
      await em.flush();
    });
    return skipped;
  }

  /** Row locks where the database has them; SQLite serialises writers anyway. */
  private isPostgres(): boolean {
    return this.options.dialect === 'postgresql';
  }

  private jobEvent(em: EntityManager, job: Job, type: JobEventType, at: Date, reason: string | null, message: string, data: Record<string, unknown> | null = null) {
    em.create(JobEvent, { job, tenant: job.tenant, type, reason, message, data, at });
  }

  private outbox(em: EntityManager, kind: OutboxKind, payload: Record<string, unknown>) {
    em.create(OutboxEntry, { kind, payload, performedAt: null });
  }

  // ─── performing the outbox ───

  /** Performs every outbox row not yet performed, oldest first. Backend calls are idempotent. */
  async dispatchOutbox(): Promise<void> {
    const em = this.systemEm();
    const entries = await em.find(OutboxEntry, { performedAt: null }, { orderBy: { id: 'asc' }, limit: 1000 });
    for (const entry of entries) {
      try {
        await this.perform(entry.kind as OutboxKind, entry.payload);
        entry.performedAt = new Date(this.options.now());
      } catch (error) {
        // Left for the next dispatch (a backend that is briefly unavailable).
        this.options.logError(error);
        break;
      }
    }
    await em.flush();
  }

  private async perform(kind: OutboxKind, payload: Record<string, unknown>): Promise<void> {
    const jobId = String(payload.jobId);
    const at = Number(payload.at);
    const { events } = this.options;
    switch (kind) {
      case 'job.admitted': {
        const job = await this.systemEm().findOne(Job, { id: jobId }, { populate: ['queue'] });
        if (job && (job.state === 'ADMITTED' || job.state === 'RUNNING')) await this.startOnBackend(job);
        this.publishJob(jobId, 'ADMITTED', at);
        events.publish('tenant-event', String(payload.tenantId), { kind: 'ADMITTED', jobId, queueId: String(payload.queueId), at, borrowed: Boolean(payload.borrowed) });
        events.publish('queue-updated', String(payload.queueId), { queueId: String(payload.queueId), at });
        return;
      }
      case 'job.preempted': {
        await this.options.backend.suspend(jobId, String(payload.reason));
        this.utilization.delete(jobId);
        this.publishJob(jobId, 'PENDING', at);
        const sameTenant = payload.preemptorTenantId === payload.tenantId;
        events.publish('tenant-event', String(payload.tenantId), {
          kind: 'PREEMPTED',
          jobId,
          queueId: String(payload.queueId),
          at,
          reason: String(payload.reason),
          preemptorJobId: sameTenant ? String(payload.preemptorJobId) : null,
        });
        events.publish('queue-updated', String(payload.queueId), { queueId: String(payload.queueId), at });
        if (payload.preemptorQueueId && payload.preemptorQueueId !== payload.queueId) {
          events.publish('queue-updated', String(payload.preemptorQueueId), { queueId: String(payload.preemptorQueueId), at });
        }
        return;
      }
      case 'job.cancelled':
        await this.options.backend.cancel(jobId);
        this.utilization.delete(jobId);
        this.publishJob(jobId, 'CANCELLED', at);
        events.publish('queue-updated', String(payload.queueId), { queueId: String(payload.queueId), at });
        return;
      case 'job.started':
        this.publishJob(jobId, 'RUNNING', at);
        return;
      case 'job.finished':
        this.utilization.delete(jobId);
        this.publishJob(jobId, payload.state as JobStateName, at);
        events.publish('queue-updated', String(payload.queueId), { queueId: String(payload.queueId), at });
        return;
    }
  }

  private publishJob(jobId: string, state: JobStateName, at: number) {
    this.options.events.publish('job-updated', jobId, { jobId, state, at });
  }

  private async startOnBackend(job: Job): Promise<void> {
    await this.options.backend.start({
      jobId: job.id,
      tenant: job.tenant.id,
      queue: job.queue.name,
      name: job.name,
      podSets: job.podSets,
      admission: job.admission!,
      expectedDurationMs: job.expectedDurationMs ?? undefined,
      maxRunMs: job.maxRunMs ?? undefined,
      workload: job.workload ?? undefined,
    });
  }

  // ─── what the backend reports ───

  private async onBackendEvent(event: BackendEvent): Promise<void> {
    if (!this.leader) return;
    if (event.type === 'utilization') {
      this.utilization.set(event.jobId, event.gpuUtilization);
      return;
    }
    const at = new Date(event.at);
    let finished = false;
    await this.systemEm().transactional(async (em) => {
      const job = await em.findOne(Job, { id: event.jobId }, { populate: ['queue'], lockMode: this.isPostgres() ? LockMode.PESSIMISTIC_WRITE : undefined });
      // Reports about a run that was since preempted or cancelled are stale.
      if (!job || (job.state !== 'ADMITTED' && job.state !== 'RUNNING')) return;
      if (event.type === 'started') {
        if (job.state !== 'ADMITTED') return;
        job.state = 'RUNNING';
        job.startedAt = at;
        this.jobEvent(em, job, 'STARTED', at, null, 'Running on the backend');
        this.outbox(em, 'job.started', { jobId: job.id, queueId: job.queue.id, at: event.at });
      } else {
        const state = event.type === 'succeeded' ? 'SUCCEEDED' : 'FAILED';
        job.state = state;
        job.finishedAt = at;
        job.exitReason = event.type === 'failed' ? event.reason.slice(0, 500) : null;
        this.jobEvent(em, job, state, at, event.type === 'failed' ? 'BackendFailure' : null, event.type === 'failed' ? event.reason : 'Completed');
        this.outbox(em, 'job.finished', { jobId: job.id, queueId: job.queue.id, state, at: event.at });
        finished = true;
      }
      await em.flush();
    });
    if (finished && this.knows(event.jobId)) {
      this.core.finish(event.jobId);
      this.stateChanged();
    }
    await this.dispatchOutbox();
    if (finished) {
      this.options.events.publish('scheduler-state', { at: event.at });
      this.wake();
    }
  }

  // ─── helpers for the graph ───

  queueIdOf(name: string): string | undefined {
    return this.queueIds.get(name);
  }

  private listen<K extends 'scheduler-input' | 'scheduler-state'>(topic: K, handler: (payload: never) => void) {
    const iterator = this.options.events.subscribe(topic as never)[Symbol.asyncIterator]();
    let active = true;
    void (async () => {
      while (active) {
        const next = await iterator.next();
        if (next.done) return;
        try {
          handler(next.value as never);
        } catch (error) {
          this.options.logError(error);
        }
      }
    })();
    this.unsubscribers.push(() => {
      active = false;
      void iterator.return?.();
    });
  }
}
