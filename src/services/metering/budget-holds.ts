// What budgets do on their own, without a caller: alert when a threshold is crossed (called by the
// ledger writer inside its transaction) and hold back new work when a hard budget is spent (read
// by the scheduling leader). Neither opens a transaction of its own.
import type { EntityManager } from '@mikro-orm/core';
import type { SqlEntityManager } from '@mikro-orm/knex';
import type { AdmissionHold } from '../../core/scheduling/index.js';
import { AuditEvent } from '../../persistence/audit/index.js';
import { uuidv7 } from '../../persistence/ids.js';
import { Budget, BudgetAlert } from '../../persistence/metering/index.js';
import { recordOutbox } from '../../persistence/scheduling/index.js';
import { alertsFiredOf, periodOf, spendByTenant, spendOf } from './budget-spend.js';

/** The audit log's request id for what metering writes by itself (no request behind it). */
export const METERING_REQUEST_ID = 'metering';

/** A threshold that fired: what was written (alert, audit entry, outbox row). */
export interface FiredAlert {
  alertId: string;
  auditEventId: string;
  tenantId: string;
  budgetId: string;
  projectId: string | null;
  /** Percent of the monthly amount. */
  threshold: number;
  spent: number;
  limit: number;
  currency: string;
  /** 'YYYY-MM' (UTC). */
  period: string;
  /** ms since epoch. */
  at: number;
}
/** The design's name for the same rows. */
export type BudgetAlertRow = FiredAlert;

/**
 * For every budget of these tenants (null: of every tenant — the leader after each checkpoint): each
 * threshold crossed this period (UTC month) and not yet
 * alerted gets its BudgetAlert row, an audit entry (actor: the system) and an outbox row
 * 'tenant.budget-alert' (published as a BUDGET_ALERT tenant event once the caller commits).
 *
 * Runs in the caller's transaction: `em` is transactional; this only flushes. A threshold fires
 * once per period: the alerts already written are read first, and the insert itself does nothing
 * on the unique key (budget, period, threshold), so a concurrent writer that got there first is
 * skipped rather than failing the caller's transaction.
 */
export async function evaluateBudgets(
  em: EntityManager,
  tenantIds: Iterable<string> | null,
  nowMs: number,
  currency: string,
): Promise<FiredAlert[]> {
  const ids = tenantIds === null ? null : [...new Set(tenantIds)];
  if (ids && !ids.length) return [];
  const budgets = await em.find(Budget, ids ? { tenant: { $in: ids } } : {}, { orderBy: { id: 'asc' } });
  if (!budgets.length) return [];
  const period = periodOf(nowMs);
  const spend = await spendByTenant(em, [...new Set(budgets.map((b) => b.tenant.id))], nowMs, false);
  const fired = await alertsFiredOf(
    em,
    budgets.map((b) => b.id),
    period.key,
  );
  const at = new Date(nowMs);
  const out: FiredAlert[] = [];
  for (const budget of budgets) {
    const { spent } = spendOf(budget, spend);
    const already = new Set(fired.get(budget.id) ?? []);
    for (const threshold of [...budget.thresholds].sort((a, b) => a - b)) {
      // spent ≥ amount × threshold %, compared without dividing (100 % of 30 is exactly 30).
      if (already.has(threshold) || spent * 100 < budget.monthlyAmount * threshold) continue;
      const alertId = uuidv7();
      const result = await (em as SqlEntityManager)
        .createQueryBuilder(BudgetAlert)
        .insert({
          id: alertId,
          budget: budget.id,
          tenant: budget.tenant.id,
          period: period.key,
          threshold,
          spent,
          limitAmount: budget.monthlyAmount,
          at,
        })
        .onConflict(['budget', 'period', 'threshold'])
        .ignore()
        .execute('run');
      if (!result.affectedRows) continue;
      const alert: FiredAlert = {
        alertId,
        auditEventId: '',
        tenantId: budget.tenant.id,
        budgetId: budget.id,
        projectId: budget.project?.id ?? null,
        threshold,
        spent,
        limit: budget.monthlyAmount,
        currency,
        period: period.key,
        at: nowMs,
      };
      // Built as auditedMutation builds its events (src/services/audit/audit.ts), with no actor: the system.
      // The id is set here (not at flush) because the outbox row names it.
      const audit = em.create(AuditEvent, {
        id: uuidv7(),
        tenant: budget.tenant.id,
        actor: null,
        actorTokenId: null,
        action: 'budget.alert',
        targetType: 'Budget',
        targetId: budget.id,
        input: {
          threshold,
          spent,
          limit: budget.monthlyAmount,
          currency,
          period: period.key,
          projectId: alert.projectId,
        },
        outcome: 'SUCCESS',
        errorCode: null,
        requestId: METERING_REQUEST_ID,
        createdAt: at,
      });
      alert.auditEventId = audit.id;
      const { alertId: _a, ...payload } = alert;
      // auditEventId rides along so the dispatcher also announces the audit entry after commit.
      recordOutbox(em, 'tenant.budget-alert', payload);
      out.push(alert);
    }
  }
  await em.flush();
  return out;
}

/**
 * Every hard budget spent this period (UTC month) as an admission hold: the tenant's or the
 * project's pending jobs of non-exempt priority classes wait until it is raised, removed or the
 * month ends. Two reads whatever the number of budgets: the hard budgets, and one grouped query
 * over this month's rollup for their tenants.
 */
export async function computeHolds(
  em: EntityManager,
  nowMs: number,
  currency: string,
): Promise<AdmissionHold[]> {
  const budgets = await em.find(Budget, { hard: true }, { orderBy: { id: 'asc' } });
  if (!budgets.length) return [];
  const period = periodOf(nowMs);
  const spend = await spendByTenant(em, [...new Set(budgets.map((b) => b.tenant.id))], nowMs, false);
  const holds: AdmissionHold[] = [];
  for (const budget of budgets) {
    const { spent } = spendOf(budget, spend);
    if (spent < budget.monthlyAmount) continue;
    holds.push({
      scope: budget.project ? 'project' : 'tenant',
      id: budget.project ? budget.project.id : budget.tenant.id,
      exemptPriorityClasses: [...budget.exemptPriorityClasses],
      budget: { spent, limit: budget.monthlyAmount, currency, period: period.key },
    });
  }
  return holds;
}
