// The simulated cluster: the embedded default execution backend. Runs each admitted job for
// its declared duration (scaled), reports success or failure, samples GPU utilization and memory
// from the seeded utilization model of the job's declared workload type (training when undeclared).

import { type UtilizationProfile, utilizationAt, utilizationProfile } from '../../core/governance/index.js';
import type {
  BackendEvent,
  BackendJob,
  BackendLogRun,
  ExecutionBackend,
  ServiceLoadQuery,
  ServiceLoadReading,
} from '../port.js';
import { DEFAULT_LOG_ARCHIVE_BYTES, podLogEvents, SimulatedLogs, simulatedRunOf } from './logs.js';
import { type Ending, finiteNonNegative, mulberry32, planEnding, SIMULATED_FAILURE } from './outcomes.js';
import { modelledLoad } from './service-load.js';

export {
  MAX_RUN_TIME_EXCEEDED,
  mulberry32,
  readSimulateDirective,
  SIMULATED_FAILURE,
  type SimulateDirective,
} from './outcomes.js';

import { LongTimeout, systemTimers, type Timers } from './timers.js';

export type { Timers } from './timers.js';

export interface SimulatedBackendOptions {
  /** Declared time / real time: 60 runs a declared hour in one real minute. Default 1. */
  timeScale?: number;
  /** Source of `at` in events (ms epoch). Default `Date.now`. */
  now?: () => number;
  /** Default: the global timers, looked up at call time (so `vi.useFakeTimers()` applies). */
  timers?: Timers;
  /** 0..1: chance that a job with a declared duration fails at a random point. Default 0. */
  failureRate?: number;
  /** Seed of the PRNG behind failures and utilization. Default 1. */
  seed?: number;
  /** Real ms between utilization samples of each running GPU job. Default 5000; 0 disables. */
  utilizationIntervalMs?: number;
  /** Real ms between `start()` and the `started` event. Default 0 (still asynchronous). */
  startDelayMs?: number;
  /** What each pod's log archive keeps when its run ends (bytes). Default 1 MiB. */
  logArchiveBytes?: number;
  /** Called when a listener throws; delivery to the others goes on. Default `console.error`. */
  onListenerError?: (error: unknown, event: BackendEvent) => void;
}

/** Finished runs remembered so a replayed `start` of the same admission is a no-op. */
const FINISHED_MEMORY = 10_000;

interface Run {
  job: BackendJob;
  /** Identifies the admission this run belongs to. */
  key: string;
  /** Declared ms after `started` at which the run ends, and how; null = runs until stopped. */
  ending: Ending | null;
  /** The job's seeded utilization model (core/governance/utilization-model.ts, by its declared workload
   * type).
   */
  profile: UtilizationProfile;
  /** Samples taken in this run (the model's jitter is drawn per sample index). */
  samples: number;
  /** The job's own failures retried in place so far (up to its maxRetries). */
  retries: number;
  /** Declared ms of work done before this run (kept from suspended runs of a checkpointing job). */
  offset: number;
  /** `now()` at `started`; undefined until then. */
  startedAt?: number;
  timeouts: LongTimeout[];
  interval?: unknown;
}

function requestsGpus(job: BackendJob): boolean {
  return job.podSets.some((ps) => ps.count > 0 && (ps.perPod.gpu ?? 0) > 0);
}

function admissionKey(job: BackendJob): string {
  return `${job.admission.at}`;
}

export class SimulatedBackend implements ExecutionBackend {
  readonly name = 'simulated';

  /** Declared time / real time (the port's `timeScale`): the core sees durations divided by it. */
  readonly timeScale: number;
  private readonly now: () => number;
  private readonly timers: Timers;
  private readonly failureRate: number;
  private readonly utilizationIntervalMs: number;
  private readonly startDelayMs: number;
  private readonly onListenerError: (error: unknown, event: BackendEvent) => void;
  /** Outcomes depend only on the order of start() calls; utilization only on the seed and the job (the
   * model).
   */
  private readonly outcomeRng: () => number;
  private readonly seed: number;
  private readonly logArchiveBytes: number;
  /** Job logs, computed from the run (logs.ts). */
  readonly logs: SimulatedLogs;
  /** The same reader, told when a run stops (a test may wrap `logs`). */
  private readonly runLogs: SimulatedLogs;

  private readonly runs = new Map<string, Run>();
  private readonly finished = new Map<string, string>();
  /** Declared ms of work a suspended checkpointing job keeps for its next run (its last checkpoint). */
  private readonly progress = new Map<string, number>();
  private readonly listeners = new Set<(event: BackendEvent) => void>();
  private closed = false;

  constructor(options: SimulatedBackendOptions = {}) {
    const timeScale = options.timeScale ?? 1;
    if (!(Number.isFinite(timeScale) && timeScale > 0))
      throw new RangeError(`timeScale must be a positive number, got ${timeScale}`);
    const failureRate = options.failureRate ?? 0;
    if (!(failureRate >= 0 && failureRate <= 1))
      throw new RangeError(`failureRate must be in [0, 1], got ${failureRate}`);
    const interval = options.utilizationIntervalMs ?? 5000;
    if (!(Number.isFinite(interval) && interval >= 0))
      throw new RangeError(`utilizationIntervalMs must be >= 0, got ${interval}`);
    const startDelay = options.startDelayMs ?? 0;
    if (!(Number.isFinite(startDelay) && startDelay >= 0))
      throw new RangeError(`startDelayMs must be >= 0, got ${startDelay}`);

    this.timeScale = timeScale;
    this.failureRate = failureRate;
    this.utilizationIntervalMs = interval;
    this.startDelayMs = startDelay;
    this.now = options.now ?? Date.now;
    this.timers = options.timers ?? systemTimers;
    this.onListenerError =
      options.onListenerError ??
      ((error, event) =>
        console.error(`simulated backend: a listener threw on ${event.type} of ${event.jobId}`, error));
    const seed = Math.trunc(options.seed ?? 1);
    this.outcomeRng = mulberry32(seed);
    this.seed = seed;
    this.logArchiveBytes = options.logArchiveBytes ?? DEFAULT_LOG_ARCHIVE_BYTES;
    this.runLogs = new SimulatedLogs(this.timeScale, this.now, () => this.timers);
    this.logs = this.runLogs;
  }

  /** The modelled load of a service over the replicas of it that run (service-load.ts). */
  async serviceLoad(query: ServiceLoadQuery): Promise<ServiceLoadReading> {
    const ready = query.replicaJobIds.filter((id) => this.runs.get(id)?.startedAt !== undefined).length;
    return modelledLoad(query, ready);
  }

  /**
   * Idempotent: a job already running (or about to emit `started`) is left alone; a replayed
   * start of an admission that already finished is a no-op; a suspended job starts from zero.
   */
  async start(job: BackendJob): Promise<void> {
    if (this.closed) throw new Error('simulated backend is closed');
    if (this.runs.has(job.jobId)) return;
    const key = admissionKey(job);
    if (this.finished.get(job.jobId) === key) return;
    this.finished.delete(job.jobId);

    // Always draw the same numbers per start, so forced outcomes don't shift later jobs' luck.
    const uFail = this.outcomeRng();
    const uPoint = this.outcomeRng();
    // Drawn as before the utilization model existed, so the outcome stream (later jobs' luck) is unchanged.
    void this.outcomeRng();
    // A job that checkpoints resumes from the work its last run kept; any other starts from zero.
    const offset = job.checkpoint ? (this.progress.get(job.jobId) ?? 0) : 0;
    const run: Run = {
      job,
      key,
      ending: planEnding(job, this.failureRate, uFail, uPoint, offset),
      // Undeclared jobs are modelled as training; the whole declared run (all its runs) is the model's time
      // line.
      profile: utilizationProfile(
        this.seed,
        job.jobId,
        job.workloadType ?? 'TRAINING',
        finiteNonNegative(job.expectedDurationMs) ?? Infinity,
      ),
      samples: 0,
      retries: 0,
      offset,
      timeouts: [],
    };
    this.runs.set(job.jobId, run);
    run.timeouts.push(new LongTimeout(this.timers, this.startDelayMs, () => this.onStarted(run)));
  }

  async suspend(jobId: string, _reason: string): Promise<void> {
    // The reason is the scheduler's to record; a real cluster would only see "suspend".
    this.keepProgress(jobId);
    this.archive(jobId, 'preempted', null);
    this.stop(jobId);
  }

  /**
   * Stops a run as a cluster would (an eviction, a drained or lost node): the run keeps what its
   * checkpoint kept, as when suspended, and 'disrupted' is reported. For tests and demos; false
   * when the job is not running here.
   */
  disrupt(jobId: string, reason = 'DisruptionTarget: the node was drained'): boolean {
    if (!this.runs.has(jobId)) return false;
    this.keepProgress(jobId);
    this.archive(jobId, 'disrupted', reason);
    this.stop(jobId);
    const at = this.now();
    queueMicrotask(() => this.emit({ type: 'disrupted', jobId, at, reason }));
    return true;
  }

  async cancel(jobId: string): Promise<void> {
    this.archive(jobId, 'cancelled', null);
    this.stop(jobId);
    this.finished.delete(jobId);
    this.progress.delete(jobId);
  }

  /** Declared ms of work a suspended job will resume from (0: it restarts from zero). */
  resumePoint(jobId: string): number {
    return this.progress.get(jobId) ?? 0;
  }

  /**
   * A run being suspended: a resumable job keeps all its work, one with a checkpoint interval the
   * work up to its last checkpoint (every `intervalMs` of work, counted over all its runs), any other
   * nothing. A run suspended before it started keeps what it had.
   */
  private keepProgress(jobId: string): void {
    const run = this.runs.get(jobId);
    if (!run) return;
    const checkpoint = run.job.checkpoint;
    if (!checkpoint || (!checkpoint.resumable && !(checkpoint.intervalMs! > 0))) {
      this.progress.delete(jobId);
      return;
    }
    const ran = run.startedAt === undefined ? 0 : Math.max(0, this.now() - run.startedAt) * this.timeScale;
    const total = run.offset + ran;
    const kept = checkpoint.resumable
      ? total
      : Math.floor(total / checkpoint.intervalMs!) * checkpoint.intervalMs!;
    this.progress.set(jobId, Math.max(run.offset, kept));
  }

  onEvent(listener: (event: BackendEvent) => void): () => void {
    // Wrapped so the same function subscribed twice gets two independent subscriptions.
    const wrapped = (event: BackendEvent) => listener(event);
    this.listeners.add(wrapped);
    return () => {
      this.listeners.delete(wrapped);
    };
  }

  /** Jobs started and not finished, suspended or cancelled (including those whose `started` is still due). */
  async running(): Promise<string[]> {
    return [...this.runs.keys()];
  }

  /** Starts the live jobs it is not running. Its state is in memory only, so there are no orphans to remove.
   *
   */
  async reconcile(live: BackendJob[]): Promise<void> {
    for (const job of live) if (!this.runs.has(job.jobId)) await this.start(job);
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const jobId of [...this.runs.keys()]) this.stop(jobId);
    this.listeners.clear();
  }

  /** When and how the run ends, in declared ms after `started`; `offset`: work already done by earlier runs. */
  private onStarted(run: Run): void {
    if (!this.isCurrent(run)) return;
    // One reading of the clock: the start of the work done (resume points) and the event's time.
    const at = this.now();
    run.startedAt = at;
    const { ending } = run;
    // Arm the end and sampling before emitting, so a listener that suspends on 'started' clears them.
    if (ending) {
      run.timeouts.push(
        new LongTimeout(this.timers, ending.at / this.timeScale, () => this.onEnded(run, ending)),
      );
    }
    if (this.utilizationIntervalMs > 0 && requestsGpus(run.job)) {
      run.interval = this.timers.setInterval(() => this.sample(run), this.utilizationIntervalMs);
    }
    this.emit({ type: 'started', jobId: run.job.jobId, at });
  }

  private onEnded(run: Run, ending: Ending): void {
    if (!this.isCurrent(run)) return;
    const { jobId } = run.job;
    // The job's own failure with retries left: it runs again in place (its deadline is not a failure to retry).
    if (
      ending.type === 'failed' &&
      ending.reason === SIMULATED_FAILURE &&
      run.retries < (run.job.maxRetries ?? 0)
    ) {
      run.retries++;
      run.timeouts.push(
        new LongTimeout(this.timers, ending.at / this.timeScale, () => this.onEnded(run, ending)),
      );
      return;
    }
    this.stop(jobId);
    this.progress.delete(jobId);
    this.finished.set(jobId, run.key);
    if (this.finished.size > FINISHED_MEMORY) {
      const oldest = this.finished.keys().next().value;
      if (oldest !== undefined) this.finished.delete(oldest);
    }
    const at = this.now();
    this.archive(jobId, ending.type, ending.type === 'failed' ? ending.reason : null, run);
    this.emit(
      ending.type === 'succeeded'
        ? { type: 'succeeded', jobId, at }
        : { type: 'failed', jobId, at, reason: ending.reason },
    );
  }

  /**
   * Hands the output of a run that started to the archive, one 'pod-log' event per pod, as its
   * pods go (asynchronously, as every event).
   */
  private archive(
    jobId: string,
    outcome: Exclude<BackendLogRun['outcome'], 'running'>,
    reason: string | null,
    run = this.runs.get(jobId),
  ): void {
    if (!run || run.startedAt === undefined) return;
    const at = this.now();
    this.runLogs.runEnded(run.job.jobId, run.job.admission.at, at);
    const events = podLogEvents(
      simulatedRunOf(run.job, run.startedAt, at, outcome, reason),
      this.timeScale,
      at,
      this.logArchiveBytes,
    );
    queueMicrotask(() => {
      for (const event of events) this.emit(event);
    });
  }

  private sample(run: Run): void {
    if (!this.isCurrent(run)) return;
    const at = this.now();
    // Declared ms into the job's work (a resumed run continues where its checkpoint left it).
    const runMs = run.offset + Math.max(0, at - (run.startedAt ?? at)) * this.timeScale;
    const reading = utilizationAt(this.seed, run.job.jobId, run.profile, runMs, run.samples++);
    this.emit({
      type: 'utilization',
      jobId: run.job.jobId,
      at,
      gpuUtilization: reading.gpu,
      memoryUtilization: reading.memory,
    });
  }

  private isCurrent(run: Run): boolean {
    return !this.closed && this.runs.get(run.job.jobId) === run;
  }

  private stop(jobId: string): void {
    const run = this.runs.get(jobId);
    if (!run) return;
    this.runs.delete(jobId);
    for (const t of run.timeouts) t.clear();
    if (run.interval !== undefined) this.timers.clearInterval(run.interval);
  }

  private emit(event: BackendEvent): void {
    for (const listener of [...this.listeners]) {
      // A listener may close the backend or unsubscribe another one mid-delivery.
      if (this.closed) return;
      if (!this.listeners.has(listener)) continue;
      try {
        listener(event);
      } catch (error) {
        try {
          this.onListenerError(error, event);
        } catch {
          // An error reporter that throws must not break delivery either.
        }
      }
    }
  }
}
