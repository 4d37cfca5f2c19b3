import type { EntityManager } from '@mikro-orm/core';
import type { JobSpec } from '../../core/scheduling/index.js';
import type { SchedulerInput } from '../../events/index.js';
import { Job } from '../../persistence/jobs/index.js';
import { systemEntityManager } from '../../persistence/tenant-filter.js';
import type { WritableBackendEvent } from './backend-events.js';
import { applyInPlace, loadConfig } from './config-reload.js';
import { loadCore, requeueDoubleBooked } from './core-loader.js';
import { type FencedWriter, writeFenced } from './cycle-writer.js';
import { type CycleSession, LeaderCycles } from './leader-cycles.js';
import { StaleLeaderError } from './leader-epoch.js';
import type { LeaderHost } from './leader-host.js';
import { LeaderReports } from './leader-reports.js';
import type { LeaderTask } from './leader-task.js';
import { inChunks, readLiveJobs } from './live-jobs.js';
import { chargeRunningJobs } from './metering-checkpoint.js';
import { jobSpec } from './specs.js';

export { DEFAULT_CYCLE_SLICE_MS } from './leader-cycles.js';
export type { LeaderHost } from './leader-host.js';
export type { LeaderTask, LeaderTaskContext } from './leader-task.js';

type Writable = WritableBackendEvent;

/**
 * One term of leadership, from a takeover (with its epoch) to the demotion that ends it:
 * admission cycles, inputs, backend reports, resyncs, and the pause while the database
 * fails. Everything it writes is fenced by its epoch. Once ended, nothing queued by it
 * does anything more: timers are cleared and each step checks `ended` after each await.
 */
export class LeaderSession {
  private ended = false;
  /** The core may hold decisions the database does not: no cycles until a rebuild succeeds. */
  private paused = false;
  private wakeTimer: NodeJS.Timeout | null = null;
  private resyncTimer: NodeJS.Timeout | null = null;
  private recoveryTimer: NodeJS.Timeout | null = null;
  private meteringTimer: NodeJS.Timeout | null = null;
  private readonly taskTimers = new Map<string, NodeJS.Timeout>();
  /** Whether the backend has been reconciled with the database in this term (retried by resync until it is).
   *
   */
  private reconciled = false;
  /** Admission cycles and their slices (leader-cycles.ts). */
  private readonly cycles: LeaderCycles;
  /** Backend reports, grouped per turn and kept while the database fails (leader-reports.ts). */
  private readonly reports: LeaderReports;

  constructor(
    private readonly host: LeaderHost,
    readonly epoch: number,
  ) {
    const session: CycleSession = {
      host,
      ended: () => this.ended,
      paused: () => this.paused,
      writer: () => this.writer(),
      knows: (jobId) => this.knows(jobId),
      run: (work) => this.run(work),
      dispatchSoon: () => this.dispatchSoon(),
      announceWindows: () => this.announceWindows(),
      wake: () => this.wake(),
    };
    this.cycles = new LeaderCycles(session);
    this.reports = new LeaderReports(session);
  }

  /** Rebuilds from the database and performs what the previous leader left undone. */
  async begin(): Promise<void> {
    await this.host
      .serial(async () => {
        if (this.ended) return;
        await this.rebuild();
        await this.host.outbox.dispatch();
        await this.reconcileBackend();
      })
      .catch((error) => this.failed(error));
    // Submits another replica's leader acknowledged during the handover reached only its
    // own core: an early first resync picks them up from the database. (SQLite has one process.)
    const every = this.host.options.resyncIntervalMs ?? 30_000;
    this.scheduleResync(this.host.options.dialect === 'postgresql' ? Math.min(every, 2000) : every);
    this.scheduleCheckpoint();
    for (const task of this.host.options.leaderTasks ?? []) this.scheduleTask(task);
    this.wake();
  }

  end(): void {
    this.ended = true;
    for (const timer of [this.wakeTimer, this.resyncTimer, this.recoveryTimer, this.meteringTimer])
      if (timer) clearTimeout(timer);
    this.wakeTimer = this.resyncTimer = this.recoveryTimer = this.meteringTimer = null;
    for (const timer of this.taskTimers.values()) clearTimeout(timer);
    this.taskTimers.clear();
  }

  /** Asks for an admission cycle soon; bursts of wake-ups coalesce into one cycle. */
  wake(): void {
    if (this.ended || this.paused || this.wakeTimer) return;
    this.wakeTimer = setTimeout(() => {
      this.wakeTimer = null;
      this.run(() => this.cycles.runCycle());
    }, this.host.options.debounceMs ?? 5);
  }

  /** A job stored as pending by this replica: its spec goes into the core as is. */
  submitted(spec: JobSpec): void {
    this.run(async () => {
      if (this.ended || this.paused || this.knows(spec.id)) return;
      this.host.core.submit(spec);
      this.wake();
    });
  }

  input(input: SchedulerInput): void {
    this.run(async () => {
      if (this.ended || this.paused) return;
      if (input.kind === 'config') {
        await this.reconfigure();
      } else if (input.kind === 'submitted') {
        if (this.knows(input.jobId)) return;
        const job = await this.em().findOne(Job, { id: input.jobId }, { populate: ['queue'] });
        if (this.ended || !job || job.state !== 'PENDING' || this.knows(job.id)) return;
        this.host.core.submit(jobSpec(job, job.queue.name, this.host.loaderOptions.timeScale));
      } else if (input.kind === 'budgets') {
        await this.refreshHolds();
      } else if (input.kind === 'cancelled') {
        if (this.knows(input.jobId)) this.host.core.cancel(input.jobId);
        await this.host.outbox.dispatch();
      }
      this.wake();
    });
  }

  /** A backend report: written with the others of its group-commit window on the leader's next turn. */
  backendEvent(event: Writable): void {
    this.reports.add(event);
  }

  /**
   * A configuration change was committed: applied to the live core in place when it only alters
   * queue and cohort specs (config-reload.ts), else a rebuild; then a cycle evaluates the pending
   * jobs again.
   */
  async reconfigure(): Promise<void> {
    const stored = await loadConfig(this.em(), this.host.loaderOptions.timeScale);
    if (this.ended) return;
    if (applyInPlace(this.host.core, stored)) this.host.reconfigured(stored.queueIds);
    else await this.rebuild();
    this.wake();
  }

  /**
   * Builds a fresh core from the database and installs it. The restore check's double
   * bookings are put back to pending in the database (fenced) and reported.
   */
  async rebuild(): Promise<void> {
    const { options } = this.host;
    const loaded = await loadCore(this.em(), this.host.loaderOptions, true);
    if (this.ended) return;
    if (loaded.doubleBooked.length) {
      const requeued = await requeueDoubleBooked(this.writer(), loaded.doubleBooked, options.now());
      for (const conflict of loaded.doubleBooked.filter((c) => requeued.includes(c.jobId))) {
        options.logError(
          new Error(
            `restore: job ${conflict.jobId} was admitted onto GPUs ${conflict.gpus.join(', ')} already held by ${conflict.heldBy.join(', ')}; put back to pending and suspended on the backend`,
          ),
        );
      }
    }
    this.host.install(loaded);
  }

  // ─── internals ───

  private em(): EntityManager {
    return systemEntityManager(this.host.options.orm);
  }

  private writer(): FencedWriter {
    return {
      em: this.em(),
      dialect: this.host.options.dialect,
      epochs: this.host.epochs,
      epoch: this.epoch,
      metering: this.host.metering,
    };
  }

  private knows(jobId: string): boolean {
    return this.host.core.jobState(jobId) !== undefined;
  }

  /**
   * Performs the outbox without holding the leader's serial work: backend calls (a round trip
   * each on Kubernetes) must not delay the next cycle or the next report. The dispatcher runs
   * one pass at a time and again for rows written meanwhile; a failure pauses as any other.
   */
  private dispatchSoon(): void {
    if (this.ended) return;
    void this.host.outbox.dispatch().catch((error) => this.failed(error));
  }

  /** Leader work without a waiting caller: its failure pauses or demotes, never escapes. */
  private run(work: () => Promise<void>): void {
    void this.host.serial(work).catch((error) => this.failed(error));
  }

  /**
   * Work of this session failed. A refused write means another replica leads: demote.
   * Anything else is the database failing: pause until a rebuild from it succeeds.
   */
  private failed(error: unknown): void {
    if (error instanceof StaleLeaderError) {
      if (!this.ended) this.host.demote(error.message);
      return;
    }
    this.host.options.logError(error);
    if (this.ended || this.paused) return;
    this.paused = true;
    if (this.wakeTimer) clearTimeout(this.wakeTimer);
    this.wakeTimer = null;
    this.host.log('scheduling paused: the database failed; retrying until it answers');
    this.scheduleRecovery();
  }

  private scheduleRecovery(): void {
    this.recoveryTimer = setTimeout(() => {
      this.recoveryTimer = null;
      this.host
        .serial(async () => {
          if (this.ended) return;
          await this.rebuild();
          await this.reports.writeUnwritten();
          await this.host.outbox.dispatch();
        })
        .then(
          () => {
            if (this.ended) return;
            this.paused = false;
            this.host.log('scheduling resumed: the database answers again');
            this.wake();
          },
          (error) => {
            if (error instanceof StaleLeaderError) return this.failed(error);
            if (!this.ended) this.scheduleRecovery();
          },
        );
    }, this.host.options.recoveryRetryMs ?? 1000);
    this.recoveryTimer.unref();
  }

  private scheduleResync(afterMs: number): void {
    if (this.ended) return;
    this.resyncTimer = setTimeout(() => {
      this.resyncTimer = null;
      void this.host
        .serial(() => this.resync())
        .catch((error) => this.failed(error))
        .finally(() => this.scheduleResync(this.host.options.resyncIntervalMs ?? 30_000));
    }, afterMs);
    this.resyncTimer.unref();
  }

  /**
   * Makes the backend run exactly the admitted jobs (adopt, start, remove orphans). A backend
   * that fails here (its API briefly down) is not a database failure: it is said and retried
   * at each resync until it succeeds, while scheduling goes on.
   */
  private async reconcileBackend(): Promise<void> {
    if (this.reconciled || this.ended) return;
    try {
      await this.host.outbox.reconcileBackend();
      this.reconciled = true;
    } catch (error) {
      this.host.options.logError(error);
      this.host.log('could not reconcile the backend with the database; retrying at the next resync');
    }
  }

  /** Brings the core in line with the database (jobs written while a wake-up was lost). */
  private async resync(): Promise<void> {
    if (this.ended || this.paused) return;
    await this.reconcileBackend();
    // Plain rows in pages (live-jobs.ts): with 10,000 jobs pending, hydrating them all as entities at
    // every resync stalled the API for as long.
    const names = new Map([...this.host.queueIds].map(([name, id]) => [id, name]));
    const pending = await readLiveJobs(this.em(), names, this.host.loaderOptions.timeScale, {
      pendingOnly: true,
    });
    if (this.ended) return;
    await inChunks(pending, (job) => {
      if (!this.ended && !this.knows(job.id)) this.host.core.submit(job.spec);
    });
    if (this.ended) return;
    await this.host.outbox.dispatch();
    // Charges written by other replicas (cancels) and a new month move budgets too.
    await this.refreshHolds();
    this.announceWindows();
    // Time windows open and close with the clock, not with events: a periodic cycle lets
    // a closed window's excess become reclaimable and an opened one's quota be used.
    this.wake();
  }

  private scheduleTask(task: LeaderTask): void {
    if (this.ended) return;
    const timer = setTimeout(
      () => {
        this.taskTimers.delete(task.name);
        void this.host
          .serial(() => this.runTask(task))
          .catch((error) => this.failed(error))
          .finally(() => this.scheduleTask(task));
      },
      Math.max(1, task.everyMs()),
    );
    timer.unref();
    this.taskTimers.set(task.name, timer);
  }

  /** One run of a periodic task (in the serial turn); skipped while paused. */
  async runTask(task: LeaderTask): Promise<void> {
    if (this.ended || this.paused) return;
    await task.run({
      now: this.host.options.now(),
      core: this.host.core,
      queueStatus: (name) => this.host.queueStatus(name),
      queueIds: this.host.queueIds,
      events: this.host.options.events,
      timeScale: this.host.loaderOptions.timeScale ?? 1,
      em: () => this.em(),
      write: (work) => writeFenced(this.writer(), (em) => work(em)),
      wake: () => this.wake(),
      reloadConfig: () => this.reconfigure(),
      ended: () => this.ended,
    });
  }

  private scheduleCheckpoint(): void {
    if (this.ended) return;
    this.meteringTimer = setTimeout(() => {
      this.meteringTimer = null;
      void this.host
        .serial(() => this.checkpoint())
        .catch((error) => this.failed(error))
        .finally(() => this.scheduleCheckpoint());
    }, this.host.options.meteringIntervalMs ?? 60_000);
    this.meteringTimer.unref();
  }

  /**
   * Writes every running job's open interval to the ledger (usage shows while jobs run, not
   * only when they end), in fenced batches: each batch's rows and the jobs' new `meteredFrom`
   * commit together. Skipped while paused: the next checkpoint after recovery charges it all.
   */
  async checkpoint(): Promise<void> {
    if (this.ended || this.paused) return;
    const now = this.host.options.now();
    await chargeRunningJobs(
      () => this.writer(),
      this.host.metering,
      now,
      () => this.ended,
    );
    // Budget thresholds once per checkpoint (alerts are fenced writes too), then the holds:
    // what was just charged may exhaust a hard budget, whose jobs wait from the next cycle on.
    if (this.ended) return;
    await writeFenced(this.writer(), (em) => this.host.metering.checkpointed(em, now));
    // A threshold crossed is an outbox row (the alert event and its audit entry): sent now, not with
    // the next cycle's dispatch.
    this.dispatchSoon();
    await this.refreshHolds();
  }

  /** Sets the core's admission holds from the budgets and this month's spend; a change wakes a cycle. */
  private async refreshHolds(): Promise<void> {
    if (this.ended || this.paused || !this.host.loaderOptions.holds) return;
    const holds = await this.host.loaderOptions.holds(this.em());
    if (this.ended) return;
    // The common case, no hard budget spent before or now: nothing moved, so no subscriber's
    // position is recomputed and no cycle is woken on every resync and checkpoint.
    if (holds.length === 0 && !this.host.core.hasAdmissionHolds()) return;
    this.host.core.setAdmissionHolds(holds);
    // No state-change tick here: the cycle this wakes ends with one (see leader-reports.ts).
    this.wake();
  }

  private announceWindows(): void {
    this.host.windows.announce(this.host.queueIds, (name) => this.host.queueStatus(name));
  }
}
