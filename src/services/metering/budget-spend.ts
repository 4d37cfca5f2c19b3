// Month-to-date spend of budgets, read from the hourly rollup (never the ledger): one grouped
// query answers every budget of a set of tenants, so the leader's hold computation and the
// graph's budget lists cost the same whether a tenant has one budget or a hundred.
import type { EntityManager } from '@mikro-orm/core';
import { raw } from '@mikro-orm/core';
import type { SqlEntityManager } from '@mikro-orm/knex';
import { type Budget, BudgetAlert, UsageHourly } from '../../persistence/metering/index.js';

const HOUR_MS = 3_600_000;
/** The forecast's burn-rate window at most: a week evens out weekdays and weekends without going stale. */
export const BURN_WINDOW_MS = 7 * 24 * HOUR_MS;

/** A budget period: the UTC calendar month holding a time. */
export interface Period {
  /** 'YYYY-MM'. */
  key: string;
  /** First millisecond of the month (UTC). */
  start: number;
  /** First millisecond of the next month (UTC). */
  end: number;
}

export function periodOf(nowMs: number): Period {
  const d = new Date(nowMs);
  const year = d.getUTCFullYear();
  const month = d.getUTCMonth();
  return {
    key: `${year}-${String(month + 1).padStart(2, '0')}`,
    start: Date.UTC(year, month, 1),
    end: Date.UTC(year, month + 1, 1),
  };
}

/** Spend of one scope: the month so far, and over the burn window (for the forecast). */
export interface ScopeSpend {
  spent: number;
  recent: number;
}

/** A tenant's spend this period: in total, and per project ('' = jobs without a project). */
export interface TenantSpend extends ScopeSpend {
  projects: Map<string, ScopeSpend>;
}

/**
 * Where the burn window starts: the last week, cut at the month's start (a new month's forecast
 * is its own month's burn), on an hour boundary so that it takes whole hourly buckets.
 */
export function burnWindowStart(period: Period, nowMs: number): number {
  return Math.max(period.start, Math.floor((nowMs - BURN_WINDOW_MS) / HOUR_MS) * HOUR_MS);
}

/**
 * Month-to-date spend of these tenants (all tenants the EntityManager may see when null), by
 * tenant and project. Buckets after `nowMs` are not counted: the spend is as of that time.
 * With `withRecent`, a second grouped query sums the burn window.
 */
export async function spendByTenant(
  em: EntityManager,
  tenantIds: readonly string[] | null,
  nowMs: number,
  withRecent: boolean,
): Promise<Map<string, TenantSpend>> {
  const out = new Map<string, TenantSpend>();
  if (tenantIds && tenantIds.length === 0) return out;
  const period = periodOf(nowMs);
  const last = new Date(Math.min(nowMs, period.end - 1));
  const sums = (from: number) => grouped(em, tenantIds, new Date(from), last);
  const scope = (tenantId: string, projectId: string) => {
    let tenant = out.get(tenantId);
    if (!tenant) out.set(tenantId, (tenant = { spent: 0, recent: 0, projects: new Map() }));
    let project = tenant.projects.get(projectId);
    if (!project) tenant.projects.set(projectId, (project = { spent: 0, recent: 0 }));
    return { tenant, project };
  };
  for (const row of await sums(period.start)) {
    const { tenant, project } = scope(row.tenantId, row.projectId);
    tenant.spent += row.cost;
    project.spent += row.cost;
  }
  if (withRecent) {
    for (const row of await sums(burnWindowStart(period, nowMs))) {
      const { tenant, project } = scope(row.tenantId, row.projectId);
      tenant.recent += row.cost;
      project.recent += row.cost;
    }
  }
  return out;
}

async function grouped(
  em: EntityManager,
  tenantIds: readonly string[] | null,
  from: Date,
  last: Date,
): Promise<{ tenantId: string; projectId: string; cost: number }[]> {
  const where: Record<string, unknown> = { hour: { $gte: from, $lte: last } };
  if (tenantIds) where.tenant = { $in: [...tenantIds] };
  const rows = await (em as SqlEntityManager)
    .createQueryBuilder(UsageHourly, 'u')
    .select(['u.tenant', 'u.projectId', raw('sum(u.cost) as cost')])
    .where(where)
    .groupBy(['u.tenant', 'u.projectId'])
    .execute<{ tenant_id: string; project_id: string; cost: number | string | null }[]>('all', false);
  return rows.map((r) => ({ tenantId: r.tenant_id, projectId: r.project_id, cost: Number(r.cost ?? 0) }));
}

/** The spend a budget counts: its tenant's whole spend, or its project's. */
export function spendOf(budget: Budget, spend: Map<string, TenantSpend>): ScopeSpend {
  const tenant = spend.get(budget.tenant.id);
  if (!tenant) return { spent: 0, recent: 0 };
  if (!budget.project) return tenant;
  return tenant.projects.get(budget.project.id) ?? { spent: 0, recent: 0 };
}

/** Where a budget stands in the period holding `nowMs`. */
export interface BudgetStatus {
  /** 'YYYY-MM' (UTC). */
  period: string;
  /** Month-to-date spend. */
  spent: number;
  /** spent / monthlyAmount × 100. */
  percentUsed: number;
  /** Month-end spend at the burn rate of the last min(7 days, elapsed of the month). */
  forecast: number;
  exhausted: boolean;
  /** Thresholds (percent) already alerted this period, ascending. */
  alertsFired: number[];
}

/**
 * forecast = spent + (spend over the burn window / the window's length) × what is left of the
 * month. At the very start of a month there is no window yet: the forecast is what is spent.
 */
export function statusOf(
  budget: Budget,
  spend: ScopeSpend,
  nowMs: number,
  alertsFired: number[],
): BudgetStatus {
  const period = periodOf(nowMs);
  const span = nowMs - burnWindowStart(period, nowMs);
  const remaining = Math.max(0, period.end - nowMs);
  const forecast = span > 0 ? spend.spent + (spend.recent / span) * remaining : spend.spent;
  return {
    period: period.key,
    spent: spend.spent,
    percentUsed: (spend.spent / budget.monthlyAmount) * 100,
    forecast,
    exhausted: spend.spent >= budget.monthlyAmount,
    alertsFired: [...alertsFired].sort((a, b) => a - b),
  };
}

/** Thresholds alerted this period, per budget id. */
export async function alertsFiredOf(
  em: EntityManager,
  budgetIds: readonly string[],
  period: string,
): Promise<Map<string, number[]>> {
  const out = new Map<string, number[]>();
  if (!budgetIds.length) return out;
  for (const alert of await em.find(
    BudgetAlert,
    { budget: { $in: [...budgetIds] }, period },
    { fields: ['budget', 'threshold'] },
  )) {
    const list = out.get(alert.budget.id) ?? [];
    list.push(alert.threshold);
    out.set(alert.budget.id, list);
  }
  return out;
}

/** Statuses of budgets (any tenants) in two grouped reads of the rollup and one of the alerts. */
export async function statusesOf(
  em: EntityManager,
  budgets: readonly Budget[],
  nowMs: number,
): Promise<Map<string, BudgetStatus>> {
  const tenantIds = [...new Set(budgets.map((b) => b.tenant.id))];
  // One after the other: the EntityManager may be a transaction's (one connection).
  const spend = await spendByTenant(em, tenantIds, nowMs, true);
  const fired = await alertsFiredOf(
    em,
    budgets.map((b) => b.id),
    periodOf(nowMs).key,
  );
  return new Map(budgets.map((b) => [b.id, statusOf(b, spendOf(b, spend), nowMs, fired.get(b.id) ?? [])]));
}

/** One budget's status (the graph lists use `statusesOf`). */
export async function budgetStatus(em: EntityManager, budget: Budget, nowMs: number): Promise<BudgetStatus> {
  return (await statusesOf(em, [budget], nowMs)).get(budget.id)!;
}
