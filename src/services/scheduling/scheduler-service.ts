import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { Scheduler } from '../../core/scheduler.js';
import type { JobExplanation, JobSpec, Preview, QueueStatus } from '../../core/types.js';
import type { BackendEvent, ExecutionBackend } from '../../core/ports.js';
import type { EventBus, SchedulerInput } from '../../events/bus.js';
import { systemEntityManager } from '../../persistence/entities.js';
import { Job } from '../../persistence/scheduling-entities.js';
import { applyBackendEvent } from './backend-events.js';
import { loadCore, requeueDoubleBooked } from './core-loader.js';
import { persistCycle, type FencedWriter } from './cycle-writer.js';
import { LeaderEpochs, StaleLeaderError } from './leader-epoch.js';
import type { Leadership } from './leadership.js';
import { OutboxDispatcher } from './outbox.js';
import { jobSpec } from './specs.js';

export interface SchedulerServiceOptions {
  orm: MikroORM;
  dialect: 'sqlite' | 'postgresql';
  backend: ExecutionBackend;
  events: EventBus;
  now: () => number;
  leadership: Leadership;
  logError: (error: unknown) => void;
  /** Operational messages (leadership taken or lost, paused, resumed). Default: stdout. */
  log?: (message: string) => void;
  /** Wait this long after a wake-up before running a cycle, so a burst is one cycle. */
  debounceMs?: number;
  /** The leader compares its state with the database this often (lost wake-ups, other writers). */
  resyncIntervalMs?: number;
  /** A follower tries to take the leadership this often. */
  leaderRetryMs?: number;
  /** While the database fails, the leader tries to rebuild from it this often. */
  recoveryRetryMs?: number;
  placement?: 'best-fit' | 'fragmentation-aware';
}

type Writable = Exclude<BackendEvent, { type: 'utilization' }>;

/**
 * Runs the scheduler core in-process and keeps it and the database in step (the façade the
 * graph and the use cases see; the jobs are in core-loader, cycle-writer, outbox,
 * backend-events, leader-epoch and leadership).
 *
 * The leader (SQLite's only process, or the holder of PostgreSQL's advisory lock) applies
 * submits and cancels, runs debounced admission cycles, persists each cycle's decisions in
 * one transaction fenced by its leader epoch, then performs the outbox. It demotes itself
 * the moment the lock is lost, or when a write is refused for a stale epoch. While the
 * database fails it stops cycling (the core must not run ahead of what is stored) and
 * rebuilds from the database when it answers again. Followers keep a read model rebuilt
 * from the database, for positions and queue usage.
 */
export class SchedulerService {
  private core!: Scheduler;
  private leader = false;
  private epoch = 0;
  /** Bumped on every takeover and demotion: work queued in an earlier term does nothing. */
  private term = 0;
  /** The core may hold decisions the database does not: no cycles until a rebuild succeeds. */
  private paused = false;
  private campaigning = false;
  private stopped = false;
  private wakeTimer: NodeJS.Timeout | null = null;
  private resyncTimer: NodeJS.Timeout | null = null;
  private leaderTimer: NodeJS.Timeout | null = null;
  private followerRebuildTimer: NodeJS.Timeout | null = null;
  private recoveryTimer: NodeJS.Timeout | null = null;
  /** Leader work (cycles, inputs, backend events) runs one at a time in this chain. */
  private chain: Promise<unknown> = Promise.resolve();
  private readonly unsubscribers: (() => void)[] = [];
  private queueIds = new Map<string, string>();
  private readonly utilization = new Map<string, number>();
  private readonly stateListeners = new Set<() => void>();
  /** Backend reports that could not be written (database down): written after recovery. */
  private readonly unwritten: Writable[] = [];
  /** Queue name → index of its open time window (null: base quotas), as last announced. */
  private readonly announcedWindows = new Map<string, number | null>();
  private readonly epochs: LeaderEpochs;
  private readonly outbox: OutboxDispatcher;
  private readonly log: (message: string) => void;
  private lastCampaignError: string | null = null;

  constructor(private readonly options: SchedulerServiceOptions) {
    this.epochs = new LeaderEpochs(options.dialect);
    this.outbox = new OutboxDispatcher({ ...options, utilization: this.utilization });
    this.log = options.log ?? ((message) => console.log(`[fairway] scheduler: ${message}`));
  }

  /**
   * Called (in this process) when positions, ETAs or usage may have changed: once at the
   * end of each admission cycle, after each rebuild, and after a job finished.
   */
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
    await this.rebuild();
    this.unsubscribers.push(this.options.leadership.onLost((reason) => this.demote(`lost the scheduler lock (${reason})`)));
    this.listen('scheduler-input', (input) => this.onInput(input));
    this.listen('scheduler-state', () => {
      if (!this.leader) this.scheduleFollowerRebuild(50);
    });
    this.unsubscribers.push(this.options.backend.onEvent((event) => this.onBackendEvent(event)));
    await this.tryLead();
    if (!this.leader) this.campaign();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.term++;
    this.clearLeaderTimers();
    if (this.followerRebuildTimer) clearTimeout(this.followerRebuildTimer);
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

  queueIdOf(name: string): string | undefined {
    return this.queueIds.get(name);
  }

  // ─── inputs ───

  announce(input: SchedulerInput): void {
    this.options.events.publish('scheduler-input', input);
  }

  /**
   * A job was stored as pending by this replica. The leader takes its spec as is (no bus
   * round trip, no re-read); a follower tells the leader through the bus.
   */
  submitted(spec: JobSpec): void {
    if (!this.leader) return this.announce({ kind: 'submitted', jobId: spec.id });
    const term = this.term;
    this.run(async () => {
      if (!this.current(term) || this.paused || this.knows(spec.id)) return;
      this.core.submit(spec);
      this.wake();
    });
  }

  private onInput(input: SchedulerInput): void {
    if (!this.leader) return;
    const term = this.term;
    this.run(async () => {
      if (!this.current(term) || this.paused) return;
      if (input.kind === 'config') {
        await this.rebuildAsLeader(term);
      } else if (input.kind === 'submitted') {
        if (this.knows(input.jobId)) return;
        const job = await this.systemEm().findOne(Job, { id: input.jobId }, { populate: ['queue'] });
        if (!this.current(term) || !job || job.state !== 'PENDING' || this.knows(job.id)) return;
        this.core.submit(jobSpec(job, job.queue.name));
      } else if (input.kind === 'cancelled') {
        if (this.knows(input.jobId)) this.core.cancel(input.jobId);
        await this.outbox.dispatch();
      }
      this.wake();
    }, term);
  }

  /** Asks for an admission cycle soon; bursts of wake-ups coalesce into one cycle. */
  wake(): void {
    if (!this.leader || this.paused || this.stopped || this.wakeTimer) return;
    const term = this.term;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = null;
      this.run(() => this.runCycle(term), term);
    }, this.options.debounceMs ?? 5);
  }

  /** Performs every outbox row not yet performed, oldest first. */
  async dispatchOutbox(): Promise<void> {
    await this.outbox.dispatch();
  }

  // ─── leadership ───

  private campaign(): void {
    if (this.leaderTimer || this.stopped) return;
    this.leaderTimer = setInterval(() => void this.tryLead(), this.options.leaderRetryMs ?? 2000);
    this.leaderTimer.unref();
  }

  /** Takes the lock if free, bumps the epoch, and leads from a fresh rebuild. Never throws. */
  private async tryLead(): Promise<void> {
    if (this.leader || this.stopped || this.campaigning) return;
    this.campaigning = true;
    try {
      if (!(await this.options.leadership.tryAcquire())) return;
      if (this.stopped) return void (await this.options.leadership.release());
      let epoch: number;
      try {
        epoch = await this.epochs.takeOver(this.systemEm());
      } catch (error) {
        await this.options.leadership.release();
        throw error;
      }
      this.lastCampaignError = null;
      this.leader = true;
      this.epoch = epoch;
      this.paused = false;
      const term = ++this.term;
      if (this.leaderTimer) clearInterval(this.leaderTimer);
      this.leaderTimer = null;
      this.log(`leading the scheduler (epoch ${epoch})`);
      // What the previous leader decided but did not finish performing is performed now.
      await this.serial(async () => {
        if (!this.current(term)) return;
        await this.rebuildAsLeader(term);
        await this.outbox.dispatch();
        await this.reconcileBackend();
      }).catch((error) => this.failed(error, term));
      // Submits the previous leader acknowledged during the handover reach only its own
      // core: an early first resync picks them up from the database.
      this.scheduleResync(term, Math.min(this.options.resyncIntervalMs ?? 30_000, 2000));
      this.wake();
    } catch (error) {
      // The database is down or refusing: say it once per streak, keep campaigning.
      const message = error instanceof Error ? error.message : String(error);
      if (this.lastCampaignError !== message) this.log(`cannot take the scheduler leadership: ${message}`);
      this.lastCampaignError = message;
    } finally {
      this.campaigning = false;
    }
  }

  /** Stops leading at once: no cycles, timers cancelled, a read model from the database, campaigning again. */
  private demote(reason: string): void {
    if (!this.leader) return;
    this.leader = false;
    this.paused = false;
    this.term++;
    this.clearLeaderTimers();
    this.unwritten.length = 0;
    this.log(`stopped leading the scheduler (epoch ${this.epoch}): ${reason}`);
    void this.options.leadership.release().catch(() => undefined);
    this.scheduleFollowerRebuild(0);
    this.campaign();
  }

  private clearLeaderTimers(): void {
    for (const timer of [this.wakeTimer, this.resyncTimer, this.recoveryTimer]) if (timer) clearTimeout(timer);
    this.wakeTimer = this.resyncTimer = this.recoveryTimer = null;
  }

  private current(term: number): boolean {
    return this.leader && !this.stopped && term === this.term;
  }

  private writer(): FencedWriter {
    return { em: this.systemEm(), dialect: this.options.dialect, epochs: this.epochs, epoch: this.epoch };
  }

  /**
   * A leader's work failed. A refused write means another replica leads: demote. Anything
   * else is the database failing: pause until a rebuild from it succeeds.
   */
  private failed(error: unknown, term: number): void {
    if (error instanceof StaleLeaderError) {
      if (term === this.term) this.demote(error.message);
      return;
    }
    this.options.logError(error);
    if (!this.current(term) || this.paused) return;
    this.paused = true;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
    this.log('scheduling paused: the database failed; retrying until it answers');
    this.scheduleRecovery(term);
  }

  private scheduleRecovery(term: number): void {
    this.recoveryTimer = setTimeout(() => {
      this.recoveryTimer = null;
      this.serial(async () => {
        if (!this.current(term)) return;
        await this.rebuildAsLeader(term);
        // Oldest first; one that fails again stays queued for the next attempt.
        while (this.unwritten.length) {
          await this.writeBackendEvent(this.unwritten[0]!, term);
          this.unwritten.shift();
        }
        await this.outbox.dispatch();
      }).then(
        () => {
          if (!this.current(term)) return;
          this.paused = false;
          this.log('scheduling resumed: the database answers again');
          this.wake();
        },
        (error) => {
          if (error instanceof StaleLeaderError) return this.failed(error, term);
          if (this.current(term)) this.scheduleRecovery(term);
        },
      );
    }, this.options.recoveryRetryMs ?? 1000);
    this.recoveryTimer.unref();
  }

  private scheduleResync(term: number, afterMs: number): void {
    if (!this.current(term)) return;
    this.resyncTimer = setTimeout(() => {
      this.resyncTimer = null;
      void this.serial(() => this.resync(term))
        .catch((error) => this.failed(error, term))
        .finally(() => this.scheduleResync(term, this.options.resyncIntervalMs ?? 30_000));
    }, afterMs);
    this.resyncTimer.unref();
  }

  // ─── state ───

  private systemEm(): EntityManager {
    return systemEntityManager(this.options.orm);
  }

  private knows(jobId: string): boolean {
    return this.core.jobState(jobId) !== undefined;
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.chain.then(work, work);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Leader work without a waiting caller: its failure pauses or demotes, never escapes. */
  private run(work: () => Promise<void>, term = this.term): void {
    void this.serial(work).catch((error) => this.failed(error, term));
  }

  /** Builds a fresh core from the database and makes it the current one. */
  async rebuild(): Promise<void> {
    if (!this.leader) return this.rebuildAsFollower();
    const term = this.term;
    await this.serial(() => this.rebuildAsLeader(term));
  }

  private async rebuildAsFollower(): Promise<void> {
    const loaded = await loadCore(this.systemEm(), this.loaderOptions(), true);
    if (this.leader) return; // took the leadership meanwhile: the leader's rebuild wins
    this.install(loaded);
  }

  /** The restore check's double bookings are requeued in the database (fenced) and reported. */
  private async rebuildAsLeader(term: number): Promise<void> {
    const loaded = await loadCore(this.systemEm(), this.loaderOptions(), true);
    if (!this.current(term)) return;
    if (loaded.doubleBooked.length) {
      const requeued = await requeueDoubleBooked(this.writer(), loaded.doubleBooked, this.options.now());
      for (const conflict of loaded.doubleBooked.filter((c) => requeued.includes(c.jobId))) {
        this.options.logError(
          new Error(`restore: job ${conflict.jobId} was admitted onto GPUs ${conflict.gpus.join(', ')} already held by ${conflict.heldBy.join(', ')}; put back to pending and suspended on the backend`),
        );
      }
    }
    this.install(loaded);
  }

  private install(loaded: Awaited<ReturnType<typeof loadCore>>): void {
    this.core = loaded.core;
    this.queueIds = loaded.queueIds;
    this.stateChanged();
  }

  private loaderOptions() {
    return { now: this.options.now, placement: this.options.placement ?? 'best-fit', logError: this.options.logError } as const;
  }

  /**
   * A scratch core with the stored configuration and no jobs, to try a configuration
   * change on before writing it. Build it before opening the write transaction: SQLite
   * has one connection, which that transaction would hold.
   */
  async configSnapshot(): Promise<Scheduler> {
    return (await loadCore(this.systemEm(), this.loaderOptions(), false)).core;
  }

  private scheduleFollowerRebuild(afterMs: number): void {
    if (this.followerRebuildTimer || this.stopped) return;
    this.followerRebuildTimer = setTimeout(() => {
      this.followerRebuildTimer = null;
      if (this.leader || this.stopped) return;
      this.rebuildAsFollower().catch((error) => {
        // The database is down: keep the last read model and try again.
        this.options.logError(error);
        setTimeout(() => this.scheduleFollowerRebuild(0), this.options.recoveryRetryMs ?? 1000).unref();
      });
    }, afterMs);
    this.followerRebuildTimer.unref();
  }

  /** Leader: bring the core in line with the database (jobs written while a wake-up was lost). */
  private async resync(term: number): Promise<void> {
    if (!this.current(term) || this.paused) return;
    const pending = await this.systemEm().find(Job, { state: 'PENDING' }, { populate: ['queue'], orderBy: { submitTime: 'asc' } });
    if (!this.current(term)) return;
    for (const job of pending) if (!this.knows(job.id)) this.core.submit(jobSpec(job, job.queue.name));
    await this.outbox.dispatch();
    this.announceWindowChanges();
    // Time windows open and close with the clock, not with events: a periodic cycle lets
    // a closed window's excess become reclaimable and an opened one's quota be used.
    this.wake();
  }

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
    const jobs = await this.systemEm().find(Job, { state: { $in: ['ADMITTED', 'RUNNING'] } }, { populate: ['queue'] });
    for (const job of jobs) if (!running.has(job.id) && job.admission) await this.outbox.startOnBackend(job);
  }

  // ─── the cycle ───

  private async runCycle(term: number): Promise<void> {
    if (!this.current(term) || this.paused) return;
    const result = this.core.cycle();
    this.announceWindowChanges();
    if (result.admitted.length === 0 && result.preempted.length === 0) return this.stateChanged();
    // On failure the core is ahead of the database: failed() pauses until a rebuild (or demotes).
    const skipped = await persistCycle(this.writer(), this.core, result);
    if (!this.current(term)) return;
    // Jobs cancelled while the cycle ran: give back what the core reserved for them.
    for (const jobId of skipped) if (this.knows(jobId)) this.core.cancel(jobId);
    this.options.events.publish('scheduler-state', { at: result.at });
    this.stateChanged();
    await this.outbox.dispatch();
    // Admissions may free a StrictFIFO queue or leave room for the next head.
    this.wake();
  }

  // ─── what the backend reports ───

  private onBackendEvent(event: BackendEvent): void {
    if (!this.leader) return;
    if (event.type === 'utilization') {
      this.utilization.set(event.jobId, event.gpuUtilization);
      return;
    }
    const term = this.term;
    this.run(async () => {
      if (!this.current(term)) return;
      if (this.paused) return void this.unwritten.push(event);
      try {
        await this.writeBackendEvent(event, term);
      } catch (error) {
        // Written again after recovery (a repeated report changes nothing: states are checked).
        if (!(error instanceof StaleLeaderError)) this.unwritten.push(event);
        throw error;
      }
    }, term);
  }

  private async writeBackendEvent(event: Writable, term: number): Promise<void> {
    const { finished } = await applyBackendEvent(this.writer(), event);
    if (!this.current(term)) return;
    if (finished && this.knows(event.jobId)) this.core.finish(event.jobId);
    await this.outbox.dispatch();
    if (finished) {
      this.options.events.publish('scheduler-state', { at: event.at });
      this.stateChanged();
      this.wake();
    }
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
    })().catch((error) => this.options.logError(error));
    this.unsubscribers.push(() => {
      active = false;
      void iterator.return?.();
    });
  }
}
