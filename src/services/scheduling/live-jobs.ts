// The live jobs (pending, admitted, running) a core is built with, read as plain rows in pages of
// hand-written SQL (no entity hydration, identity map or change-tracking snapshots: with 10,000
// pending jobs those cost seconds of CPU), and the event loop's turn between pages and between
// chunks of the core's work, so requests keep being answered while a core is built.
import { setImmediate as turn } from 'node:timers/promises';
import type { EntityManager } from '@mikro-orm/core';
import type { Admission, JobSpec, PodSetSpec } from '../../core/scheduling/index.js';
import { allBound } from '../../persistence/bound-sql.js';
import type { JobState } from '../../persistence/jobs/index.js';
import { tenantScope } from '../../persistence/raw-reads.js';
import { jobSpec } from './specs.js';

/** Rows per page, and core calls (submits) per chunk between two turns of the event loop. */
export const LIVE_JOBS_PAGE = 1000;
export const CORE_CHUNK = 500;

export interface LiveJob {
  id: string;
  state: JobState;
  spec: JobSpec;
  admission: Admission | null;
}

type Raw = Record<string, unknown>;

const COLUMNS = [
  'id',
  'tenant_id',
  'project_id',
  'queue_id',
  'priority_class',
  'submit_time',
  'pod_sets',
  'expected_duration_ms',
  'max_run_ms',
  'checkpoint_interval_ms',
  'checkpoint_resumable',
  'state',
  'admission',
];

/**
 * Every pending, admitted and running job (`pendingOnly`: pending ones) in (submit time, id) order, one page per query with the
 * event loop's turn after each. `queueNames` maps queue ids to names; a job of an unknown queue
 * (written after the configuration was read) is left out, as the core would refuse it.
 */
export async function readLiveJobs(
  em: EntityManager,
  queueNames: Map<string, string>,
  timeScale: number,
  options: { pageSize?: number; pendingOnly?: boolean } = {},
): Promise<LiveJob[]> {
  const pageSize = options.pageSize ?? LIVE_JOBS_PAGE;
  const states = options.pendingOnly ? `('PENDING')` : `('PENDING', 'ADMITTED', 'RUNNING')`;
  const platform = em.getPlatform();
  const q = (id: string) => platform.quoteIdentifier(id);
  const scope = tenantScope(em);
  const jobs: LiveJob[] = [];
  let after: { submitTime: number; id: string } | null = null;
  for (;;) {
    const where = [`${q('state')} in ${states}`];
    const params: unknown[] = [];
    if (scope) {
      where.push(scope.sql);
      params.push(...scope.params);
    }
    if (after) {
      where.push(`(${q('submit_time')} > ? or (${q('submit_time')} = ? and ${q('id')} > ?))`);
      params.push(after.submitTime, after.submitTime, after.id);
    }
    params.push(pageSize);
    const sql = `select ${COLUMNS.map(q).join(', ')} from ${q('jobs')} where ${where.join(' and ')} order by ${q('submit_time')} asc, ${q('id')} asc limit ?`;
    const rows = await allBound<Raw>(em, sql, params);
    for (const raw of rows) {
      const queue = queueNames.get(String(raw.queue_id));
      if (queue === undefined) continue;
      const json = <T>(v: unknown): T | null => (v == null ? null : (platform.convertJsonToJSValue(v) as T));
      const num = (v: unknown): number | null => (v == null ? null : Number(v));
      const spec = jobSpec(
        {
          id: String(raw.id),
          tenant: { id: String(raw.tenant_id) },
          project: raw.project_id == null ? null : { id: String(raw.project_id) },
          priorityClass: String(raw.priority_class),
          submitTime: Number(raw.submit_time),
          podSets: json<PodSetSpec[]>(raw.pod_sets) ?? [],
          expectedDurationMs: num(raw.expected_duration_ms),
          maxRunMs: num(raw.max_run_ms),
          checkpointIntervalMs: num(raw.checkpoint_interval_ms),
          // SQLite stores booleans as 0/1.
          checkpointResumable: Boolean(raw.checkpoint_resumable),
        },
        queue,
        timeScale,
      );
      jobs.push({
        id: spec.id,
        state: raw.state as JobState,
        spec,
        admission: json<Admission>(raw.admission),
      });
    }
    const last = rows[rows.length - 1];
    if (rows.length < pageSize || !last) return jobs;
    after = { submitTime: Number(last.submit_time), id: String(last.id) };
    await turn();
  }
}

/** Calls `each` on every item, with the event loop's turn after every `chunk` of them. */
export async function inChunks<T>(
  items: readonly T[],
  each: (item: T) => void,
  chunk = CORE_CHUNK,
): Promise<void> {
  for (let i = 0; i < items.length; i++) {
    each(items[i] as T);
    if ((i + 1) % chunk === 0 && i + 1 < items.length) await turn();
  }
}
