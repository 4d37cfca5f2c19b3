// The job-logs use cases the graph calls (ctx.logs): reading a run's lines, following them, the
// cluster's events about a job; and the archive writer fed by the backend's 'pod-log' reports.
import type { MikroORM } from '@mikro-orm/core';
import type { BackendEvent, ExecutionBackend } from '../../backends/port.js';
import { scrubClusterText } from '../../core/logs/index.js';
import type { EventBus } from '../../events/index.js';
import type { JobView } from '../../persistence/jobs/index.js';
import { Tenant } from '../../persistence/tenancy/index.js';
import { badInput } from '../../shared/index.js';
import type { ServiceContext } from '../context.js';
import { archivePodLogs } from './archive.js';
import { LogFanout } from './fanout.js';
import { type FollowQuery, followJobLogs, type LogBatch } from './follow.js';
import { type LogPage, type LogQuery, readJobLogs, requireLogReader } from './read.js';
import { backendRun, jobRuns } from './runs.js';

export interface JobLogsSettings {
  archiveBytes: number;
  followBufferLines: number;
  followFlushMs: number;
}

/** One cluster event as a tenant reads it. */
export interface JobClusterEvent {
  run: number;
  type: 'Normal' | 'Warning';
  reason: string;
  message: string;
  count: number;
  firstSeen: number;
  lastSeen: number;
  object: string;
  podSet: string | null;
  pod: number | null;
}

export class JobLogsService {
  private stopListening: (() => void) | null = null;
  /** Archive writes one at a time: a burst of ended pods is a queue, not a pile of transactions. */
  private archiving: Promise<unknown> = Promise.resolve();
  /** 'pod-log' reports not yet written: the next archive write takes them all. */
  private readonly toArchive: Extract<BackendEvent, { type: 'pod-log' }>[] = [];
  /** One backend follow per pod, shared by this process's streams. */
  readonly fanout: LogFanout | undefined;
  /** Open jobLogs streams: ended (their reads awaited) when the service stops. */
  private readonly openStreams = new Set<() => Promise<void>>();

  constructor(
    private readonly deps: {
      orm: MikroORM;
      backend: ExecutionBackend;
      events: EventBus;
      settings: JobLogsSettings;
      logError: (error: unknown) => void;
    },
  ) {
    this.fanout = deps.backend.logs ? new LogFanout(deps.backend.logs) : undefined;
  }

  /** Starts archiving the backend's 'pod-log' reports. */
  start(): void {
    this.stopListening ??= this.deps.backend.onEvent((event) => this.onBackendEvent(event));
  }

  async stop(): Promise<void> {
    this.stopListening?.();
    this.stopListening = null;
    await Promise.all([...this.openStreams].map((shutDown) => shutDown()));
    await this.archiving.catch(() => undefined);
  }

  /** Job.logs (the caller's rights checked here). */
  read(ctx: ServiceContext, job: JobView, query: LogQuery): Promise<LogPage> {
    return readJobLogs(ctx, this.deps.backend.logs, job, query);
  }

  /** jobLogs: checks the caller may read the job's logs now, then streams them. */
  async follow(ctx: ServiceContext, job: JobView, query: FollowQuery): Promise<AsyncIterable<LogBatch>> {
    await requireLogReader(ctx, job);
    const { settings } = this.deps;
    return followJobLogs(
      {
        orm: this.deps.orm,
        logs: this.deps.backend.logs,
        fanout: this.fanout,
        events: this.deps.events,
        bufferLines: settings.followBufferLines,
        flushMs: settings.followFlushMs,
        open: this.openStreams,
      },
      job.id,
      query,
    );
  }

  /** Job.clusterEvents: what the cluster said about the run's pods and objects, no other tenant named. */
  async clusterEvents(
    ctx: ServiceContext,
    job: JobView,
    runNumber: number | null,
  ): Promise<JobClusterEvent[]> {
    await requireLogReader(ctx, job);
    const logs = this.deps.backend.logs;
    const runs = await jobRuns(ctx.em, job);
    if (runNumber != null && (!Number.isInteger(runNumber) || runNumber < 1 || runNumber > runs.length))
      throw badInput(runs.length ? `run must be between 1 and ${runs.length}.` : 'The job has not run yet.');
    const run = runNumber != null ? runs[runNumber - 1] : runs.at(-1);
    if (!run || !logs) return [];
    const events = await logs.events(backendRun(job, run));
    if (!events.length) return [];
    // The request's own EntityManager (a second connection inside its snapshot would starve SQLite's
    // one), unfiltered for this lookup only: other tenants' slugs are needed to remove them, never shown.
    const others = (
      await ctx.em.find(Tenant, { id: { $ne: job.tenant.id } }, { fields: ['slug'], filters: false })
    ).map((t) => t.slug);
    const scrub = (text: string) =>
      scrubClusterText(text, { keepIds: [job.id, job.tenant.id], otherNames: others });
    return events.map((e) => ({
      run: run.run,
      type: e.type,
      reason: scrub(e.reason),
      message: scrub(e.message),
      count: e.count,
      firstSeen: e.firstSeen,
      lastSeen: e.lastSeen,
      object: scrub(e.object),
      podSet: e.pod?.podSet ?? null,
      pod: e.pod?.index ?? null,
    }));
  }

  private onBackendEvent(event: BackendEvent): void {
    if (event.type !== 'pod-log') return;
    this.toArchive.push(event);
    // A write already queued takes this one too: the pods that end while one is written share the next.
    if (this.toArchive.length > 1) return;
    this.archiving = this.archiving
      .then(() => archivePodLogs(this.deps.orm, this.toArchive.splice(0), this.deps.settings.archiveBytes))
      .catch(this.deps.logError);
  }
}
