import { z } from 'zod';
import {
  type BudgetView,
  budgetsOf,
  canSeeMoney,
  currencyOf,
  projectBudget,
  removeBudget,
  setBudget,
} from '../../src/services/metering/index.js';
import { getProject } from '../../src/services/tenancy/index.js';
import { forbidden } from '../../src/shared/index.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';
import type { GraphQLContext } from '../context.js';
import { ProjectRef, TenantRef } from '../refs.js';

export const BudgetRef = builder.objectRef<BudgetView>('Budget');
const BudgetScopeEnum = builder.enumType('BudgetScope', { values: ['TENANT', 'PROJECT'] as const });

/**
 * The amounts are money. Budgets are only listed to callers who may see money, but a tenant
 * admin's token without USAGE_READ still gets its setBudget answer: there these are null with FORBIDDEN.
 */
function money(view: BudgetView, ctx: GraphQLContext, value: number): number {
  if (!canSeeMoney(ctx, view.budget.tenant.id))
    throw forbidden(
      'Budget amounts are money: tenant admins, auditors and platform admins with usage:read see them.',
    );
  return value;
}

builder.node(BudgetRef, {
  description:
    "A monthly budget of a tenant or of one of its projects, in the price book's currency; the period is the UTC calendar month.",
  id: { resolve: (view) => view.budget.id },
  isTypeOf: (value) => typeof value === 'object' && value !== null && 'budget' in value && 'status' in value,
  fields: (t) => ({
    scope: t.field({
      type: BudgetScopeEnum,
      resolve: (view) => (view.budget.project ? 'PROJECT' : 'TENANT'),
    }),
    project: t.field({
      type: ProjectRef,
      nullable: true,
      description: 'The project of a PROJECT budget.',
      resolve: (view, _args, ctx) => (view.budget.project ? getProject(ctx, view.budget.project.id) : null),
    }),
    monthlyAmount: t.float({
      nullable: true,
      resolve: (view, _args, ctx) => money(view, ctx, view.budget.monthlyAmount),
    }),
    currency: t.string({ resolve: (_view, _args, ctx) => currencyOf(ctx) }),
    thresholds: t.intList({
      description:
        'Percents of the monthly amount; each alerts once per period (a BUDGET_ALERT tenant event and an audit entry).',
      resolve: (view) => view.budget.thresholds,
    }),
    hard: t.boolean({
      description:
        'Once spent, new jobs of non-exempt priority classes wait with reason BudgetExhausted; running jobs go on.',
      resolve: (view) => view.budget.hard,
    }),
    exemptPriorityClasses: t.stringList({ resolve: (view) => view.budget.exemptPriorityClasses }),
    period: t.string({
      description: "The current period, 'YYYY-MM' (UTC).",
      resolve: (view) => view.status.period,
    }),
    spent: t.float({
      nullable: true,
      description: 'Spent this period (month to date).',
      resolve: (view, _args, ctx) => money(view, ctx, view.status.spent),
    }),
    percentUsed: t.float({
      nullable: true,
      resolve: (view, _args, ctx) => money(view, ctx, view.status.percentUsed),
    }),
    forecast: t.float({
      nullable: true,
      description:
        'Month-end spend at the burn rate of the last 7 days (or of the month so far, when shorter).',
      resolve: (view, _args, ctx) => money(view, ctx, view.status.forecast),
    }),
    exhausted: t.boolean({
      description: 'Spent is at least the monthly amount.',
      resolve: (view) => view.status.exhausted,
    }),
    alertsFired: t.intList({
      description: 'Thresholds already alerted this period.',
      resolve: (view) => view.status.alertsFired,
    }),
  }),
});

builder.objectFields(TenantRef, (t) => ({
  budgets: t.field({
    type: [BudgetRef],
    nullable: true,
    description:
      "The tenant's budget and its projects'. Tenant admins, auditors and platform admins (money); others get null with FORBIDDEN.",
    resolve: (tenant, _args, ctx) => budgetsOf(ctx, tenant.id),
  }),
}));

builder.objectFields(ProjectRef, (t) => ({
  budget: t.field({
    type: BudgetRef,
    nullable: true,
    description: "The project's budget, if it has one. Tenant admins, auditors and platform admins (money).",
    resolve: (project, _args, ctx) => projectBudget(ctx, project),
  }),
}));

const SetBudgetInput = builder.inputType('SetBudgetInput', {
  fields: (t) => ({
    tenantId: t.id({ required: true }),
    projectId: t.id({ description: "A project of the tenant; left out: the tenant's own budget." }),
    monthlyAmount: t.float({ required: true, description: "More than 0, in the price book's currency." }),
    thresholds: t.intList({
      description:
        'Percents (1 to 1000, unique, at most 10). A new budget: [50, 80, 100]; left out: unchanged.',
      validate: z.array(z.any()).max(10, 'at most 10 thresholds'),
    }),
    hard: t.boolean({ description: 'A new budget: false; left out: unchanged.' }),
    exemptPriorityClasses: t.stringList({
      description:
        "Existing priority classes a hard budget never holds. A new budget: ['inference-critical']; left out: unchanged.",
      validate: z.array(z.any()).max(50, 'at most 50 priority classes'),
    }),
  }),
});

const RemoveBudgetPayload = builder.objectRef<{ removedBudgetId: string }>('RemoveBudgetPayload').implement({
  fields: (t) => ({ removedBudgetId: t.exposeID('removedBudgetId') }),
});

builder.mutationFields((t) => ({
  setBudget: t.field({
    type: BudgetRef,
    description:
      "Tenant admins. Sets the tenant's or a project's monthly budget (one per scope; a second call changes it). Audited with the amounts before and after.",
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: SetBudgetInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      setBudget(ctx, {
        tenantId: decodeId(String(input.tenantId), 'Tenant'),
        projectId: input.projectId ? decodeId(String(input.projectId), 'Project') : null,
        monthlyAmount: input.monthlyAmount,
        thresholds: input.thresholds ?? null,
        hard: input.hard ?? null,
        exemptPriorityClasses: input.exemptPriorityClasses ?? null,
      }),
  }),
  removeBudget: t.field({
    type: RemoveBudgetPayload,
    description: 'Tenant admins. Audited; a hold the budget caused is lifted.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await removeBudget(ctx, decodeId(String(id), 'Budget'));
      return { removedBudgetId: String(id) };
    },
  }),
}));
