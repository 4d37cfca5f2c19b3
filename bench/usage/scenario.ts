// The bench's data, generated from a seed with no database: a month of GPU jobs in one big
// tenant (most of the rows; the query is over it) and two small ones, and the ledger rows the
// writer (src/services/metering/ledger.ts) would have written for them — one row per job × flavor ×
// checkpoint interval, cut at every UTC hour — emitted in time order, as a live ledger fills.
import type { UsageCloser } from '../../src/persistence/metering/entities.js';
import type { LedgerRow } from '../../src/services/metering/ledger.js';
import { Prng } from '../../src/simulator/prng.js';

export const HOUR_MS = 3_600_000;
export const DAY_MS = 86_400_000;

export interface ScenarioOptions {
  /** Ledger rows to produce, exactly (the last job is cut short to hit it). */
  rows: number;
  seed: number;
  /** Start of the month (UTC midnight); the data covers `days` days from it. */
  from: number;
  days: number;
  /** Checkpoint period of the ledger writer (FAIRWAY_METERING_INTERVAL_MS). */
  checkpointMs: number;
  /** Share of the jobs in the big tenant. */
  bigShare: number;
  projects: number;
  queues: number;
  users: number;
}

export const DEFAULT_SCENARIO: ScenarioOptions = {
  rows: 1_000_000,
  seed: 12,
  from: Date.UTC(2026, 10, 1),
  days: 30,
  checkpointMs: 60_000,
  bigShare: 0.9,
  projects: 40,
  queues: 8,
  users: 200,
};

/** Flavors as the price book would have them: a MIG slice counts 1/7 of a device. */
export const FLAVORS = [
  { name: 'h100-80g', slicesPerGpu: 1, price: 2.49, units: [1, 2, 4, 8, 8, 16] },
  { name: 'a100-80g', slicesPerGpu: 1, price: 1.6, units: [1, 1, 2, 4, 8] },
  { name: 'l40s-48g', slicesPerGpu: 1, price: 0.9, units: [1, 1, 2] },
  { name: 'a100-1g.10gb', slicesPerGpu: 7, price: 0.45, units: [1, 1, 2, 3] },
] as const;
export const CLASSES = [
  { name: 'inference-critical', multiplier: 1.5 },
  { name: 'training-high', multiplier: 1.2 },
  { name: 'training', multiplier: 1 },
  { name: 'batch-low', multiplier: 0.6 },
] as const;

/** Tenant 0 is the big one; 1 and 2 are small neighbours whose rows the query must skip. */
export interface ScenarioTenant {
  index: number;
  projects: number;
  queues: number;
}

export interface ScenarioJob {
  /** Index into the generated jobs (ids are given by the loader). */
  n: number;
  tenant: number;
  /** Project index within the tenant, or null (a job submitted outside any project). */
  project: number | null;
  queue: number;
  user: number;
  priorityClass: string;
  flavor: (typeof FLAVORS)[number];
  gpuUnits: number;
  utilization: number | null;
  start: number;
  end: number;
  closedBy: UsageCloser;
}

export interface Scenario {
  options: ScenarioOptions;
  tenants: ScenarioTenant[];
  jobs: ScenarioJob[];
  /** Ledger rows produced by `emitRows` (= options.rows). */
  rows: number;
}

/** Ledger rows of [start, end): checkpoint intervals, each cut at the UTC hours it crosses. */
export function intervalsOf(
  start: number,
  end: number,
  checkpointMs: number,
  phase: number,
): [number, number][] {
  const out: [number, number][] = [];
  let a = start;
  while (a < end) {
    const nextCheckpoint = Math.floor((a - phase) / checkpointMs) * checkpointMs + phase + checkpointMs;
    const nextHour = Math.floor(a / HOUR_MS) * HOUR_MS + HOUR_MS;
    const b = Math.min(end, nextCheckpoint, nextHour);
    out.push([a, b]);
    a = b;
  }
  return out;
}

/** Checkpoints fire on a fixed grid offset from the minute (the leader's timer started at some second). */
const PHASE_MS = 17_000;

function pick<T>(rnd: () => number, xs: readonly T[]): T {
  return xs[Math.floor(rnd() * xs.length)]!;
}

/** Skewed pick (a few big projects and heavy users, a long tail): index ~ n·u². */
function skewed(rnd: () => number, n: number): number {
  return Math.min(n - 1, Math.floor(n * rnd() * rnd()));
}

/** Job durations: log-normal around 2 h, from a few minutes to 3 days. */
function duration(rnd: () => number): number {
  const normal = Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  return Math.max(120_000, Math.min(72 * HOUR_MS, Math.round(2 * HOUR_MS * Math.exp(1.1 * normal))));
}

export function buildScenario(options: ScenarioOptions = DEFAULT_SCENARIO): Scenario {
  // The simulator's seeded PRNG: the same seed gives the same data on both databases.
  const source = new Prng(options.seed);
  const rnd = () => source.next();
  const monthEnd = options.from + options.days * DAY_MS;
  const tenants: ScenarioTenant[] = [
    { index: 0, projects: options.projects, queues: options.queues },
    { index: 1, projects: 2, queues: 1 },
    { index: 2, projects: 2, queues: 1 },
  ];
  const jobs: ScenarioJob[] = [];
  let rows = 0;
  while (rows < options.rows) {
    const r = rnd();
    const tenant = r < options.bigShare ? 0 : r < (1 + options.bigShare) / 2 ? 1 : 2;
    const t = tenants[tenant]!;
    const flavor = pick(rnd, FLAVORS);
    const start = options.from + Math.floor(rnd() * (monthEnd - options.from - 120_000));
    const wanted = start + duration(rnd);
    const end = Math.min(monthEnd, wanted);
    const outcome = rnd();
    const job: ScenarioJob = {
      n: jobs.length,
      tenant,
      project: rnd() < 0.03 ? null : skewed(rnd, t.projects),
      queue: Math.floor(rnd() * t.queues),
      user: skewed(rnd, options.users),
      priorityClass: pick(rnd, CLASSES).name,
      flavor,
      gpuUnits: pick(rnd, flavor.units),
      utilization: rnd() < 0.1 ? null : 0.25 + 0.7 * rnd(),
      start,
      end,
      // Still running at the end of the data: its last row was a checkpoint.
      closedBy:
        end < wanted
          ? 'checkpoint'
          : outcome < 0.8
            ? 'succeeded'
            : outcome < 0.9
              ? 'failed'
              : outcome < 0.95
                ? 'cancelled'
                : 'preempted',
    };
    const intervals = intervalsOf(job.start, job.end, options.checkpointMs, PHASE_MS);
    if (rows + intervals.length > options.rows) {
      // Cut the last job so the total is exact; it is still running (its last row a checkpoint).
      job.end = intervals[options.rows - rows - 1]![1];
      job.closedBy = 'checkpoint';
      rows = options.rows;
    } else rows += intervals.length;
    jobs.push(job);
  }
  return { options, tenants, jobs, rows };
}

/** A generated row, before the loader gives it ids: `job` indexes Scenario.jobs. */
export type ScenarioRow = Omit<LedgerRow, 'jobId' | 'tenantId' | 'projectId' | 'queueId' | 'userId'> & {
  job: ScenarioJob;
};

/**
 * Calls `sink` with the ledger rows in time order (checkpoint by checkpoint, as the writer
 * would), in batches of at most `batch` rows. Returns the number of rows.
 */
export async function emitRows(
  scenario: Scenario,
  batch: number,
  sink: (rows: ScenarioRow[]) => Promise<void>,
): Promise<number> {
  const { checkpointMs } = scenario.options;
  const byStart = [...scenario.jobs].sort((a, b) => a.start - b.start);
  const last = Math.max(...scenario.jobs.map((j) => j.end));
  let next = 0;
  let active: ScenarioJob[] = [];
  let buffer: ScenarioRow[] = [];
  let total = 0;
  let tick = Math.floor((scenario.options.from - PHASE_MS) / checkpointMs) * checkpointMs + PHASE_MS;
  for (; tick < last + checkpointMs; tick += checkpointMs) {
    const stepEnd = tick + checkpointMs;
    while (next < byStart.length && byStart[next]!.start < stepEnd) active.push(byStart[next++]!);
    for (const job of active) {
      const from = Math.max(job.start, tick);
      const to = Math.min(job.end, stepEnd);
      if (to <= from) continue;
      for (const [a, b] of intervalsOf(from, to, checkpointMs, PHASE_MS)) buffer.push(rowOf(job, a, b));
    }
    active = active.filter((j) => j.end > stepEnd);
    if (buffer.length >= batch) {
      for (let i = 0; i < buffer.length; i += batch) await sink(buffer.slice(i, i + batch));
      total += buffer.length;
      buffer = [];
    }
  }
  if (buffer.length) await sink(buffer);
  return total + buffer.length;
}

function rowOf(job: ScenarioJob, start: number, end: number): ScenarioRow {
  const seconds = (end - start) / 1000;
  const unitPricePerHour =
    job.flavor.price * (CLASSES.find((c) => c.name === job.priorityClass)?.multiplier ?? 1);
  const gpuSeconds = (job.gpuUnits / job.flavor.slicesPerGpu) * seconds;
  return {
    job,
    priorityClass: job.priorityClass,
    flavor: job.flavor.name,
    startedAt: new Date(start),
    endedAt: new Date(end),
    durationMs: end - start,
    gpuUnits: job.gpuUnits,
    gpuSeconds,
    cpuSeconds: 12 * job.gpuUnits * seconds,
    memoryGibSeconds: 96 * job.gpuUnits * seconds,
    usedGpuSeconds: job.utilization === null ? null : gpuSeconds * job.utilization,
    unitPricePerHour,
    cost: (job.gpuUnits * unitPricePerHour * seconds) / 3600,
    closedBy: end === job.end ? job.closedBy : 'checkpoint',
    firstOfJob: start === job.start,
  };
}
