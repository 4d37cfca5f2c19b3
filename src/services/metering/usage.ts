import type { EntityManager } from '@mikro-orm/core';
import type { SqlEntityManager } from '@mikro-orm/knex';
import { Queue } from '../../persistence/cluster/index.js';
import { Project } from '../../persistence/tenancy/index.js';
import { badInput, forbidden, notFound } from '../../shared/index.js';
import type { ServiceContext } from '../context.js';
import { requirePlatformUsage, usageScopeFor } from './access.js';

/**
 * Usage reads for the graph and the CSV export: one function, so their totals are equal by
 * construction. It reads the hourly rollup (usage_hourly, ~1/60 of the ledger's rows) with one
 * aggregate statement that buckets in SQL, on SQLite and PostgreSQL alike.
 *
 * Time: buckets are UTC. The rollup's grain is the hour, so `from` is rounded down and `to`
 * up to whole hours: the report covers [floor_hour(from), ceil_hour(to)). A DAY or MONTH
 * bucket is labelled by its start even when the range begins inside it.
 */

export const USAGE_DIMENSIONS = ['TENANT', 'PROJECT', 'QUEUE', 'PRIORITY_CLASS', 'USER', 'FLAVOR'] as const;
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number];
export const USAGE_GRANULARITIES = ['HOUR', 'DAY', 'MONTH'] as const;
export type UsageGranularity = (typeof USAGE_GRANULARITIES)[number];

export interface UsageFilter {
  projectId?: string | null;
  queueId?: string | null;
  userId?: string | null;
  flavor?: string | null;
  priorityClass?: string | null;
}

export interface UsageQuery {
  /** null: platform-wide (platform admins only). */
  tenantId: string | null;
  groupBy: readonly UsageDimension[];
  from: Date;
  to: Date;
  granularity: UsageGranularity;
  filter?: UsageFilter | null;
}

export interface UsageRow {
  periodStart: Date | null;
  tenantId: string | null;
  projectId: string | null;
  queueId: string | null;
  userId: string | null;
  priorityClass: string | null;
  flavor: string | null;
  gpuHours: number;
  /** null when the caller may not see money. */
  cost: number | null;
  /** used ÷ measured GPU time; null when nothing was measured. */
  efficiency: number | null;
  jobs: number;
  cpuHours: number;
  memoryGibHours: number;
  /** Sums behind efficiency, kept so totals are exact. */
  usedGpuSeconds: number;
  measuredGpuSeconds: number;
}

export interface UsageReport {
  tenantId: string | null;
  from: Date;
  to: Date;
  granularity: UsageGranularity;
  groupBy: UsageDimension[];
  money: boolean;
  rows: UsageRow[];
  total: UsageRow;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;
/** Longest range per granularity: an hourly report of more than a month is a download, not a query. */
export const MAX_SPAN_DAYS: Record<UsageGranularity, number> = { HOUR: 31, DAY: 400, MONTH: 400 };

const COLUMN: Record<UsageDimension, { column: string; key: keyof UsageRow }> = {
  TENANT: { column: 'tenant_id', key: 'tenantId' },
  PROJECT: { column: 'project_id', key: 'projectId' },
  QUEUE: { column: 'queue_id', key: 'queueId' },
  PRIORITY_CLASS: { column: 'priority_class', key: 'priorityClass' },
  USER: { column: 'user_id', key: 'userId' },
  FLAVOR: { column: 'flavor', key: 'flavor' },
};

/**
 * The report as the caller may see it: platform-wide for platform admins; in a tenant,
 * usage:read, narrowed to the caller's own jobs and without money for MEMBER and VIEWER.
 * Rights are checked before the arguments (an outsider learns nothing from a validation error).
 */
export async function readUsage(ctx: ServiceContext, query: UsageQuery): Promise<UsageReport> {
  let money = true;
  const filter: UsageFilter = { ...(query.filter ?? {}) };
  if (query.tenantId === null) {
    requirePlatformUsage(ctx);
  } else {
    const scope = usageScopeFor(ctx, query.tenantId);
    money = scope.money;
    if (scope.userId) {
      if (filter.userId && filter.userId !== scope.userId)
        throw forbidden("Your role shows only your own jobs' usage.");
      filter.userId = scope.userId;
    }
    await requireInTenant(ctx.em, query.tenantId, filter);
  }
  const range = usageRange(query.from, query.to, query.granularity);
  const rows = await aggregateUsage(ctx.em, {
    tenantId: query.tenantId,
    groupBy: query.groupBy,
    granularity: query.granularity,
    from: range.from,
    to: range.to,
    filter,
  });
  const report = {
    tenantId: query.tenantId,
    ...range,
    granularity: query.granularity,
    groupBy: [...new Set(query.groupBy)],
    money,
    rows,
    total: totalOf(rows),
  };
  if (!money) for (const row of [...report.rows, report.total]) row.cost = null;
  return report;
}

/** A filter's project or queue of another tenant answers like one that does not exist. */
export async function requireInTenant(
  em: EntityManager,
  tenantId: string,
  filter: UsageFilter,
): Promise<void> {
  if (filter.projectId) {
    const project = await em.findOne(Project, { id: filter.projectId });
    if (!project || project.tenant.id !== tenantId) throw notFound('Project');
  }
  if (filter.queueId) {
    const queue = await em.findOne(Queue, { id: filter.queueId });
    if (!queue || queue.tenant.id !== tenantId) throw notFound('Queue');
  }
}

/** Validates and rounds a range to whole hours (from down, to up). */
export function usageRange(from: Date, to: Date, granularity: UsageGranularity): { from: Date; to: Date } {
  if (Number.isNaN(from.getTime()) || Number.isNaN(to.getTime()))
    throw badInput('from and to must be valid instants.');
  if (from.getTime() >= to.getTime()) throw badInput('from must be before to.');
  const start = Math.floor(from.getTime() / HOUR_MS) * HOUR_MS;
  const end = Math.ceil(to.getTime() / HOUR_MS) * HOUR_MS;
  const maxDays = MAX_SPAN_DAYS[granularity];
  if (end - start > maxDays * DAY_MS)
    throw badInput(
      `A ${granularity} report covers at most ${maxDays} days; narrow from/to or use a coarser granularity.`,
    );
  return { from: new Date(start), to: new Date(end) };
}

/** The UTC calendar month 'YYYY-MM' as a range. */
export function monthRange(month: string): { from: Date; to: Date } {
  const match = /^(\d{4})-(0[1-9]|1[0-2])$/.exec(month);
  if (!match) throw badInput('month must be YYYY-MM.');
  const year = Number(match[1]);
  const index = Number(match[2]) - 1;
  return { from: new Date(Date.UTC(year, index, 1)), to: new Date(Date.UTC(year, index + 1, 1)) };
}

function isPostgres(em: EntityManager): boolean {
  return (
    (em as SqlEntityManager).getKnex().client.config.client === 'pg' ||
    (em as SqlEntityManager).getKnex().client.dialect === 'postgresql'
  );
}

/**
 * SQLite keeps datetimes as epoch milliseconds (MikroORM's default there): days are integer
 * arithmetic and months go through strftime. PostgreSQL has timestamptz: date_trunc in UTC.
 */
function bucketSql(pg: boolean, granularity: UsageGranularity): string {
  if (pg)
    return granularity === 'HOUR'
      ? 'hour'
      : `(date_trunc('${granularity.toLowerCase()}', hour at time zone 'UTC') at time zone 'UTC')`;
  if (granularity === 'HOUR') return 'hour';
  if (granularity === 'DAY') return `((hour / ${DAY_MS}) * ${DAY_MS})`;
  return `(cast(strftime('%s', hour / 1000, 'unixepoch', 'start of month') as integer) * 1000)`;
}

/**
 * The aggregate without access checks (callers: readUsage, the bench). One statement:
 * the (tenant_id, hour) index or the unique key (leading hour) narrows the range.
 */
export async function aggregateUsage(
  em: EntityManager,
  q: {
    tenantId: string | null;
    groupBy: readonly UsageDimension[];
    granularity: UsageGranularity;
    from: Date;
    to: Date;
    filter?: UsageFilter;
  },
): Promise<UsageRow[]> {
  const pg = isPostgres(em);
  const knex = (em as SqlEntityManager).getKnex();
  const dims = [...new Set(q.groupBy)].sort(
    (a, b) => USAGE_DIMENSIONS.indexOf(a) - USAGE_DIMENSIONS.indexOf(b),
  );
  const at = (d: Date) => (pg ? d : d.getTime());
  const query = knex('usage_hourly').select(knex.raw(`${bucketSql(pg, q.granularity)} as bucket`));
  for (const dim of dims) query.select(knex.raw(`${COLUMN[dim].column} as d_${COLUMN[dim].column}`));
  query.select(
    knex.raw('sum(gpu_seconds) as gpu'),
    knex.raw('sum(used_gpu_seconds) as used'),
    knex.raw('sum(measured_gpu_seconds) as measured'),
    knex.raw('sum(cpu_seconds) as cpu'),
    knex.raw('sum(memory_gib_seconds) as mem'),
    knex.raw('sum(cost) as cost'),
    knex.raw('sum(jobs) as jobs'),
  );
  if (q.tenantId) query.where('tenant_id', q.tenantId);
  query.where('hour', '>=', at(q.from)).andWhere('hour', '<', at(q.to));
  const f = q.filter ?? {};
  if (f.projectId) query.andWhere('project_id', f.projectId);
  if (f.queueId) query.andWhere('queue_id', f.queueId);
  if (f.userId) query.andWhere('user_id', f.userId);
  if (f.flavor) query.andWhere('flavor', f.flavor);
  if (f.priorityClass) query.andWhere('priority_class', f.priorityClass);
  // Ordinals: the same on both databases, and no clash between the alias and the column "hour".
  const positions = Array.from({ length: dims.length + 1 }, (_, i) => i + 1).join(', ');
  query.groupByRaw(positions).orderByRaw(positions);
  const raw = (await query) as Record<string, unknown>[];
  return raw.map((r) => {
    const row = emptyRow(toDate(r.bucket));
    for (const dim of dims) {
      const value = r[`d_${COLUMN[dim].column}`] as string | null;
      // '' stands for "no project" / "no user" in the rollup.
      (row as unknown as Record<string, unknown>)[COLUMN[dim].key] =
        value === '' || value == null ? null : String(value);
    }
    return fill(row, {
      gpu: num(r.gpu),
      used: num(r.used),
      measured: num(r.measured),
      cpu: num(r.cpu),
      mem: num(r.mem),
      cost: num(r.cost),
      jobs: num(r.jobs),
    });
  });
}

const num = (v: unknown) => (v == null ? 0 : Number(v));
const toDate = (v: unknown) =>
  v instanceof Date
    ? v
    : new Date(typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : (v as number | string));

function emptyRow(periodStart: Date | null): UsageRow {
  return {
    periodStart,
    tenantId: null,
    projectId: null,
    queueId: null,
    userId: null,
    priorityClass: null,
    flavor: null,
    gpuHours: 0,
    cost: 0,
    efficiency: null,
    jobs: 0,
    cpuHours: 0,
    memoryGibHours: 0,
    usedGpuSeconds: 0,
    measuredGpuSeconds: 0,
  };
}

function fill(
  row: UsageRow,
  s: { gpu: number; used: number; measured: number; cpu: number; mem: number; cost: number; jobs: number },
): UsageRow {
  row.gpuHours = s.gpu / 3600;
  row.cpuHours = s.cpu / 3600;
  row.memoryGibHours = s.mem / 3600;
  row.cost = s.cost;
  row.jobs = s.jobs;
  row.usedGpuSeconds = s.used;
  row.measuredGpuSeconds = s.measured;
  row.efficiency = s.measured > 0 ? s.used / s.measured : null;
  return row;
}

/** Sum of the rows (the same numbers whoever adds them up: graph total, CSV TOTAL line). */
export function totalOf(rows: readonly UsageRow[]): UsageRow {
  const s = { gpu: 0, used: 0, measured: 0, cpu: 0, mem: 0, cost: 0, jobs: 0 };
  for (const r of rows) {
    s.gpu += r.gpuHours * 3600;
    s.cpu += r.cpuHours * 3600;
    s.mem += r.memoryGibHours * 3600;
    s.cost += r.cost ?? 0;
    s.jobs += r.jobs;
    s.used += r.usedGpuSeconds;
    s.measured += r.measuredGpuSeconds;
  }
  return fill(emptyRow(null), s);
}
