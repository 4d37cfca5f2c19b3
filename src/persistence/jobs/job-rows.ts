import type { EntityManager } from '@mikro-orm/core';
import type { Admission, PodSetSpec } from '../../core/scheduling/index.js';
import { allBound, placeholders } from '../bound-sql.js';
import { tenantScope } from '../raw-reads.js';
import type { JobState } from './entities.js';
import { fillKeyColumns, fillPartialRow, OPTIONAL_COLUMNS } from './job-rows-partial.js';
import { date, json, num, type Platform, type Raw, ref } from './row-values.js';

/**
 * A page of jobs read as plain rows, without the ORM's entity machinery. Hydrating a page of
 * 50 jobs as entities (identity map, change-tracking snapshots of their JSON columns,
 * references for four relations) cost ~5 ms of CPU on the tenant dashboard query, ten times
 * the SQL; a list that is only shown never needs any of it. Rows carry what the Job type's
 * resolvers read: every column, and each relation as `{ id }` (as an entity's unloaded reference).
 */

/** What the API reads of a job: a stored entity (getJob, submitJob) and a read row (listJobs) alike. */
export interface JobView {
  id: string;
  tenant: { id: string };
  project?: { id: string } | null;
  queue: { id: string };
  submittedBy?: { id: string } | null;
  name: string;
  priorityClass: string;
  podSets: PodSetSpec[];
  expectedDurationMs?: number | null;
  maxRunMs?: number | null;
  checkpointIntervalMs?: number | null;
  checkpointResumable?: boolean | null;
  workloadType?: string | null;
  latencySensitive?: boolean | null;
  probeSummary?: {
    samples: number;
    meanGpu: number;
    lastGpu: number;
    lastMemory: number | null;
    lastAt: number;
  } | null;
  workload?: Record<string, unknown> | null;
  state: JobState;
  admission?: Admission | null;
  idempotencyKey?: string | null;
  requestHash: string;
  submitTime: number;
  gpusRequested: number;
  preemptionCount: number;
  maxRetries: number;
  disruptionCount: number;
  workloadKind: string;
  /** The inference service this job is a replica of, and its slot (null: a batch job). */
  service?: { id: string } | null;
  replicaSlot?: number | null;
  serviceRevision?: number | null;
  stoppingSince?: number | null;
  stoppingUntil?: number | null;
  stoppingAdmission?: Admission | null;
  meteredFrom?: number | null;
  exitReason?: string | null;
  submittedAt: Date;
  admittedAt?: Date | null;
  startedAt?: Date | null;
  finishedAt?: Date | null;
  updatedAt: Date;
}

/** A job read for display: not managed by any EntityManager (change it through the entity). */
export class JobRow implements JobView {
  id!: string;
  tenant!: { id: string };
  project!: { id: string } | null;
  queue!: { id: string };
  submittedBy!: { id: string } | null;
  name!: string;
  priorityClass!: string;
  expectedDurationMs!: number | null;
  maxRunMs!: number | null;
  checkpointIntervalMs!: number | null;
  checkpointResumable!: boolean;
  workloadType!: string | null;
  latencySensitive!: boolean;
  state!: JobState;
  idempotencyKey!: string | null;
  requestHash!: string;
  submitTime!: number;
  gpusRequested!: number;
  preemptionCount!: number;
  maxRetries!: number;
  disruptionCount!: number;
  workloadKind!: string;
  service!: { id: string } | null;
  replicaSlot!: number | null;
  serviceRevision!: number | null;
  stoppingSince!: number | null;
  stoppingUntil!: number | null;
  meteredFrom!: number | null;
  exitReason!: string | null;
  submittedAt!: Date;
  admittedAt!: Date | null;
  startedAt!: Date | null;
  finishedAt!: Date | null;
  updatedAt!: Date;
  /**
   * The JSON columns as read, parsed on first use: a list that shows names and states (the
   * dashboard) never pays for parsing every row's pod sets and admission.
   */
  #json: {
    platform: Platform;
    podSets: unknown;
    workload: unknown;
    admission: unknown;
    probeSummary: unknown;
    governanceFlag: unknown;
    stoppingAdmission: unknown;
    parsed: Partial<Record<JsonColumn, unknown>>;
  } | null = null;

  get podSets(): PodSetSpec[] {
    return this.#parsed('podSets') ?? [];
  }
  get workload(): Record<string, unknown> | null {
    return this.#parsed('workload');
  }
  get admission(): Admission | null {
    return this.#parsed('admission');
  }
  get stoppingAdmission(): Admission | null {
    return this.#parsed('stoppingAdmission');
  }
  get probeSummary(): JobView['probeSummary'] {
    return this.#parsed('probeSummary');
  }
  get governanceFlag(): Record<string, unknown> | null {
    return this.#parsed('governanceFlag');
  }

  /** Used by readJobRows only. */
  static fromJson(row: JobRow, platform: Platform, raw: Raw): JobRow {
    row.#json = {
      platform,
      podSets: raw.pod_sets,
      workload: raw.workload,
      admission: raw.admission,
      probeSummary: raw.probe_summary,
      governanceFlag: raw.governance_flag,
      stoppingAdmission: raw.stopping_admission,
      parsed: {},
    };
    return row;
  }

  /** A row of a job just written, from the values in memory: nothing to parse. */
  static withValues(
    row: JobRow,
    values: { podSets: PodSetSpec[]; workload: Record<string, unknown> | null; admission: Admission | null },
  ): JobRow {
    row.#json = {
      platform: null as unknown as Platform,
      podSets: null,
      workload: null,
      admission: null,
      probeSummary: null,
      governanceFlag: null,
      stoppingAdmission: null,
      parsed: { probeSummary: null, governanceFlag: null, stoppingAdmission: null, ...values },
    };
    return row;
  }

  #parsed<T>(key: JsonColumn): T | null {
    const stored = this.#json;
    if (!stored) return null;
    if (!(key in stored.parsed)) stored.parsed[key] = json(stored.platform, stored[key]);
    return stored.parsed[key] as T | null;
  }
}

type JsonColumn =
  | 'podSets'
  | 'workload'
  | 'admission'
  | 'probeSummary'
  | 'governanceFlag'
  | 'stoppingAdmission';

export interface JobRowFilter {
  tenantId: string;
  states?: readonly JobState[] | null;
  projectId?: string | null;
  queueId?: string | null;
  priorityClass?: string | null;
  submittedAfter?: Date | null;
  submittedBefore?: Date | null;
  /** The user who submitted them. */
  submittedById?: string | null;
}

/** The keyset page (paging.ts's PageQuery): ids ascending, `inverted` walks back. */
export interface JobRowPage {
  after?: string;
  before?: string;
  limit: number;
  inverted: boolean;
  /**
   * Only these columns besides JOB_KEY_COLUMNS (the graph's list of what its fields read:
   * schema/job-columns.ts); absent: every column. Reading each of 40 columns of 50 rows cost
   * more than the rest of the SQL; a page that shows names and states needs a handful. The
   * properties of the columns left out stay undefined.
   */
  columns?: readonly JobColumn[];
}

/** What every row carries, narrow or not: its identity, its relations (rights are checked on them), name and state. */
export const JOB_KEY_COLUMNS = [
  'id',
  'tenant_id',
  'project_id',
  'queue_id',
  'submitted_by_id',
  'name',
  'state',
] as const;

const COLUMNS = [
  'id',
  'tenant_id',
  'project_id',
  'queue_id',
  'submitted_by_id',
  'name',
  'priority_class',
  'pod_sets',
  'expected_duration_ms',
  'max_run_ms',
  'checkpoint_interval_ms',
  'checkpoint_resumable',
  'workload_type',
  'latency_sensitive',
  'probe_summary',
  'governance_flag',
  'workload',
  'state',
  'admission',
  'idempotency_key',
  'request_hash',
  'submit_time',
  'gpus_requested',
  'preemption_count',
  'max_retries',
  'disruption_count',
  'workload_kind',
  'service_id',
  'replica_slot',
  'service_revision',
  'stopping_since',
  'stopping_until',
  'stopping_admission',
  'metered_from',
  'exit_reason',
  'submitted_at',
  'admitted_at',
  'started_at',
  'finished_at',
  'updated_at',
] as const;
export type JobColumn = (typeof COLUMNS)[number];
const KEY_COLUMNS: ReadonlySet<string> = new Set(JOB_KEY_COLUMNS);
const NARROW_COLUMNS: ReadonlySet<string> = new Set(OPTIONAL_COLUMNS.map(([column]) => column));

/**
 * The rows `em.find(Job, filter, { orderBy: { id }, limit })` (paging.ts's findPage) would
 * return, in the same order. The tenant filter every request's EntityManager carries
 * (entities.ts TENANT_FILTER) is applied here by hand, as the ORM would: raw SQL skips the
 * ORM's filters, and a reader that forgot them could show another tenant's jobs. An
 * EntityManager without the filter's parameters is refused, as the ORM refuses it.
 */
export async function readJobRows(
  em: EntityManager,
  filter: JobRowFilter,
  page: JobRowPage,
): Promise<JobRow[]> {
  const platform = em.getPlatform();
  // Quoted as the ORM quotes them (backticks in SQLite, double quotes in PostgreSQL).
  const q = (id: string) => platform.quoteIdentifier(id);
  const where: string[] = [];
  const params: unknown[] = [];
  const scope = tenantScope(em);
  if (scope) {
    where.push(scope.sql);
    params.push(...scope.params);
  }
  where.push(`${q('tenant_id')} = ?`);
  params.push(filter.tenantId);
  if (filter.states?.length) {
    where.push(`${q('state')} in ${placeholders(filter.states.length)}`);
    params.push(...filter.states);
  }
  if (filter.projectId) {
    where.push(`${q('project_id')} = ?`);
    params.push(filter.projectId);
  }
  if (filter.queueId) {
    where.push(`${q('queue_id')} = ?`);
    params.push(filter.queueId);
  }
  if (filter.priorityClass) {
    where.push(`${q('priority_class')} = ?`);
    params.push(filter.priorityClass);
  }
  if (filter.submittedById) {
    where.push(`${q('submitted_by_id')} = ?`);
    params.push(filter.submittedById);
  }
  if (filter.submittedAfter) {
    where.push(`${q('submitted_at')} >= ?`);
    params.push(dateParam(platform, filter.submittedAfter));
  }
  if (filter.submittedBefore) {
    where.push(`${q('submitted_at')} < ?`);
    params.push(dateParam(platform, filter.submittedBefore));
  }
  if (page.after) {
    where.push(`${q('id')} > ?`);
    params.push(page.after);
  }
  if (page.before) {
    where.push(`${q('id')} < ?`);
    params.push(page.before);
  }
  params.push(page.limit);
  // Narrow only when every column asked for is one a partial row knows how to convert.
  const narrow = page.columns?.every((c) => KEY_COLUMNS.has(c) || NARROW_COLUMNS.has(c))
    ? page.columns
    : null;
  const columns = narrow ? COLUMNS.filter((c) => KEY_COLUMNS.has(c) || narrow.includes(c)) : COLUMNS;
  const sql = `select ${columns.map((column) => q(column)).join(', ')} from ${q('jobs')} where ${where.join(' and ')} order by ${q('id')} ${page.inverted ? 'desc' : 'asc'} limit ?`;
  // With bound parameters through the ORM's connection (bound-sql.ts): the text repeats, so SQLite
  // reuses its prepared statement; logged like every other; in the EntityManager's transaction if any.
  const rows = await allBound<Raw>(em, sql, params);
  return rows.map((raw) =>
    narrow
      ? JobRow.fromJson(fillPartialRow(new JobRow(), platform, raw), platform, raw)
      : toRow(platform, raw),
  );
}

/** A date as the column stores it: milliseconds in SQLite (the ORM's way), an ISO timestamp in PostgreSQL. */
function dateParam(platform: Platform, date: Date): number | string {
  const stored = platform.processDateProperty(date);
  return stored instanceof Date ? date.toISOString() : (stored as number | string);
}

function toRow(platform: Platform, raw: Raw): JobRow {
  const row = fillKeyColumns(new JobRow(), raw);
  row.priorityClass = raw.priority_class as string;
  row.expectedDurationMs = num(raw.expected_duration_ms);
  row.maxRunMs = num(raw.max_run_ms);
  row.checkpointIntervalMs = num(raw.checkpoint_interval_ms);
  // SQLite stores booleans as 0/1.
  row.checkpointResumable = Boolean(raw.checkpoint_resumable);
  row.workloadType = (raw.workload_type as string | null) ?? null;
  row.latencySensitive = Boolean(raw.latency_sensitive);
  row.idempotencyKey = (raw.idempotency_key as string | null) ?? null;
  row.requestHash = raw.request_hash as string;
  row.submitTime = Number(raw.submit_time);
  row.gpusRequested = Number(raw.gpus_requested);
  row.preemptionCount = Number(raw.preemption_count);
  row.maxRetries = Number(raw.max_retries);
  row.disruptionCount = Number(raw.disruption_count);
  row.workloadKind = String(raw.workload_kind ?? 'BATCH');
  row.service = ref(raw.service_id);
  row.replicaSlot = num(raw.replica_slot);
  row.serviceRevision = num(raw.service_revision);
  row.stoppingSince = num(raw.stopping_since);
  row.stoppingUntil = num(raw.stopping_until);
  row.meteredFrom = num(raw.metered_from);
  row.exitReason = (raw.exit_reason as string | null) ?? null;
  row.submittedAt = date(platform, raw.submitted_at)!;
  row.admittedAt = date(platform, raw.admitted_at);
  row.startedAt = date(platform, raw.started_at);
  row.finishedAt = date(platform, raw.finished_at);
  row.updatedAt = date(platform, raw.updated_at)!;
  return JobRow.fromJson(row, platform, raw);
}
