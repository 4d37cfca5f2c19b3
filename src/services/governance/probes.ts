// Runtime probes: what the backend reports of running jobs (GPU utilization, GPU memory)
// kept as a time series in job_probe_samples, with a summary on the job, written by the scheduling
// leader. Reports arrive every few seconds per job; a row is written at most once per job per probe
// interval (the reports in between are averaged into it), all the rows due in one transaction.
// Samples older than the retention are deleted by another leader task, in bounded batches.
import type { EntityManager } from '@mikro-orm/core';
import type { BackendEvent, ExecutionBackend } from '../../backends/port.js';
import { AuditEvent } from '../../persistence/audit/index.js';
import { allBound, insertRows, placeholders, runBound, tableOf } from '../../persistence/bound-sql.js';
import { uuidv7 } from '../../persistence/ids.js';
import type { LeaderTask, LeaderTaskContext } from '../scheduling/index.js';

export const DEFAULT_PROBE_INTERVAL_MS = 60_000;
export const DEFAULT_PROBE_RETENTION_HOURS = 168;
/** How often the retention task runs, and how many rows one of its transactions deletes at most. */
export const DEFAULT_PROBE_RETENTION_EVERY_MS = 10 * 60_000;
export const PROBE_RETENTION_BATCH = 5000;
/** Batches per retention run: a backlog (retention shortened, a long outage) is worked off over several
 * runs.
 */
const RETENTION_BATCHES_PER_RUN = 20;
/** Jobs per flush transaction at most: the rest are due at the next flush. */
const FLUSH_BATCH = 500;
/** Audit request id of the leader's probe housekeeping (no request behind it). */
export const PROBES_REQUEST_ID = 'system:probes';

export type ProbeSummary = {
  samples: number;
  meanGpu: number;
  lastGpu: number;
  lastMemory: number | null;
  lastAt: number;
};

export interface ProbeSettings {
  /** At most one stored sample per job per this many ms (FAIRWAY_PROBE_INTERVAL_MS). */
  intervalMs?: number;
  /** How often the leader writes the rows that are due (default min(interval, 5 s)). */
  flushMs?: number;
  /** Samples older than this are deleted (FAIRWAY_PROBE_RETENTION_HOURS). */
  retentionHours?: number;
  retentionEveryMs?: number;
  retentionBatch?: number;
  /** How often a backend that reads a metrics source (Kubernetes: Prometheus) is polled; 0: never. */
  pollMs?: number;
}

/** Reports of one job since its last stored row. */
interface Pending {
  gpuSum: number;
  gpuCount: number;
  memorySum: number;
  memoryCount: number;
  /** The first and last report's time. */
  firstAt: number;
  lastAt: number;
}

const clamp01 = (v: number) => Math.min(1, Math.max(0, v));

/**
 * The leader's probe writer: told every 'utilization' report (onUtilization, synchronous), it writes
 * the rows that are due every `flushMs` in the leader's serial turn, one fenced transaction for all
 * of them. A row is due when its reports span an interval since the job's last row (or since its
 * first report), and is checked against the job's stored summary (its lastAt), so a new leader
 * after a failover keeps the one-row-per-interval rule; the reports the old leader had not written
 * yet are lost (at most one interval per job).
 */
export class ProbeWriter implements LeaderTask {
  readonly name = 'probes.write';
  readonly intervalMs: number;
  private readonly flushMs: number;
  private readonly pending = new Map<string, Pending>();
  /** When each job's last stored row was taken (known from a flush); absent: read from the job's summary. */
  private readonly lastRowAt = new Map<string, number>();

  constructor(settings: ProbeSettings = {}) {
    this.intervalMs = Math.max(1, settings.intervalMs ?? DEFAULT_PROBE_INTERVAL_MS);
    this.flushMs = Math.max(1, settings.flushMs ?? Math.min(this.intervalMs, 5000));
  }

  everyMs(): number {
    return this.flushMs;
  }

  /** A backend report (only the leader's scheduler service calls this). Non-finite values are ignored. */
  onUtilization(event: Extract<BackendEvent, { type: 'utilization' }>): void {
    if (!Number.isFinite(event.gpuUtilization) || !Number.isFinite(event.at)) return;
    const p = this.pending.get(event.jobId) ?? {
      gpuSum: 0,
      gpuCount: 0,
      memorySum: 0,
      memoryCount: 0,
      firstAt: event.at,
      lastAt: event.at,
    };
    p.gpuSum += clamp01(event.gpuUtilization);
    p.gpuCount++;
    if (typeof event.memoryUtilization === 'number' && Number.isFinite(event.memoryUtilization)) {
      p.memorySum += clamp01(event.memoryUtilization);
      p.memoryCount++;
    }
    p.firstAt = Math.min(p.firstAt, event.at);
    p.lastAt = Math.max(p.lastAt, event.at);
    this.pending.set(event.jobId, p);
  }

  /** Jobs with reports not yet stored (tests, metrics). */
  pendingJobs(): number {
    return this.pending.size;
  }

  async run(ctx: LeaderTaskContext): Promise<void> {
    await this.flush(ctx);
  }

  /** Writes every row that is due now (all of them when `force`: tests, shutdown). */
  async flush(ctx: Pick<LeaderTaskContext, 'write' | 'ended'>, force = false): Promise<number> {
    this.forgetEnded();
    const due: [string, Pending][] = [];
    for (const [jobId, p] of this.pending) {
      // A job's first row, too, covers a whole interval of reports: no burst of rows when many jobs start
      // together.
      const since = this.lastRowAt.get(jobId) ?? p.firstAt;
      if (force || p.lastAt - since >= this.intervalMs) due.push([jobId, p]);
      if (due.length >= FLUSH_BATCH) break;
    }
    if (!due.length || ctx.ended()) return 0;
    // Taken out now: reports that arrive during the write start the next row's average.
    for (const [jobId] of due) this.pending.delete(jobId);
    let written = 0;
    const notDue = new Map<string, number>();
    try {
      await ctx.write(async (em) => {
        written = 0;
        notDue.clear();
        written = await this.writeRows(em, due, force, notDue);
      });
    } catch (error) {
      // Not written (database down, or no longer the leader): the reports go back for the next flush.
      for (const [jobId, p] of due) this.restore(jobId, p);
      throw error;
    }
    for (const [jobId, p] of due) {
      const keptAt = notDue.get(jobId);
      if (keptAt !== undefined) {
        this.lastRowAt.set(jobId, keptAt);
        this.restore(jobId, p);
      }
    }
    return written;
  }

  /** Jobs that stopped reporting (ended) long ago leave the in-memory index (bounded by the jobs running). */
  private forgetEnded(): void {
    let latest = -Infinity;
    for (const p of this.pending.values()) latest = Math.max(latest, p.lastAt);
    // A job's last reports (less than an interval of them: never due) would stay forever once it ended:
    // those of a job silent for ten intervals are dropped (a live job that resumes starts a fresh row).
    for (const [jobId, p] of this.pending)
      if (p.lastAt < latest - 10 * this.intervalMs) this.pending.delete(jobId);
    if (this.lastRowAt.size <= 2 * this.pending.size + 1000) return;
    for (const at of this.lastRowAt.values()) latest = Math.max(latest, at);
    for (const [jobId, at] of this.lastRowAt)
      if (!this.pending.has(jobId) && at < latest - 10 * this.intervalMs) this.lastRowAt.delete(jobId);
  }

  private restore(jobId: string, p: Pending): void {
    const newer = this.pending.get(jobId);
    if (!newer) return void this.pending.set(jobId, p);
    newer.gpuSum += p.gpuSum;
    newer.gpuCount += p.gpuCount;
    newer.memorySum += p.memorySum;
    newer.memoryCount += p.memoryCount;
    newer.firstAt = Math.min(newer.firstAt, p.firstAt);
    newer.lastAt = Math.max(newer.lastAt, p.lastAt);
  }

  private async writeRows(
    em: EntityManager,
    due: readonly [string, Pending][],
    force: boolean,
    notDue: Map<string, number>,
  ): Promise<number> {
    const j = tableOf(em, 'Job');
    const ids = due.map(([id]) => id);
    const found = await allBound<{ id: string; tenant: string; state: string; summary: unknown }>(
      em,
      `select ${j.column('id')} as id, ${j.column('tenant')} as tenant, ${j.column('state')} as state, ${j.column('probeSummary')} as summary from ${j.table} where ${j.column('id')} in ${placeholders(ids.length)}`,
      ids,
    );
    const platform = em.getPlatform();
    const jobs = new Map(
      found.map((r) => [
        String(r.id),
        {
          tenant: String(r.tenant),
          state: r.state,
          summary: (r.summary == null
            ? null
            : platform.convertJsonToJSValue(r.summary as string)) as ProbeSummary | null,
        },
      ]),
    );
    const rows: Record<string, unknown>[] = [];
    const updates: [string, ProbeSummary][] = [];
    for (const [jobId, p] of due) {
      const job = jobs.get(jobId);
      // Reports of a job that is gone or no longer holds GPUs (a report that crossed its end) are dropped.
      if (!job || (job.state !== 'RUNNING' && job.state !== 'ADMITTED')) {
        this.lastRowAt.delete(jobId);
        continue;
      }
      const previous = job.summary;
      if (!force && previous && p.lastAt - previous.lastAt < this.intervalMs) {
        notDue.set(jobId, previous.lastAt);
        continue;
      }
      const gpu = p.gpuSum / p.gpuCount;
      const memory = p.memoryCount ? p.memorySum / p.memoryCount : null;
      // The job's tenant, from its row: a report never names a tenant.
      rows.push({
        id: uuidv7(),
        job: jobId,
        tenant: job.tenant,
        at: p.lastAt,
        gpuUtilization: gpu,
        memoryUtilization: memory,
      });
      const samples = (previous?.samples ?? 0) + 1;
      const meanGpu = previous ? (previous.meanGpu * previous.samples + gpu) / samples : gpu;
      updates.push([jobId, { samples, meanGpu, lastGpu: gpu, lastMemory: memory, lastAt: p.lastAt }]);
      this.lastRowAt.set(jobId, p.lastAt);
    }
    await insertRows(em, 'JobProbeSample', rows);
    const sql = `update ${j.table} set ${j.column('probeSummary')} = ? where ${j.column('id')} = ?`;
    for (const [jobId, summary] of updates)
      await runBound(em, sql, [j.value('probeSummary', summary), jobId]);
    return rows.length;
  }
}

/**
 * Deletes samples taken before now − retention, at most `batch` rows per transaction and
 * RETENTION_BATCHES_PER_RUN transactions per run; a run that deleted anything is audited (system).
 */
export function probeRetentionTask(
  settings: ProbeSettings = {},
): LeaderTask & { purge(ctx: Pick<LeaderTaskContext, 'now' | 'write' | 'ended'>): Promise<number> } {
  const retentionMs = (settings.retentionHours ?? DEFAULT_PROBE_RETENTION_HOURS) * 3_600_000;
  const batch = Math.max(1, settings.retentionBatch ?? PROBE_RETENTION_BATCH);
  const purge = async (ctx: Pick<LeaderTaskContext, 'now' | 'write' | 'ended'>): Promise<number> => {
    const before = ctx.now - retentionMs;
    let total = 0;
    for (let i = 0; i < RETENTION_BATCHES_PER_RUN && !ctx.ended(); i++) {
      let deleted = 0;
      await ctx.write(async (em) => {
        const t = tableOf(em, 'JobProbeSample');
        // Through the index on `at`, a bounded set of ids (SQLite has no DELETE … LIMIT by default).
        deleted = await runBound(
          em,
          `delete from ${t.table} where ${t.column('id')} in (select ${t.column('id')} from ${t.table} where ${t.column('at')} < ? limit ?)`,
          [before, batch],
        );
        if (deleted > 0) {
          em.create(AuditEvent, {
            id: uuidv7(),
            tenant: null,
            actor: null,
            actorTokenId: null,
            action: 'governance.probes.retention',
            targetType: 'JobProbeSample',
            targetId: null,
            input: { deleted, before, retentionHours: retentionMs / 3_600_000 },
            outcome: 'SUCCESS',
            errorCode: null,
            requestId: PROBES_REQUEST_ID,
          });
          await em.flush();
        }
      });
      total += deleted;
      if (deleted < batch) break;
    }
    return total;
  };
  return {
    name: 'probes.retention',
    everyMs: () => settings.retentionEveryMs ?? DEFAULT_PROBE_RETENTION_EVERY_MS,
    run: async (ctx) => void (await purge(ctx)),
    purge,
  };
}

/** Asks a backend that reads a metrics source (pollUtilization) for its readings every `pollMs`; null when it has none. */
export function probePollTask(
  backend: ExecutionBackend | undefined,
  pollMs: number | undefined,
): LeaderTask | null {
  if (!backend?.pollUtilization || !pollMs) return null;
  const poll = backend.pollUtilization.bind(backend);
  let inFlight = false;
  return {
    name: 'probes.poll',
    everyMs: () => pollMs,
    // Not awaited: a slow metrics source must not hold the leader's serial turn (cycles, writes).
    // One poll at a time; its readings arrive as backend reports like any other.
    run: async () => {
      if (inFlight) return;
      inFlight = true;
      void poll().finally(() => (inFlight = false));
    },
  };
}

/** The probe tasks the leader runs: the writer (also the receiver of reports), retention, and polling when
 * the backend has a source.
 */
export function probeLeaderTasks(settings: ProbeSettings & { backend?: ExecutionBackend }): {
  writer: ProbeWriter;
  tasks: LeaderTask[];
} {
  const writer = new ProbeWriter(settings);
  const poll = probePollTask(settings.backend, settings.pollMs);
  return { writer, tasks: [writer, probeRetentionTask(settings), ...(poll ? [poll] : [])] };
}
