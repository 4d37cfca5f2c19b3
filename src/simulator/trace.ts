import { readFileSync } from 'node:fs';
import { WORKLOAD_TYPES, type WorkloadType } from '../core/governance/index.js';
import { Columns, CsvError, parseCsvTable } from './csv.js';

/** One job of a trace, normalised. Times are in milliseconds. */
export interface TraceJob {
  /** 1-based line number in the trace file (for messages). */
  line: number;
  id: string;
  /** Submit time in ms: epoch ms for ISO traces, ms from trace start for relative ones. */
  submitMs: number;
  durationMs: number;
  /**
   * The run time declared to the scheduler (the core's expectedDurationMs, which its ETA
   * uses), from the optional `declared_duration_s` column: absent column = `durationMs`;
   * an empty cell = null, nothing declared.
   */
  declaredDurationMs?: number | null;
  tenant: string;
  /** Explicit queue (optional `queue` column); otherwise the tenant's queue. */
  queue?: string;
  /** GPUs per pod; below 1 a fractional share of one GPU in 1/1000 steps. */
  gpus: number;
  pods: number;
  gpuType?: string;
  cpuMilli?: number;
  memoryMib?: number;
  priority?: string;
  /** Optional `checkpoint_interval_s` column: the job checkpoints every this many ms of running (core JobSpec.checkpoint.intervalMs). */
  checkpointIntervalMs?: number;
  /** Optional `resumable` column: suspended and resumed without losing progress (core JobSpec.checkpoint.resumable). */
  resumable?: boolean;
  /** Optional `workload_type` column (TRAINING, FINE_TUNING, BATCH_INFERENCE, ONLINE_INFERENCE; case and -/_ free): the utilization model's type. */
  workloadType?: WorkloadType;
}

export const DEFAULT_PRIORITY_CLASSES = [
  'inference-critical',
  'production',
  'training',
  'experiment',
] as const;

export interface TraceParseOptions {
  /** Allowed priority class names; default: the four default classes. */
  priorityClasses?: readonly string[];
}

const ISO_RE = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/;

/** Parse an ISO-8601 timestamp (a missing zone means UTC). Returns NaN when invalid. */
export function parseIsoMs(s: string): number {
  if (!ISO_RE.test(s)) return Number.NaN;
  let t = s.replace(' ', 'T');
  if (!/(Z|[+-]\d{2}:?\d{2})$/.test(t)) t += t.includes('T') ? 'Z' : 'T00:00:00Z';
  return Date.parse(t);
}

/** Check a per-pod GPU request: whole GPUs at or above 1, 1/1000 steps below. */
export function checkGpuAmount(x: number): string | undefined {
  if (x < 0) return 'must not be negative';
  if (x >= 1) return Number.isInteger(x) ? undefined : 'must be a whole number of GPUs when 1 or more';
  const milli = x * 1000;
  if (Math.abs(milli - Math.round(milli)) > 1e-6) return 'a fractional share must be in steps of 1/1000';
  return undefined;
}

export function parseTrace(text: string, file = '<trace>', opts: TraceParseOptions = {}): TraceJob[] {
  const table = parseCsvTable(text, file);
  const cols = new Columns(table.header, file, 1, ['submit_time', 'duration_s', 'tenant', 'gpus']);
  const classes = new Set(opts.priorityClasses ?? DEFAULT_PRIORITY_CLASSES);
  const jobs: TraceJob[] = [];
  const ids = new Set<string>();
  let timeKind: 'iso' | 'rel' | undefined;
  for (const rec of table.rows) {
    const err = (m: string): never => {
      throw new CsvError(file, rec.line, m);
    };
    const st = cols.required(rec, 'submit_time');
    let submitMs: number;
    let kind: 'iso' | 'rel';
    if (/^[+-]?(\d+\.?\d*|\.\d+)$/.test(st)) {
      const s = Number(st);
      if (s < 0) err(`submit_time ${st} is negative`);
      submitMs = Math.round(s * 1000);
      kind = 'rel';
    } else {
      submitMs = parseIsoMs(st);
      if (!Number.isFinite(submitMs)) err(`submit_time '${st}' is neither seconds nor an ISO-8601 timestamp`);
      kind = 'iso';
    }
    if (timeKind === undefined) timeKind = kind;
    else if (timeKind !== kind) err(`submit_time '${st}' mixes ISO-8601 and relative seconds in one trace`);
    const duration = cols.number(rec, 'duration_s', { min: 0 });
    const tenant = cols.required(rec, 'tenant');
    const gpus = cols.number(rec, 'gpus');
    const gErr = checkGpuAmount(gpus);
    if (gErr) err(`gpus ${gpus}: ${gErr}`);
    const pods = cols.number(rec, 'pods', { min: 1, integer: true, dflt: 1 });
    const cpuMilli =
      cols.has('cpu_milli') && cols.get(rec, 'cpu_milli') !== undefined
        ? cols.number(rec, 'cpu_milli', { min: 0 })
        : undefined;
    const memoryMib =
      cols.has('memory_mib') && cols.get(rec, 'memory_mib') !== undefined
        ? cols.number(rec, 'memory_mib', { min: 0 })
        : undefined;
    if (gpus === 0 && !cpuMilli && !memoryMib)
      err('the job requests no resources (gpus 0 and no cpu_milli/memory_mib)');
    const priority = cols.get(rec, 'priority');
    if (priority !== undefined && !classes.has(priority)) {
      err(`unknown priority class '${priority}' (known: ${[...classes].join(', ')})`);
    }
    const id = cols.get(rec, 'id') ?? cols.get(rec, 'job_id') ?? `L${rec.line}`;
    if (ids.has(id)) err(`duplicate job id '${id}'`);
    ids.add(id);
    const job: TraceJob = {
      line: rec.line,
      id,
      submitMs,
      durationMs: Math.round(duration * 1000),
      tenant,
      gpus,
      pods,
    };
    const q = cols.get(rec, 'queue');
    if (q !== undefined) job.queue = q;
    const gt = cols.get(rec, 'gpu_type');
    if (gt !== undefined) job.gpuType = gt;
    if (cpuMilli !== undefined) job.cpuMilli = cpuMilli;
    if (memoryMib !== undefined) job.memoryMib = memoryMib;
    if (priority !== undefined) job.priority = priority;
    if (cols.has('declared_duration_s')) {
      job.declaredDurationMs =
        cols.get(rec, 'declared_duration_s') === undefined
          ? null
          : Math.round(cols.number(rec, 'declared_duration_s', { min: 0 }) * 1000);
    }
    if (cols.has('checkpoint_interval_s') && cols.get(rec, 'checkpoint_interval_s') !== undefined) {
      const ci = cols.number(rec, 'checkpoint_interval_s', { min: 0 });
      if (ci <= 0) err(`checkpoint_interval_s ${ci} must be > 0 (leave the cell empty for none)`);
      job.checkpointIntervalMs = Math.round(ci * 1000);
    }
    const res = cols.has('resumable') ? cols.get(rec, 'resumable') : undefined;
    if (res !== undefined) {
      const v = res.toLowerCase();
      if (['true', '1', 'yes'].includes(v)) job.resumable = true;
      else if (!['false', '0', 'no'].includes(v))
        err(`resumable '${res}' must be true/false (or 1/0, yes/no)`);
    }
    const wt = cols.has('workload_type') ? cols.get(rec, 'workload_type') : undefined;
    if (wt !== undefined) {
      const v = wt.toUpperCase().replace(/-/g, '_');
      if (!(WORKLOAD_TYPES as readonly string[]).includes(v))
        err(`workload_type '${wt}' must be one of ${WORKLOAD_TYPES.join(', ')}`);
      job.workloadType = v as WorkloadType;
    }
    jobs.push(job);
  }
  if (jobs.length === 0) throw new CsvError(file, 2, 'the trace has no jobs');
  // Stable order: by submit time, then by file order.
  jobs.sort((a, b) => a.submitMs - b.submitMs || a.line - b.line);
  return jobs;
}

export function readTrace(path: string, opts: TraceParseOptions = {}): TraceJob[] {
  return parseTrace(readFileSync(path, 'utf8'), path, opts);
}

/** GPU amount of a whole job (all pods). */
export function jobGpus(j: TraceJob): number {
  return j.gpus * j.pods;
}

/**
 * Run time (ms) a job keeps when it is stopped after running `runMs` (the core's rule, lost-work.ts):
 * all of it when resumable, whole checkpoint intervals with an interval, nothing otherwise.
 */
export function savedRunMs(j: TraceJob, runMs: number): number {
  if (j.resumable) return runMs;
  if (j.checkpointIntervalMs !== undefined && j.checkpointIntervalMs > 0)
    return runMs - (runMs % j.checkpointIntervalMs);
  return 0;
}
