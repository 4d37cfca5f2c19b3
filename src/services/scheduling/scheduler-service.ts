import type { EntityManager } from '@mikro-orm/core';
import type { BackendEvent } from '../../backends/port.js';
import type {
  JobExplanation,
  JobSpec,
  Preview,
  QueueStatus,
  Scheduler,
} from '../../core/scheduling/index.js';
import type { SchedulerInput } from '../../events/index.js';
import { systemEntityManager } from '../../persistence/tenant-filter.js';
import { Metering } from '../metering/index.js';
import { type CoreLoaderOptions, type LoadedCore, loadCore } from './core-loader.js';
import { FollowerModel } from './follower-model.js';
import { LeaderEpochs } from './leader-epoch.js';
import { type LeaderHost, LeaderSession } from './leader-session.js';
import { OutboxDispatcher } from './outbox.js';
import type { SchedulerServiceOptions, SchedulerStats } from './scheduler-options.js';
import { schedulerStats, type WorkloadCheck, workloadProblemOn } from './scheduler-reads.js';
import { listenTo, WindowAnnouncer } from './service-helpers.js';
import { inBackendTime } from './specs.js';

/** The preemption loss as the ledger counts it, for /metrics (src/server/metrics/registry.ts). */
export { lostGpuHoursOf } from './cycle-writer.js';

export type { SchedulerServiceOptions, SchedulerStats } from './scheduler-options.js';

/**
 * Runs the scheduler core in-process and keeps it and the database in step: the façade the
 * graph and the use cases see. Its jobs live next to it: core-loader (the core from the
 * database, with the restore check), cycle-writer (a cycle's decisions), outbox (side
 * effects), backend-events (what runs report), leader-epoch (fencing), leadership (the lock
 * and its loss) and leader-session (one term of leadership).
 *
 * The leader (SQLite's only process, or the holder of PostgreSQL's advisory lock) runs a
 * LeaderSession from its takeover, with a new epoch, until it demotes itself: the moment
 * the lock is lost, or when a write is refused for a stale epoch. Followers keep a read
 * model rebuilt from the database, for positions and queue usage, and campaign for the lock.
 */
export class SchedulerService {
  private core!: Scheduler;
  private queueIds = new Map<string, string>();
  private readonly epochs: LeaderEpochs;
  private readonly outbox: OutboxDispatcher;
  private readonly windows: WindowAnnouncer;
  private session: LeaderSession | null = null;
  private campaigning = false;
  private stopped = false;
  private leaderTimer: NodeJS.Timeout | null = null;
  /** Leader work (cycles, inputs, backend events, rebuilds) runs one at a time in this chain. */
  private chain: Promise<unknown> = Promise.resolve();
  /** The read model while this replica follows (follower-model.ts). */
  private readonly follower: FollowerModel;
  private readonly unsubscribers: (() => void)[] = [];
  private readonly utilization = new Map<string, number>();
  private readonly stateListeners = new Set<() => void>();
  private lastCampaignError: string | null = null;
  /** Losses of the lock so far: one during a takeover makes that takeover void. */
  private lockLosses = 0;
  private readonly loaderOptions: CoreLoaderOptions;
  /** The ledger's writer with this installation's settings (any replica charges a cancel). */
  readonly metering: Metering;

  constructor(private readonly options: SchedulerServiceOptions) {
    this.epochs = new LeaderEpochs(options.dialect);
    this.metering = new Metering({
      timeScale: options.backend.timeScale,
      stopGraceSeconds: options.backend.stopGraceSeconds,
      dialect: options.dialect,
      currency: options.metering?.currency ?? 'USD',
      afterCheckpoint: options.metering?.afterCheckpoint,
      holds: options.metering?.holds,
    });
    this.loaderOptions = {
      now: options.now,
      placement: options.placement ?? 'best-fit',
      timeScale: options.backend.timeScale,
      logError: options.logError,
      holds: (em) => this.metering.holdsAt(em, options.now()),
    };
    this.outbox = new OutboxDispatcher({ ...options, utilization: this.utilization });
    this.windows = new WindowAnnouncer(options.events, options.now);
    this.follower = new FollowerModel({
      loaderOptions: this.loaderOptions,
      leading: () => this.session !== null,
      stopped: () => this.stopped,
      em: () => this.systemEm(),
      core: () => this.core,
      install: (loaded) => this.install(loaded),
      reconfigured: (queueIds) => this.reconfigured(queueIds),
      logError: (error) => options.logError(error),
      recoveryRetryMs: options.recoveryRetryMs,
    });
  }

  private log(message: string): void {
    if (this.options.log) this.options.log(message);
    else console.log(`[fairway] scheduler: ${message}`);
  }

  /**
   * Called (in this process) when positions, ETAs or usage may have changed: once at the
   * end of each admission cycle and after each rebuild. A finish or a holds change wakes a
   * cycle, whose end is the call (leader-session.ts).
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
    return this.session !== null;
  }

  async start(): Promise<void> {
    await this.rebuild();
    const { events, logError, leadership, backend } = this.options;
    this.unsubscribers.push(
      leadership.onLost((reason) => {
        this.lockLosses++;
        this.demote(`lost the scheduler lock (${reason})`);
      }),
      listenTo(events, 'scheduler-input', (input: SchedulerInput) => this.onInput(input), logError),
      listenTo(events, 'scheduler-state', () => !this.session && this.follower.scheduleRebuild(50), logError),
      backend.onEvent((event) => this.onBackendEvent(event)),
    );
    await this.tryLead();
    if (!this.session) this.campaign();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.session?.end();
    this.session = null;
    this.follower.stop();
    if (this.leaderTimer) clearInterval(this.leaderTimer);
    for (const unsubscribe of this.unsubscribers) unsubscribe();
    await this.chain.catch(() => undefined);
    await this.outbox.stop();
    await this.options.leadership.release();
  }

  // ─── reads (any replica) ───

  /** Why the backend cannot run this workload kind as asked (port.ts workloadProblem), or null. */
  workloadProblem(input: WorkloadCheck): Promise<string | null> {
    return workloadProblemOn(this.options.backend, input);
  }

  /** Validates a job against the current configuration without changing anything. */
  preview(spec: JobSpec): Preview {
    return this.core.preview(inBackendTime(spec, this.loaderOptions.timeScale));
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

  stats(): SchedulerStats {
    return schedulerStats(
      this.options.orm,
      () => this.isLeader,
      (name) => this.queueStatus(name),
    );
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
    if (this.session) this.session.submitted(inBackendTime(spec, this.loaderOptions.timeScale));
    else this.announce({ kind: 'submitted', jobId: spec.id });
  }

  /** Asks for an admission cycle soon (leader only); bursts of wake-ups coalesce into one cycle. */
  wake(): void {
    this.session?.wake();
  }

  /** Runs the named leader task now in the leader's serial turn; false on a follower or for an unknown task. */
  async runLeaderTask(name: string): Promise<boolean> {
    const session = this.session;
    const task = this.options.leaderTasks?.find((t) => t.name === name);
    if (!session || !task) return false;
    await this.serial(() => session.runTask(task));
    return true;
  }

  /** Writes running jobs' open intervals to the ledger now (the leader does it every meteringIntervalMs); a
   * follower does nothing.
   */
  async checkpointUsage(): Promise<void> {
    const session = this.session;
    if (session) await this.serial(() => session.checkpoint());
  }

  /** Performs every outbox row not yet performed, oldest first. */
  async dispatchOutbox(): Promise<void> {
    await this.outbox.dispatch();
  }

  private onBackendEvent(event: BackendEvent): void {
    // A pod's log for the archive is the logs service's (it listens to the backend itself).
    if (!this.session || event.type === 'pod-log') return;
    if (event.type === 'utilization') {
      this.utilization.set(event.jobId, event.gpuUtilization);
      this.metering.utilization.record(event.jobId, event.at, event.gpuUtilization);
      for (const task of this.options.leaderTasks ?? []) task.onUtilization?.(event);
    } else this.session.backendEvent(event);
  }

  // ─── leadership ───

  private campaign(): void {
    if (this.leaderTimer || this.stopped) return;
    this.leaderTimer = setInterval(() => void this.tryLead(), this.options.leaderRetryMs ?? 2000);
    this.leaderTimer.unref();
  }

  /** Takes the lock if free, bumps the epoch, and leads from a fresh rebuild. Never throws. */
  private async tryLead(): Promise<void> {
    if (this.session || this.stopped || this.campaigning) return;
    this.campaigning = true;
    try {
      const { leadership } = this.options;
      const losses = this.lockLosses;
      if (!(await leadership.tryAcquire())) return;
      if (this.stopped) return void (await leadership.release());
      // The takeover's epoch bump waits for an old leader's write in flight (row lock), so
      // the rebuild that follows reads everything the old leader managed to store.
      const epoch = await this.epochs.takeOver(this.systemEm()).catch(async (error) => {
        await leadership.release();
        throw error;
      });
      // Lost again while bumping the epoch: another replica may hold the lock now.
      if (this.lockLosses !== losses) return;
      this.lastCampaignError = null;
      if (this.leaderTimer) clearInterval(this.leaderTimer);
      this.leaderTimer = null;
      this.session = new LeaderSession(this.asHost(), epoch);
      this.log(`leading the scheduler (epoch ${epoch})`);
      await this.session.begin();
    } catch (error) {
      // The database is down or refusing: say it once per streak, keep campaigning.
      const message = error instanceof Error ? error.message : String(error);
      if (this.lastCampaignError !== message) this.log(`cannot take the scheduler leadership: ${message}`);
      this.lastCampaignError = message;
    } finally {
      this.campaigning = false;
    }
  }

  /** Stops leading at once: no cycles, timers cancelled, a read model from the database, campaigning again.
   *
   */
  private demote(reason: string): void {
    const session = this.session;
    if (!session) return;
    session.end();
    this.session = null;
    this.log(`stopped leading the scheduler (epoch ${session.epoch}): ${reason}`);
    void this.options.leadership.release().catch(() => undefined);
    this.follower.scheduleRebuild(0);
    this.campaign();
  }

  /** What a leader session may use of this service (its private parts, not the public API). */
  private asHost(): LeaderHost {
    const self = this;
    return {
      options: this.options,
      loaderOptions: this.loaderOptions,
      get core() {
        return self.core;
      },
      queueStatus: (name) => this.queueStatus(name),
      get queueIds() {
        return self.queueIds;
      },
      epochs: this.epochs,
      outbox: this.outbox,
      metering: this.metering,
      windows: this.windows,
      install: (loaded) => this.install(loaded),
      reconfigured: (queueIds) => this.reconfigured(queueIds),
      serial: (work) => this.serial(work),
      stateChanged: () => this.stateChanged(),
      log: (message) => this.log(message),
      demote: (reason) => this.demote(reason),
    };
  }

  // ─── state ───

  private systemEm(): EntityManager {
    return systemEntityManager(this.options.orm);
  }

  private serial<T>(work: () => Promise<T>): Promise<T> {
    const next = this.chain.then(work, work);
    this.chain = next.catch(() => undefined);
    return next;
  }

  /** Builds a fresh core from the database and makes it the current one. */
  async rebuild(): Promise<void> {
    const session = this.session;
    if (session) return this.serial(() => session.rebuild());
    return this.follower.rebuild();
  }

  private install(loaded: LoadedCore): void {
    this.core = loaded.core;
    this.queueIds = loaded.queueIds;
    this.stateChanged();
  }

  private reconfigured(queueIds: Map<string, string>): void {
    this.queueIds = queueIds;
    this.stateChanged();
  }

  /** The leader takes scheduler inputs; a follower's read model takes configuration changes too. */
  private onInput(input: SchedulerInput): void {
    if (this.session) this.session.input(input);
    else if (input.kind === 'config') this.follower.configChanged();
  }

  /**
   * A scratch core with the stored configuration and no jobs, to try a configuration
   * change on before writing it. Build it before opening the write transaction: SQLite
   * has one connection, which that transaction would hold.
   */
  async configSnapshot(): Promise<Scheduler> {
    return (await loadCore(this.systemEm(), this.loaderOptions, false)).core;
  }
}
