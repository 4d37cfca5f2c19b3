import { z } from 'zod';
import type { JobRowPage } from '../../src/persistence/jobs/index.js';
import { listQueues, queueUsage } from '../../src/services/cluster/index.js';
import { listJobs } from '../../src/services/jobs/index.js';
import { getTenant } from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import { decodeId, IsolationLevelEnum, JobStateEnum } from '../common.js';
import { jobColumnsOf } from '../job-columns.js';
import { JobRef, QueueRef, TenantRef } from '../refs.js';
import { isEntity, tenantConnection } from '../tenancy/index.js';
import { QuotaRef, quotaLines, ResourceEnum } from './quota.js';

export const QueueingStrategyEnum = builder.enumType('QueueingStrategy', {
  values: {
    STRICT_FIFO: { value: 'StrictFIFO', description: 'The head blocks the queue until it is admitted.' },
    BEST_EFFORT_FIFO: {
      value: 'BestEffortFIFO',
      description: 'A head that cannot fit steps aside for the next.',
    },
  } as const,
});
export const WithinQueueEnum = builder.enumType('WithinQueuePreemption', {
  values: {
    NEVER: { value: 'Never' },
    LOWER_PRIORITY: { value: 'LowerPriority' },
    LOWER_OR_NEWER_EQUAL_PRIORITY: { value: 'LowerOrNewerEqualPriority' },
  } as const,
});
export const ReclaimEnum = builder.enumType('ReclaimWithinCohort', {
  values: {
    NEVER: { value: 'Never' },
    LOWER_PRIORITY: { value: 'LowerPriority' },
    ANY: { value: 'Any' },
  } as const,
});

interface UsageLine {
  flavor: string;
  resource: 'gpu' | 'cpu' | 'memory';
  nominal: number;
  used: number;
  borrowed: number;
  lent: number;
  borrowingLimit: number | null;
  lendingLimit: number | null;
}

const QueueUsageRef = builder.objectRef<UsageLine>('QueueUsage').implement({
  description: 'Live usage of one flavor/resource, from the scheduler.',
  fields: (t) => ({
    flavor: t.exposeString('flavor'),
    resource: t.field({ type: ResourceEnum, resolve: (u) => u.resource }),
    nominal: t.exposeFloat('nominal'),
    used: t.exposeFloat('used'),
    borrowed: t.exposeFloat('borrowed', { description: 'Usage above nominal, taken from the cohort.' }),
    lent: t.exposeFloat('lent', { description: 'Unused nominal that other queues of the cohort use now.' }),
    borrowingLimit: t.float({ nullable: true, resolve: (u) => u.borrowingLimit }),
    lendingLimit: t.float({ nullable: true, resolve: (u) => u.lendingLimit }),
  }),
});

builder.node(QueueRef, {
  description: "Where a tenant's jobs wait for quota (Kueue's ClusterQueue).",
  id: { resolve: (q) => q.id },
  isTypeOf: (v) => isEntity(v, 'Queue'),
  fields: (t) => ({
    name: t.exposeString('name'),
    tenant: t.field({ type: TenantRef, resolve: (q, _a, ctx) => getTenant(ctx, q.tenant.id) }),
    cohortName: t.string({
      nullable: true,
      resolve: async (q, _a, ctx) => ctx.scheduler.queueStatus(q.name)?.cohort ?? null,
    }),
    weight: t.float({ resolve: (q) => q.weight }),
    queueingStrategy: t.field({ type: QueueingStrategyEnum, resolve: (q) => q.queueingStrategy }),
    isolationLevel: t.field({
      type: IsolationLevelEnum,
      nullable: true,
      resolve: (q) => (q.isolationLevel as never) ?? null,
    }),
    minRunBeforeReclaimSeconds: t.int({
      nullable: true,
      description:
        'How long a job of this queue on borrowed quota runs before another queue may reclaim it; null: no minimum.',
      resolve: (q) =>
        q.preemption?.minRunBeforeReclaimMs ? Math.round(q.preemption.minRunBeforeReclaimMs / 1000) : null,
    }),
    fairShareMaxLostRunSeconds: t.int({
      nullable: true,
      description:
        "The most run time (since its last checkpoint) a job of this queue may lose to another queue's fair-share preemption; null: no limit.",
      resolve: (q) =>
        q.preemption?.fairShareMaxLostRunMs != null
          ? Math.round(q.preemption.fairShareMaxLostRunMs / 1000)
          : null,
    }),
    quotas: t.field({
      type: [QuotaRef],
      description: 'Configured base quotas (time windows may change them).',
      resolve: (q) => quotaLines(q.quotas),
    }),
    windowOpen: t.boolean({
      description: "True while one of the queue's time windows applies.",
      resolve: (q, _a, ctx) => ctx.scheduler.queueStatus(q.name)?.activeWindow != null,
    }),
    // Live usage needs usage:read (queueUsage); without it each of these is null with a FORBIDDEN error,
    // like Member.email.
    usage: t.field({
      type: [QueueUsageRef],
      nullable: true,
      description: 'Needs usage:read.',
      resolve: (q, _a, ctx) =>
        (queueUsage(ctx, q)?.resources ?? []).map((r) => ({
          ...r,
          borrowingLimit: r.borrowingLimit ?? null,
          lendingLimit: r.lendingLimit ?? null,
        })),
    }),
    weightedShare: t.float({
      nullable: true,
      description:
        'Weighted dominant resource share of what it borrows (0 when not borrowing; very large when borrowing with weight 0). Needs usage:read.',
      resolve: (q, _a, ctx) => {
        const share = queueUsage(ctx, q)?.weightedShare ?? 0;
        return Number.isFinite(share) ? share : Number.MAX_VALUE;
      },
    }),
    pendingCount: t.int({
      nullable: true,
      description: 'Needs usage:read.',
      resolve: (q, _a, ctx) => queueUsage(ctx, q)?.pendingCount ?? 0,
    }),
    admittedCount: t.int({
      nullable: true,
      description: 'Needs usage:read.',
      resolve: (q, _a, ctx) => queueUsage(ctx, q)?.admittedCount ?? 0,
    }),
    jobs: t.connection({
      type: JobRef,
      description: "This queue's jobs, newest last; filter by state.",
      args: { states: t.arg({ type: [JobStateEnum] }) },
      authScopes: (q) => ({ capability: { tenantId: q.tenant.id, capability: 'jobs:read' } }),
      resolve: (q, args, ctx, info) => {
        // Only the columns the selection reads (a dashboard shows names and states: a handful of 40).
        const columns = jobColumnsOf(info);
        return tenantConnection(args, q.tenant, (tenantId) => (page) => {
          const narrowed: JobRowPage = columns ? { ...page, columns } : page;
          return listJobs(ctx, { tenantId, queueId: q.id, states: args.states ?? null }, narrowed);
        });
      },
    }),
    pendingJobs: t.field({
      type: [JobRef],
      description: "Pending jobs in admission order within the queue (see each job's position).",
      authScopes: (q) => ({ capability: { tenantId: q.tenant.id, capability: 'jobs:read' } }),
      args: { first: t.arg.int({ defaultValue: 50, validate: z.number().int().min(1).max(500) }) },
      resolve: async (q, args, ctx) => {
        const page = await listJobs(
          ctx,
          { tenantId: q.tenant.id, queueId: q.id, states: ['PENDING'] },
          { limit: 5000, inverted: false },
        );
        const position = (id: string) =>
          ctx.scheduler.explain(id)?.positionInQueue ?? Number.MAX_SAFE_INTEGER;
        return page
          .sort((a, b) => position(a.id) - position(b.id) || a.submitTime - b.submitTime)
          .slice(0, args.first ?? 50);
      },
    }),
  }),
});

builder.objectFields(TenantRef, (t) => ({
  queues: t.field({
    type: [QueueRef],
    authScopes: (tenant) => ({ capability: { tenantId: tenant.id, capability: 'tenant:read' } }),
    resolve: async (tenant, _a, ctx) => {
      const queues = await listQueues(ctx, tenant.id);
      // Their jobs' `queue` fields load these again by id: the request's loader has them now.
      for (const queue of queues) ctx.loaders.queue.prime(queue.id, queue);
      return queues;
    },
  }),
}));

builder.queryFields((t) => ({
  queues: t.field({
    type: [QueueRef],
    description: "Platform admins: every queue (or one tenant's). Others: the queues of their tenants.",
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id() },
    resolve: (_r, args, ctx) =>
      listQueues(ctx, args.tenantId ? decodeId(String(args.tenantId), 'Tenant') : null),
  }),
}));
