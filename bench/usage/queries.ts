// What the usage bench times: the service's usage read (readUsage over the hourly rollup, as the
// graph and the CSV export call it), and the baseline — the same grouping computed straight from
// the ledger with SQL, i.e. what a usage query would cost without the rollup.
import type { MikroORM } from '@mikro-orm/core';
import type { Principal } from '../../src/auth/principal.js';
import { scopedEntityManager } from '../../src/persistence/tenant-filter.js';
import type { ServiceContext } from '../../src/services/context.js';
import { readUsage, type UsageRow } from '../../src/services/metering/usage.js';
import { type Dialect, knexOf } from './load.js';

export interface UsageWindow {
  tenantId: string;
  from: Date;
  to: Date;
}

/** A per-(project, day) figure both queries produce, to check they agree. */
export interface Cell {
  projectId: string | null;
  day: number;
  gpuSeconds: number;
  cost: number;
  jobs: number;
}

/**
 * The caller: a tenant admin of the big tenant signed in as a user (usage:read and money).
 * readUsage reads only `em` and `principal` of its context; the rest of a request's context
 * (event bus, scheduler, loaders) has no part in a usage read and is left out.
 */
function tenantAdminContext(orm: MikroORM, tenantId: string, userId: string): ServiceContext {
  const principal: Principal = {
    kind: 'user',
    userId,
    email: 'admin@bench.example',
    name: 'Bench admin',
    isPlatformAdmin: false,
    roles: new Map([[tenantId, 'TENANT_ADMIN']]),
    projectRoles: new Map(),
    breakGlass: new Map(),
  };
  const em = scopedEntityManager(orm, { tenantIds: [tenantId] });
  return {
    em,
    principal,
    requestId: 'bench-usage',
    now: () => new Date(),
  } as Partial<ServiceContext> as ServiceContext;
}

/** The query under test: a fresh request context each call, as the API gives each request one. */
export function serviceQuery(orm: MikroORM, w: UsageWindow, userId: string): () => Promise<Cell[]> {
  return async () => {
    const report = await readUsage(tenantAdminContext(orm, w.tenantId, userId), {
      tenantId: w.tenantId,
      groupBy: ['PROJECT'],
      from: w.from,
      to: w.to,
      granularity: 'DAY',
      filter: {},
    });
    return report.rows.map(cellOf);
  };
}

const cellOf = (r: UsageRow): Cell => ({
  projectId: r.projectId,
  day: r.periodStart!.getTime(),
  gpuSeconds: r.gpuHours * 3600,
  cost: r.cost ?? 0,
  jobs: r.jobs,
});

/** The baseline: GROUP BY project, UTC day over the ledger itself. */
export function baselineQuery(orm: MikroORM, dialect: Dialect, w: UsageWindow): () => Promise<Cell[]> {
  const knex = knexOf(orm);
  const pg = dialect === 'postgresql';
  const day = pg ? `date_trunc('day', started_at at time zone 'UTC')` : 'started_at / 86400000';
  const sql =
    `select project_id, ${day} as day, sum(gpu_seconds) as gpu, sum(cost) as cost, ` +
    `sum(case when first_of_job then 1 else 0 end) as jobs from usage_records ` +
    `where tenant_id = ? and started_at >= ? and started_at < ? group by 1, 2 order by 1, 2`;
  const at = (d: Date) => (pg ? d : d.getTime());
  return async () => {
    const result = (await knex.raw(sql, [w.tenantId, at(w.from), at(w.to)])) as
      | { rows?: Record<string, unknown>[] }
      | Record<string, unknown>[];
    const rows = Array.isArray(result) ? result : (result.rows ?? []);
    return rows.map((r) => ({
      projectId: (r.project_id as string | null) ?? null,
      day: pg ? utcMidnight(r.day) : Number(r.day) * 86_400_000,
      gpuSeconds: Number(r.gpu),
      cost: Number(r.cost),
      jobs: Number(r.jobs),
    }));
  };
}

/**
 * PostgreSQL answers a timestamp without zone (UTC midnight): the ORM's pg client keeps it a
 * string ('2026-11-01 00:00:00'); a plain pg client would make it a Date in local time.
 */
const utcMidnight = (v: unknown) =>
  v instanceof Date
    ? v.getTime() - v.getTimezoneOffset() * 60_000
    : Date.parse(`${String(v).replace(' ', 'T')}Z`);

/** Differences between two answers beyond float rounding (empty when they agree). */
export function compareCells(a: Cell[], b: Cell[]): string[] {
  const key = (c: Cell) => `${c.projectId ?? ''}@${c.day}`;
  const bm = new Map(b.map((c) => [key(c), c]));
  const problems: string[] = [];
  if (a.length !== b.length) problems.push(`${a.length} vs ${b.length} (project, day) cells`);
  const close = (x: number, y: number) => Math.abs(x - y) <= 1e-6 * Math.max(1, Math.abs(x), Math.abs(y));
  for (const c of a) {
    const d = bm.get(key(c));
    if (!d) problems.push(`missing ${key(c)}`);
    else if (!close(c.gpuSeconds, d.gpuSeconds) || !close(c.cost, d.cost) || c.jobs !== d.jobs) {
      problems.push(
        `${key(c)}: gpu ${c.gpuSeconds} vs ${d.gpuSeconds}, cost ${c.cost} vs ${d.cost}, jobs ${c.jobs} vs ${d.jobs}`,
      );
    }
    if (problems.length > 5) break;
  }
  return problems;
}
