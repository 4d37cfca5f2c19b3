// The usage ledger's writer. Every call runs inside the caller's transaction, beside the state
// change it charges for (a report that the job finished, a preemption, a cancel, a checkpoint):
// the rows, the hourly rollup and the job's `meteredFrom` commit together or not at all, so
// after a crash or a failover the next leader charges from exactly where the last commit ended.
import type { EntityManager } from '@mikro-orm/core';
import type { UtilizationSource } from '../../core/metering/index.js';
import { allocationOf } from '../../core/metering/index.js';
import type { Admission, PodSetSpec } from '../../core/scheduling/index.js';
import { insertRows, tableOf } from '../../persistence/bound-sql.js';
import { uuidv7 } from '../../persistence/ids.js';
import type { Job } from '../../persistence/jobs/index.js';
import type { MeteringTables } from '../../persistence/metering/index.js';
import { type UsageCloser, type UsageHourly, UsageRecord } from '../../persistence/metering/index.js';
import { findPlain } from '../../persistence/plain-rows.js';

const HOUR_MS = 3_600_000;

/** What the ledger needs besides the job: prices, flavors, the backend's time scale, utilization samples. */
export interface LedgerContext {
  tables: MeteringTables;
  /**
   * Declared time / backend time (the simulated cluster runs faster than the clock): a real
   * second held is charged as `timeScale` seconds, so usage reflects the jobs' declared time.
   * 1 on a real cluster.
   */
  timeScale: number;
  utilization?: UtilizationSource;
}

/** The part of a job the ledger reads. */
export interface ChargeableJob {
  id: string;
  tenantId: string;
  projectId: string | null;
  queueId: string;
  userId: string | null;
  priorityClass: string;
  podSets: PodSetSpec[];
  admission: Admission | null;
}

export type LedgerRow = Omit<UsageRecord, 'id' | 'job' | 'tenant'> & { jobId: string; tenantId: string };

/** Splits [from, to) at every hour boundary and at the given instants (price changes). */
export function segmentsOf(from: number, to: number, breaks: readonly number[] = []): [number, number][] {
  if (to <= from) return [];
  const cuts = new Set<number>();
  for (let h = Math.floor(from / HOUR_MS) * HOUR_MS + HOUR_MS; h < to; h += HOUR_MS) cuts.add(h);
  for (const b of breaks) if (b > from && b < to) cuts.add(b);
  const points = [from, ...[...cuts].sort((a, b) => a - b), to];
  const out: [number, number][] = [];
  for (let i = 0; i + 1 < points.length; i++) out.push([points[i]!, points[i + 1]!]);
  return out;
}

/**
 * The rows charging `job` for [from, to): one per flavor per segment (segments never cross an
 * hour or a price change). Pure: the property tests drive it directly.
 */
export function ledgerRows(
  job: ChargeableJob,
  from: number,
  to: number,
  closedBy: UsageCloser,
  ctx: LedgerContext,
  options: { firstOfJob: boolean; utilization: number | null },
): LedgerRow[] {
  if (!job.admission || to <= from) return [];
  const allocation = allocationOf(job.podSets, job.admission, ctx.tables.flavors);
  const rows: LedgerRow[] = [];
  let first = options.firstOfJob;
  for (const held of allocation) {
    const breaks = ctx.tables.prices.changesWithin(held.flavor, job.priorityClass, from, to);
    for (const [start, end] of segmentsOf(from, to, breaks)) {
      const seconds = ((end - start) / 1000) * ctx.timeScale;
      const unitPricePerHour = ctx.tables.prices.unitPrice(held.flavor, job.priorityClass, start);
      const gpuSeconds = held.gpuDevices * seconds;
      rows.push({
        jobId: job.id,
        tenantId: job.tenantId,
        projectId: job.projectId,
        queueId: job.queueId,
        userId: job.userId,
        priorityClass: job.priorityClass,
        flavor: held.flavor,
        startedAt: new Date(start),
        endedAt: new Date(end),
        durationMs: end - start,
        gpuUnits: held.gpuUnits,
        gpuSeconds,
        cpuSeconds: held.cpuCores * seconds,
        memoryGibSeconds: held.memoryGib * seconds,
        usedGpuSeconds:
          options.utilization === null || gpuSeconds === 0 ? null : gpuSeconds * options.utilization,
        unitPricePerHour,
        cost: (held.gpuUnits * unitPricePerHour * seconds) / 3600,
        closedBy,
        firstOfJob: first,
      });
      first = false;
    }
  }
  return rows;
}

export const chargeableJob = (job: Job): ChargeableJob => ({
  id: job.id,
  tenantId: job.tenant.id,
  projectId: job.project?.id ?? null,
  queueId: job.queue.id,
  userId: job.submittedBy?.id ?? null,
  priorityClass: job.priorityClass,
  podSets: job.podSets,
  admission: job.admission ?? null,
});

/**
 * Charges each job's open interval up to `until` and moves its `meteredFrom`: to `until` for a
 * checkpoint (the job still holds its GPUs), to null when the hold ends. A job with nothing
 * open (never started, or already closed) is left as it is. Returns the tenants charged.
 * The job rows must be read under the caller's lock (FOR UPDATE where the database has it).
 */
export async function chargeJobs(
  em: EntityManager,
  jobs: readonly Job[],
  untilOf: number | ((job: Job) => number),
  closedBy: UsageCloser,
  ctx: LedgerContext,
): Promise<Set<string>> {
  const rows: LedgerRow[] = [];
  // Per job when several holds end at their own instants in one transaction (a batch of backend reports).
  const untilFor = (job: Job) => (typeof untilOf === 'number' ? untilOf : untilOf(job));
  const charged = await chargedBefore(
    em,
    jobs.filter(
      (job) => job.meteredFrom != null && untilFor(job) > job.meteredFrom && mayBeFirst(job, job.meteredFrom),
    ),
  );
  for (const job of jobs) {
    const until = untilFor(job);
    const from = job.meteredFrom ?? null;
    if (closedBy !== 'checkpoint') job.meteredFrom = null;
    if (from === null || until <= from) continue;
    if (closedBy === 'checkpoint') job.meteredFrom = until;
    const firstOfJob = mayBeFirst(job, from) && !charged.has(job.id);
    const utilization = ctx.utilization?.take(job.id, from, until) ?? null;
    rows.push(...ledgerRows(chargeableJob(job), from, until, closedBy, ctx, { firstOfJob, utilization }));
  }
  await writeRows(em, rows);
  return new Set(rows.map((r) => r.tenantId));
}

/**
 * Charges each job's stopping run (a preempted run whose pods were still within their grace) from
 * `stoppingSince` to `until`, capped at `stoppingUntil`, under the admission it ran with, and
 * clears it. Jobs with no stopping run are left alone. Returns the tenants charged.
 */
export async function chargeStopping(
  em: EntityManager,
  jobs: readonly Job[],
  untilOf: number | ((job: Job) => number),
  ctx: LedgerContext,
): Promise<Set<string>> {
  const rows: LedgerRow[] = [];
  for (const job of jobs) {
    const from = job.stoppingSince ?? null;
    const cap = job.stoppingUntil ?? from;
    const admission = job.stoppingAdmission ?? null;
    job.stoppingSince = null;
    job.stoppingUntil = null;
    job.stoppingAdmission = null;
    if (from === null || cap === null || !admission) continue;
    const until = Math.min(typeof untilOf === 'number' ? untilOf : untilOf(job), cap);
    const stopping = { ...chargeableJob(job), admission };
    rows.push(...ledgerRows(stopping, from, until, 'grace', ctx, { firstOfJob: false, utilization: null }));
  }
  await writeRows(em, rows);
  return new Set(rows.map((r) => r.tenantId));
}

/** One job; see chargeJobs. */
export const chargeJob = (
  em: EntityManager,
  job: Job,
  until: number,
  closedBy: UsageCloser,
  ctx: LedgerContext,
): Promise<Set<string>> => chargeJobs(em, [job], until, closedBy, ctx);

/**
 * Whether this may be the job's first charge ever (it counts the job once in the rollup's `jobs`):
 * only an interval that starts at a run's start can be, if the job has no ledger row yet. Not only
 * the first run's: a run preempted at the instant it started charged nothing, so the next run's
 * first charge is the job's first.
 */
function mayBeFirst(job: Job, from: number): boolean {
  return job.startedAt?.getTime() === from;
}

/** Which of these jobs already have ledger rows: one query for all of them (none when there are none). */
async function chargedBefore(em: EntityManager, jobs: readonly Job[]): Promise<Set<string>> {
  if (!jobs.length) return new Set();
  const rows = await findPlain(em, UsageRecord, { job_id: jobs.map((j) => j.id) }, { columns: ['job_id'] });
  return new Set(rows.map((r) => r.job.id));
}

type HourlyKey = Pick<UsageHourly, 'projectId' | 'queueId' | 'userId' | 'priorityClass' | 'flavor'> & {
  hour: Date;
  tenant: string;
};
type HourlySums = Pick<
  UsageHourly,
  'gpuSeconds' | 'usedGpuSeconds' | 'measuredGpuSeconds' | 'cpuSeconds' | 'memoryGibSeconds' | 'cost' | 'jobs'
>;

const SUMMED = [
  'gpuSeconds',
  'usedGpuSeconds',
  'measuredGpuSeconds',
  'cpuSeconds',
  'memoryGibSeconds',
  'cost',
  'jobs',
] as const;

/** Sums rows per hourly key (one statement may not touch the same rollup row twice). */
export function hourlyDeltas(rows: readonly LedgerRow[]): (HourlyKey & HourlySums)[] {
  const out = new Map<string, HourlyKey & HourlySums>();
  for (const r of rows) {
    const hour = Math.floor(r.startedAt.getTime() / HOUR_MS) * HOUR_MS;
    const key: HourlyKey = {
      hour: new Date(hour),
      tenant: r.tenantId,
      projectId: r.projectId ?? '',
      queueId: r.queueId,
      userId: r.userId ?? '',
      priorityClass: r.priorityClass,
      flavor: r.flavor,
    };
    const id = [hour, key.tenant, key.projectId, key.queueId, key.userId, key.priorityClass, key.flavor].join(
      '\u0000',
    );
    const cur = out.get(id) ?? {
      ...key,
      gpuSeconds: 0,
      usedGpuSeconds: 0,
      measuredGpuSeconds: 0,
      cpuSeconds: 0,
      memoryGibSeconds: 0,
      cost: 0,
      jobs: 0,
    };
    cur.gpuSeconds += r.gpuSeconds;
    if (r.usedGpuSeconds !== null && r.usedGpuSeconds !== undefined) {
      cur.usedGpuSeconds += r.usedGpuSeconds;
      cur.measuredGpuSeconds += r.gpuSeconds;
    }
    cur.cpuSeconds += r.cpuSeconds;
    cur.memoryGibSeconds += r.memoryGibSeconds;
    cur.cost += r.cost;
    if (r.firstOfJob) cur.jobs += 1;
    out.set(id, cur);
  }
  // A fixed order: concurrent writers (a cancel beside a checkpoint) lock rollup rows in the same order.
  return [...out.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([, v]) => v);
}

/** The rollup's unique key: a delta for an existing row adds to it. */
const HOURLY_KEY = ['hour', 'tenant', 'projectId', 'queueId', 'userId', 'priorityClass', 'flavor'] as const;

/**
 * Ledger rows, then the rollup, with bound parameters in fixed-size chunks (bound-sql.ts): the
 * SQL texts repeat, so they are prepared once, not built and prepared per finished job.
 */
async function writeRows(em: EntityManager, rows: readonly LedgerRow[]): Promise<void> {
  if (!rows.length) return;
  // The ledger rows first: a second charge of the same time fails on their unique key before
  // the rollup is touched, and the whole transaction (the state change with it) rolls back.
  await insertRows(
    em,
    'UsageRecord',
    rows.map((r) => ({
      id: uuidv7(),
      job: r.jobId,
      tenant: r.tenantId,
      projectId: r.projectId,
      queueId: r.queueId,
      userId: r.userId,
      priorityClass: r.priorityClass,
      flavor: r.flavor,
      startedAt: r.startedAt,
      endedAt: r.endedAt,
      durationMs: r.durationMs,
      gpuUnits: r.gpuUnits,
      gpuSeconds: r.gpuSeconds,
      cpuSeconds: r.cpuSeconds,
      memoryGibSeconds: r.memoryGibSeconds,
      usedGpuSeconds: r.usedGpuSeconds ?? null,
      unitPricePerHour: r.unitPricePerHour,
      cost: r.cost,
      closedBy: r.closedBy,
      firstOfJob: r.firstOfJob,
    })),
  );
  const h = tableOf(em, 'UsageHourly');
  const merge = SUMMED.map(
    (f) => `${h.column(f)} = ${h.table}.${h.column(f)} + excluded.${h.column(f)}`,
  ).join(', ');
  const properties = [...HOURLY_KEY, ...SUMMED] as const;
  const deltas = hourlyDeltas(rows).map((d) => {
    const row: Record<string, unknown> = { id: uuidv7() };
    for (const p of properties) row[p] = d[p];
    return row;
  });
  await insertRows(
    em,
    'UsageHourly',
    deltas,
    ` on conflict (${HOURLY_KEY.map((p) => h.column(p)).join(', ')}) do update set ${merge}`,
  );
}
