import type { JobState } from './entities.js';
import type { JobColumn, JobRow } from './job-rows.js';
import { date, num, type Platform, type Raw, ref } from './row-values.js';

/** The key columns every row carries, narrow or not (JOB_KEY_COLUMNS). */
export function fillKeyColumns(row: JobRow, raw: Raw): JobRow {
  row.id = String(raw.id);
  row.tenant = ref(raw.tenant_id)!;
  row.project = ref(raw.project_id);
  row.queue = ref(raw.queue_id)!;
  row.submittedBy = ref(raw.submitted_by_id);
  row.name = raw.name as string;
  row.state = raw.state as JobState;
  return row;
}

/** Fills a new row from only some columns (JobRowPage.columns): the others' properties stay undefined. */
export function fillPartialRow(row: JobRow, platform: Platform, raw: Raw): JobRow {
  fillKeyColumns(row, raw);
  const values = row as unknown as Raw;
  for (const [column, property, convert] of OPTIONAL_COLUMNS)
    if (column in raw) values[property] = convert(platform, raw[column]);
  return row;
}

type Convert = (platform: Platform, value: unknown) => unknown;
const asIs: Convert = (_p, v) => (v as string | null) ?? null;
const asNumber: Convert = (_p, v) => num(v);
const asDate: Convert = (p, v) => date(p, v);
/** The columns a narrow read may take besides the key ones, converted as toRow converts them. */
export const OPTIONAL_COLUMNS: [JobColumn, string, Convert][] = [
  ['priority_class', 'priorityClass', asIs],
  ['gpus_requested', 'gpusRequested', (_p, v) => Number(v)],
  ['preemption_count', 'preemptionCount', (_p, v) => Number(v)],
  ['max_retries', 'maxRetries', (_p, v) => Number(v)],
  ['disruption_count', 'disruptionCount', (_p, v) => Number(v)],
  ['workload_kind', 'workloadKind', (_p, v) => String(v ?? 'BATCH')],
  ['exit_reason', 'exitReason', asIs],
  ['expected_duration_ms', 'expectedDurationMs', asNumber],
  ['submitted_at', 'submittedAt', asDate],
  ['admitted_at', 'admittedAt', asDate],
  ['started_at', 'startedAt', asDate],
  ['finished_at', 'finishedAt', asDate],
];
