import { z } from 'zod';
import { Membership } from '../../src/persistence/tenancy/index.js';
import {
  canSeeMoney,
  currencyOf,
  estimateCost,
  readUsage,
  requirePlatformUsage,
  requireUsageRead,
  USAGE_DIMENSIONS,
  USAGE_GRANULARITIES,
  type UsageFilter,
  type UsageReport,
  type UsageRow,
} from '../../src/services/metering/index.js';
import { memberName } from '../../src/services/tenancy/index.js';
import { notFound } from '../../src/shared/index.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';
import type { GraphQLContext } from '../context.js';
import { JobPreviewRef } from '../jobs/index.js';
import { ProjectRef, QueueRef, TenantRef } from '../refs.js';

export const UsageDimensionEnum = builder.enumType('UsageDimension', { values: USAGE_DIMENSIONS });
export const UsageGranularityEnum = builder.enumType('UsageGranularity', {
  description:
    'UTC buckets. from/to are rounded to whole hours (from down, to up); HOUR covers at most 31 days, DAY and MONTH 400.',
  values: USAGE_GRANULARITIES,
});

export const UsageFilterInput = builder.inputType('UsageFilter', {
  fields: (t) => ({
    projectId: t.id({ description: 'Ignored by Project.usage (always that project).' }),
    queueId: t.id(),
    memberId: t.id({
      description: "A Member of the tenant: that person's jobs (members and viewers: only their own).",
    }),
    flavor: t.string({ validate: z.string().max(63) }),
    priorityClass: t.string({ validate: z.string().max(63) }),
  }),
});

type FilterArgs =
  | {
      projectId?: string | number | null;
      queueId?: string | number | null;
      memberId?: string | number | null;
      flavor?: string | null;
      priorityClass?: string | null;
    }
  | null
  | undefined;

/** A row with what its resolvers need: the report's tenant (for names) and the caller's money right. */
type RowParent = UsageRow & { reportTenantId: string | null };
type ReportParent = UsageReport & { currency: string };

const UsageRowRef = builder.objectRef<RowParent>('UsageRow').implement({
  description:
    'GPU-hours, cost and efficiency of one bucket × group (or the total: no periodStart and no groups).',
  fields: (t) => ({
    periodStart: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'Start of the UTC bucket; null on the total.',
      resolve: (r) => r.periodStart,
    }),
    tenant: t.field({
      type: TenantRef,
      nullable: true,
      description: 'Grouped by TENANT: your own tenant, or any for platform admins.',
      resolve: (r, _a, ctx) => (r.tenantId ? ctx.loaders.tenant.load(r.tenantId) : null),
    }),
    project: t.field({
      type: ProjectRef,
      nullable: true,
      resolve: (r, _a, ctx) => (r.projectId ? ctx.loaders.project.load(r.projectId) : null),
    }),
    queue: t.field({
      type: QueueRef,
      nullable: true,
      resolve: (r, _a, ctx) => (r.queueId ? ctx.loaders.queue.load(r.queueId) : null),
    }),
    user: t.string({
      nullable: true,
      description: 'Grouped by USER: the name the tenant knows the person by.',
      resolve: (r, _a, ctx) => userName(ctx, r),
    }),
    priorityClass: t.string({ nullable: true, resolve: (r) => r.priorityClass }),
    flavor: t.string({ nullable: true, resolve: (r) => r.flavor }),
    gpuHours: t.float({
      description: 'Device-equivalent GPU-hours (a MIG slice or share counts as its fraction of a GPU).',
      resolve: (r) => r.gpuHours,
    }),
    cost: t.float({
      nullable: true,
      description:
        "In the report's currency; null unless you may see money (tenant admins, auditors, platform admins).",
      resolve: (r) => r.cost,
    }),
    efficiency: t.float({
      nullable: true,
      description: 'Used ÷ allocated GPU time where utilization was sampled; null when nothing was.',
      resolve: (r) => r.efficiency,
    }),
    jobs: t.int({ description: 'Jobs that first ran in the period.', resolve: (r) => r.jobs }),
    cpuHours: t.float({ description: 'Core-hours.', resolve: (r) => r.cpuHours }),
    memoryGibHours: t.float({ resolve: (r) => r.memoryGibHours }),
  }),
});

/** The name the row's tenant knows the person by (never another tenant's name for them). */
async function userName(ctx: GraphQLContext, row: RowParent): Promise<string | null> {
  if (!row.userId) return null;
  const tenantId = row.tenantId ?? row.reportTenantId;
  if (tenantId) {
    const membership = await ctx.loaders.membership.load(`${tenantId}:${row.userId}`);
    return membership ? memberName(membership) : null;
  }
  // Platform-wide without TENANT: only platform admins get here.
  return (await ctx.loaders.user.load(row.userId))?.name ?? null;
}

const UsageReportRef = builder.objectRef<ReportParent>('UsageReport').implement({
  fields: (t) => ({
    currency: t.exposeString('currency', { description: "The price book's currency (ISO 4217)." }),
    from: t.field({ type: 'DateTime', description: 'Rounded down to the hour.', resolve: (r) => r.from }),
    to: t.field({
      type: 'DateTime',
      description: 'Rounded up to the hour (exclusive).',
      resolve: (r) => r.to,
    }),
    granularity: t.field({ type: UsageGranularityEnum, resolve: (r) => r.granularity }),
    groupBy: t.field({ type: [UsageDimensionEnum], resolve: (r) => r.groupBy }),
    rows: t.field({
      type: [UsageRowRef],
      resolve: (r) => r.rows.map((row) => ({ ...row, reportTenantId: r.tenantId })),
    }),
    total: t.field({ type: UsageRowRef, resolve: (r) => ({ ...r.total, reportTenantId: r.tenantId }) }),
  }),
});

interface UsageArgs {
  groupBy?: readonly (typeof USAGE_DIMENSIONS)[number][] | null;
  from: Date;
  to: Date;
  granularity?: (typeof USAGE_GRANULARITIES)[number] | null;
  filter?: FilterArgs;
}

/** Decodes the filter's ids (wrong type or unknown: NOT_FOUND) and turns a Member into its person. */
async function decodeFilter(
  ctx: GraphQLContext,
  tenantId: string | null,
  filter: FilterArgs,
): Promise<UsageFilter> {
  const out: UsageFilter = { flavor: filter?.flavor ?? null, priorityClass: filter?.priorityClass ?? null };
  if (filter?.projectId) out.projectId = decodeId(String(filter.projectId), 'Project');
  if (filter?.queueId) out.queueId = decodeId(String(filter.queueId), 'Queue');
  if (filter?.memberId) {
    const membership = await ctx.em.findOne(Membership, { id: decodeId(String(filter.memberId), 'Member') });
    if (!membership || (tenantId && membership.tenant.id !== tenantId)) throw notFound('Member');
    out.userId = membership.user.id;
  }
  return out;
}

async function report(
  ctx: GraphQLContext,
  tenantId: string | null,
  args: UsageArgs,
  override: Partial<UsageFilter> = {},
): Promise<ReportParent> {
  // readUsage checks rights before the range, so an outsider learns nothing from a validation error;
  // the filter's ids are decoded after the tenant is known to be the caller's.
  const base = {
    tenantId,
    groupBy: args.groupBy ?? [],
    from: args.from,
    to: args.to,
    granularity: args.granularity ?? 'DAY',
  } as const;
  if (tenantId) requireUsageRead(ctx, tenantId);
  else requirePlatformUsage(ctx);
  const filter = { ...(await decodeFilter(ctx, tenantId, args.filter)), ...override };
  return { ...(await readUsage(ctx, { ...base, filter })), currency: currencyOf(ctx) };
}

// biome-ignore lint/suspicious/noExplicitAny: Pothos' field-builder `arg` is generic over the whole schema type.
const usageArgs = (t: { arg: any }) => ({
  groupBy: t.arg({ type: [UsageDimensionEnum], defaultValue: [] }),
  from: t.arg({ type: 'DateTime', required: true }),
  to: t.arg({ type: 'DateTime', required: true, description: 'Exclusive.' }),
  granularity: t.arg({ type: UsageGranularityEnum, defaultValue: 'DAY' }),
  filter: t.arg({ type: UsageFilterInput }),
});

builder.queryFields((t) => ({
  usage: t.field({
    type: UsageReportRef,
    description:
      'GPU-hours, cost, efficiency and jobs from the hourly rollup of the usage ledger. With tenantId: that tenant (usage:read; members and viewers see only their own jobs and no cost). Without: platform-wide, platform admins only.',
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id(), ...usageArgs(t) },
    resolve: (_r, args, ctx) =>
      report(ctx, args.tenantId ? decodeId(String(args.tenantId), 'Tenant') : null, args as UsageArgs),
  }),
}));

builder.objectFields(TenantRef, (t) => ({
  usage: t.field({
    type: UsageReportRef,
    description: "This tenant's usage (see Query.usage).",
    args: usageArgs(t),
    resolve: (tenant, args, ctx) => report(ctx, tenant.id, args as UsageArgs),
  }),
}));

builder.objectFields(ProjectRef, (t) => ({
  usage: t.field({
    type: UsageReportRef,
    description: "This project's usage (see Query.usage); filter.projectId is ignored.",
    args: usageArgs(t),
    resolve: (project, args, ctx) =>
      report(
        ctx,
        project.tenant.id,
        { ...(args as UsageArgs), filter: { ...((args as UsageArgs).filter ?? {}), projectId: null } },
        { projectId: project.id },
      ),
  }),
}));

builder.objectFields(JobPreviewRef, (t) => ({
  estimatedGpuHours: t.float({
    nullable: true,
    description:
      'Declared duration (expectedDuration, else maxRun) × the GPUs it would hold; null without a declared duration.',
    resolve: async (p, _a, ctx) => (await estimateCost(ctx, p.submit, p.admission))?.gpuHours ?? null,
  }),
  estimatedCost: t.float({
    nullable: true,
    description:
      'estimatedGpuHours priced at the current price book (flavor unit price × priority-class multiplier); null without a declared duration, or unless you may see money.',
    resolve: async (p, _a, ctx) =>
      canSeeMoney(ctx, p.tenantId) ? ((await estimateCost(ctx, p.submit, p.admission))?.cost ?? null) : null,
  }),
}));
