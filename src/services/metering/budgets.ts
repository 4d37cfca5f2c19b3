// Budgets per tenant and per project: monthly amounts in the price book's currency,
// alert thresholds, and hard budgets that hold back new work. Changing them is for tenant admins
// and audited; reading them is reading money (src/services/metering/access.ts decides who may).
// What budgets do by themselves (alerts, holds) is in budget-holds.ts; spend and status in budget-spend.ts.
import { z } from 'zod';
import { PriorityClassRow } from '../../persistence/cluster/index.js';
import { Budget } from '../../persistence/metering/index.js';
import { Project, type Tenant } from '../../persistence/tenancy/index.js';
import { badInput, forbidden, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import { requireTenantAdmin, type ServiceContext } from '../context.js';
import { canSeeMoney, requireUsageRead } from './access.js';
import { type BudgetStatus, statusesOf } from './budget-spend.js';

export {
  type BudgetAlertRow,
  computeHolds,
  evaluateBudgets,
  type FiredAlert,
  METERING_REQUEST_ID,
} from './budget-holds.js';
export { type BudgetStatus, budgetStatus, periodOf } from './budget-spend.js';

export const DEFAULT_THRESHOLDS: readonly number[] = [50, 80, 100];
export const DEFAULT_EXEMPT_PRIORITY_CLASSES: readonly string[] = ['inference-critical'];
export const MAX_THRESHOLDS = 10;
/** scopeKey of a tenant's own budget (a project budget's is the project id). */
export const TENANT_SCOPE_KEY = 'tenant';

/** What the graph shows of a budget: the row and where it stands this month. */
export interface BudgetView {
  budget: Budget;
  status: BudgetStatus;
}

export interface SetBudgetInput {
  tenantId: string;
  /** A project of the tenant; absent or null: the tenant's own budget. */
  projectId?: string | null;
  monthlyAmount: number;
  /** Percents (1..1000, unique, at most 10). New budget: [50, 80, 100]; existing: unchanged when absent. */
  thresholds?: number[] | null;
  /** New budget: false; existing: unchanged when absent. */
  hard?: boolean | null;
  /** Priority classes a hard budget never holds. New budget: ['inference-critical']; existing: unchanged
   * when absent.
   */
  exemptPriorityClasses?: string[] | null;
}

const thresholdsSchema = z
  .array(
    z
      .number()
      .int('must be whole percents')
      .min(1, 'must be at least 1 %')
      .max(1000, 'must be at most 1000 %'),
  )
  .max(MAX_THRESHOLDS, `at most ${MAX_THRESHOLDS} thresholds`)
  .refine((list) => new Set(list).size === list.length, 'must not repeat a threshold');
const inputSchema = z.object({
  monthlyAmount: z
    .number()
    .finite('must be a finite number')
    .positive('must be more than 0')
    .max(1e15, 'is too large'),
  thresholds: thresholdsSchema.nullish(),
  hard: z.boolean().nullish(),
  exemptPriorityClasses: z.array(z.string().min(1).max(63)).max(50, 'at most 50 priority classes').nullish(),
});

function validated(input: SetBudgetInput): z.infer<typeof inputSchema> {
  const parsed = inputSchema.safeParse(input);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || 'input'}: ${issue.message}`);
  throw badInput(`Invalid budget: ${problems.join('; ')}`, { problems });
}

/** What the audit log keeps of a budget (before and after a change). */
function auditedFields(b: Budget) {
  return {
    monthlyAmount: b.monthlyAmount,
    thresholds: [...b.thresholds],
    hard: b.hard,
    exemptPriorityClasses: [...b.exemptPriorityClasses],
  };
}

/**
 * Sets the tenant's budget, or a project's (upsert by scope). Tenant admins only (a platform admin
 * under a break-glass grant); a project of another tenant is NOT_FOUND, as an unknown one.
 */
export async function setBudget(ctx: ServiceContext, input: SetBudgetInput): Promise<BudgetView> {
  // The audit entry is built after the work: `before` is filled in once the current row is read.
  const auditInput: Record<string, unknown> = { ...input, projectId: input.projectId ?? null };
  const view = await auditedMutation(
    ctx,
    { action: 'budget.set', input: auditInput, tenantHint: input.tenantId },
    async (em) => {
      // Rights before validation: an outsider learns nothing about what a valid input would be.
      requireTenantAdmin(ctx, input.tenantId, 'projects:write', 'Tenant');
      const valid = validated(input);
      let project: Project | null = null;
      if (input.projectId) {
        project = await em.findOne(Project, { id: input.projectId, tenant: input.tenantId });
        if (!project) throw notFound('Project');
      }
      const exempt = valid.exemptPriorityClasses ? [...new Set(valid.exemptPriorityClasses)] : null;
      if (exempt?.length) {
        const known = new Set(
          (await em.find(PriorityClassRow, { name: { $in: exempt } }, { fields: ['name'] })).map(
            (row) => row.name,
          ),
        );
        const unknown = exempt.filter((name) => !known.has(name));
        if (unknown.length) throw badInput(`Unknown priority class: ${unknown.join(', ')}.`);
      }
      const scopeKey = project ? project.id : TENANT_SCOPE_KEY;
      let budget = await em.findOne(Budget, { tenant: input.tenantId, scopeKey });
      auditInput.before = budget ? auditedFields(budget) : null;
      if (budget) {
        budget.monthlyAmount = valid.monthlyAmount;
        if (valid.thresholds) budget.thresholds = [...valid.thresholds].sort((a, b) => a - b);
        if (valid.hard != null) budget.hard = valid.hard;
        if (exempt) budget.exemptPriorityClasses = exempt;
      } else {
        budget = em.create(Budget, {
          tenant: input.tenantId,
          project,
          scopeKey,
          monthlyAmount: valid.monthlyAmount,
          thresholds: [...(valid.thresholds ?? DEFAULT_THRESHOLDS)].sort((a, b) => a - b),
          hard: valid.hard ?? false,
          exemptPriorityClasses: exempt ?? [...DEFAULT_EXEMPT_PRIORITY_CLASSES],
        });
      }
      await em.flush();
      auditInput.after = auditedFields(budget);
      const status = (await statusesOf(em, [budget], ctx.now().getTime())).get(budget.id)!;
      return {
        result: { budget, status },
        tenantId: input.tenantId,
        targetType: 'Budget',
        targetId: budget.id,
      };
    },
  );
  // After commit: the scheduling leader recomputes its admission holds (a raised hard budget lets jobs run).
  ctx.scheduler.announce({ kind: 'budgets' });
  return view;
}

/** Removes a budget (a hold it caused is lifted when the leader refreshes its holds, announced here). Tenant
 * admins only.
 */
export async function removeBudget(ctx: ServiceContext, id: string): Promise<string> {
  const auditInput: Record<string, unknown> = { id };
  const removed = await auditedMutation(ctx, { action: 'budget.remove', input: auditInput }, async (em) => {
    const budget = await em.findOne(Budget, { id });
    if (!budget) throw notFound('Budget');
    requireTenantAdmin(ctx, budget.tenant.id, 'projects:write', 'Budget');
    auditInput.before = { ...auditedFields(budget), projectId: budget.project?.id ?? null };
    const tenantId = budget.tenant.id;
    em.remove(budget);
    await em.flush();
    return { result: id, tenantId, targetType: 'Budget', targetId: id };
  });
  ctx.scheduler.announce({ kind: 'budgets' });
  return removed;
}

/**
 * Budgets are money: reading them takes usage:read (NOT_FOUND outside the tenant, FORBIDDEN
 * without it) and the right to see money (tenant admins, auditors, platform admins: FORBIDDEN
 * for members and viewers).
 */
export function requireBudgetRead(ctx: ServiceContext, tenantId: string, what = 'Tenant'): void {
  requireUsageRead(ctx, tenantId, what);
  if (!canSeeMoney(ctx, tenantId))
    throw forbidden('Budgets are money: tenant admins, auditors and platform admins read them.');
}

/** The tenant's budgets (its own first, then its projects'), each with where it stands this month. */
export async function budgetsOf(ctx: ServiceContext, tenantId: string): Promise<BudgetView[]> {
  requireBudgetRead(ctx, tenantId);
  const budgets = await ctx.em.find(
    Budget,
    { tenant: tenantId },
    { orderBy: { createdAt: 'asc', id: 'asc' } },
  );
  budgets.sort((a, b) => Number(b.scopeKey === TENANT_SCOPE_KEY) - Number(a.scopeKey === TENANT_SCOPE_KEY));
  const statuses = await statusesOf(ctx.em, budgets, ctx.now().getTime());
  return budgets.map((budget) => ({ budget, status: statuses.get(budget.id)! }));
}

/** A project's budget, or null when it has none. */
export async function projectBudget(
  ctx: ServiceContext,
  project: Pick<Project, 'id' | 'tenant'>,
): Promise<BudgetView | null> {
  requireBudgetRead(ctx, project.tenant.id, 'Project');
  return viewOf(ctx, await ctx.em.findOne(Budget, { tenant: project.tenant.id, scopeKey: project.id }));
}

/** A tenant's own budget, or null. */
export async function tenantBudget(
  ctx: ServiceContext,
  tenant: Pick<Tenant, 'id'>,
): Promise<BudgetView | null> {
  requireBudgetRead(ctx, tenant.id);
  return viewOf(ctx, await ctx.em.findOne(Budget, { tenant: tenant.id, scopeKey: TENANT_SCOPE_KEY }));
}

/** A budget by id (for `node`): another tenant's is NOT_FOUND, as an unknown one. */
export async function getBudget(ctx: ServiceContext, id: string): Promise<BudgetView> {
  const budget = await ctx.em.findOne(Budget, { id });
  if (!budget) throw notFound('Budget');
  requireBudgetRead(ctx, budget.tenant.id, 'Budget');
  return (await viewOf(ctx, budget))!;
}

async function viewOf(ctx: ServiceContext, budget: Budget | null): Promise<BudgetView | null> {
  if (!budget) return null;
  return { budget, status: (await statusesOf(ctx.em, [budget], ctx.now().getTime())).get(budget.id)! };
}
