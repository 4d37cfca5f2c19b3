import { z } from 'zod';
import {
  createQueue,
  getQueue,
  listQueues,
  queueUsage,
  setProjectQueue,
  setQuota,
  updateQueue,
} from '../../src/services/cluster/index.js';
import { listJobs } from '../../src/services/jobs/index.js';
import { getTenant } from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import { decodeId, IsolationLevelEnum, JobStateEnum, SlaClassEnum, WorkloadTypeEnum } from '../common.js';
import { JobRef, ProjectRef, QueueRef, TenantRef } from '../refs.js';
import { reloadingSubscription } from '../reloading-subscription.js';
import { isEntity, tenantConnection } from '../tenancy/index.js';
import {
  QuotaInput,
  QuotaRef,
  quotaLines,
  ResourceEnum,
  TimeWindowInput,
  toQuotaSpec,
  toTimeWindows,
} from './quota.js';

const QueueingStrategyEnum = builder.enumType('QueueingStrategy', {
  values: {
    STRICT_FIFO: { value: 'StrictFIFO', description: 'The head blocks the queue until it is admitted.' },
    BEST_EFFORT_FIFO: {
      value: 'BestEffortFIFO',
      description: 'A head that cannot fit steps aside for the next.',
    },
  } as const,
});
const WithinQueueEnum = builder.enumType('WithinQueuePreemption', {
  values: {
    NEVER: { value: 'Never' },
    LOWER_PRIORITY: { value: 'LowerPriority' },
    LOWER_OR_NEWER_EQUAL_PRIORITY: { value: 'LowerOrNewerEqualPriority' },
  } as const,
});
const ReclaimEnum = builder.enumType('ReclaimWithinCohort', {
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
      resolve: (q, args, ctx) =>
        tenantConnection(
          args,
          q.tenant,
          (tenantId) => (page) =>
            listJobs(ctx, { tenantId, queueId: q.id, states: args.states ?? null }, page),
        ),
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

const PreemptionInput = builder.inputType('PreemptionInput', {
  fields: (t) => ({
    withinQueue: t.field({ type: WithinQueueEnum }),
    reclaimWithinCohort: t.field({ type: ReclaimEnum }),
    borrowWithinCohort: t.boolean({
      description: 'May preempt lower-priority jobs in the cohort while borrowing.',
    }),
    borrowWithinCohortMaxPriority: t.int({
      description: 'Only jobs below this priority value may be preempted that way.',
    }),
    minRunBeforeReclaimSeconds: t.int({
      description:
        'A job of this queue running on borrowed quota is not reclaimed by another queue (reclaim, fair share) before it has run this long (0 or absent: at once). Trade-off: a lender may wait up to this long for its lent nominal quota.',
      validate: z
        .number()
        .int()
        .min(0, 'must not be negative')
        .max(MAX_MIN_RUN_BEFORE_RECLAIM_SECONDS, 'at most 7 days'),
    }),
    fairShareMaxLostRunSeconds: t.int({
      description:
        "With fair sharing: a job of this queue is taken by another queue's fair-share preemption only while it would lose at most this many seconds of run since its last checkpoint (resumable jobs lose none). Reclaim of nominal quota is not limited. Absent: no limit.",
      validate: z
        .number()
        .int()
        .min(0, 'must not be negative')
        .max(MAX_MIN_RUN_BEFORE_RECLAIM_SECONDS, 'at most 7 days'),
    }),
  }),
});

/** Longest minimum run before reclaim: a lender never waits more than a week for its quota. */
export const MAX_MIN_RUN_BEFORE_RECLAIM_SECONDS = 7 * 86_400;

const queueName = z
  .string()
  .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'use 1-63 lowercase letters, digits and dashes');

/** Governance: the fields that choose a queue's isolation policy (null clears one on update). */
function governanceInputFields(
  t: Parameters<NonNullable<Parameters<typeof builder.inputType>[1]['fields']>>[0],
) {
  return {
    workloadType: t.field({
      type: WorkloadTypeEnum,
      description:
        "What the queue runs; with the SLA class and the tenant's tier it chooses the isolation policy.",
    }),
    slaClass: t.field({ type: SlaClassEnum }),
    isolationPolicy: t.string({
      description: 'A policy of the library named for this queue, over the rules (null: the rules choose).',
      validate: z.string().max(63),
    }),
  };
}

const CreateQueueInput = builder.inputType('CreateQueueInput', {
  fields: (t) => ({
    name: t.string({ required: true, validate: queueName }),
    tenantId: t.id({ required: true }),
    cohortId: t.id(),
    quotas: t.field({ type: [QuotaInput], required: true }),
    weight: t.float({ validate: z.number().min(0, 'must not be negative').max(1000) }),
    queueingStrategy: t.field({ type: QueueingStrategyEnum }),
    preemption: t.field({ type: PreemptionInput }),
    isolationLevel: t.field({ type: IsolationLevelEnum }),
    timeWindows: t.field({ type: [TimeWindowInput] }),
    dedicatedPool: t.string({ validate: z.string().max(63) }),
    ...governanceInputFields(t),
  }),
});

const UpdateQueueInput = builder.inputType('UpdateQueueInput', {
  fields: (t) => ({
    id: t.id({ required: true }),
    cohortId: t.id(),
    quotas: t.field({ type: [QuotaInput] }),
    weight: t.float({ validate: z.number().min(0, 'must not be negative').max(1000) }),
    queueingStrategy: t.field({ type: QueueingStrategyEnum }),
    preemption: t.field({ type: PreemptionInput }),
    isolationLevel: t.field({ type: IsolationLevelEnum }),
    timeWindows: t.field({ type: [TimeWindowInput] }),
    ...governanceInputFields(t),
  }),
});

function preemptionSpec(
  input:
    | {
        withinQueue?: string | null;
        reclaimWithinCohort?: string | null;
        borrowWithinCohort?: boolean | null;
        borrowWithinCohortMaxPriority?: number | null;
        minRunBeforeReclaimSeconds?: number | null;
        fairShareMaxLostRunSeconds?: number | null;
      }
    | null
    | undefined,
) {
  if (!input) return undefined;
  return {
    ...(input.minRunBeforeReclaimSeconds
      ? { minRunBeforeReclaimMs: input.minRunBeforeReclaimSeconds * 1000 }
      : {}),
    ...(input.fairShareMaxLostRunSeconds != null
      ? { fairShareMaxLostRunMs: input.fairShareMaxLostRunSeconds * 1000 }
      : {}),
    ...(input.withinQueue ? { withinQueue: input.withinQueue as never } : {}),
    ...(input.reclaimWithinCohort ? { reclaimWithinCohort: input.reclaimWithinCohort as never } : {}),
    ...(input.borrowWithinCohort != null
      ? {
          borrowWithinCohort: {
            policy: input.borrowWithinCohort ? ('LowerPriority' as const) : ('Never' as const),
            ...(input.borrowWithinCohortMaxPriority != null
              ? { maxPriorityThreshold: input.borrowWithinCohortMaxPriority }
              : {}),
          },
        }
      : {}),
  };
}

builder.mutationFields((t) => ({
  createQueue: t.field({
    type: QueueRef,
    description: 'Platform admins.',
    authScopes: { platformAdmin: true },
    args: { input: t.arg({ type: CreateQueueInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      createQueue(ctx, {
        name: input.name,
        tenantId: decodeId(String(input.tenantId), 'Tenant'),
        cohortId: input.cohortId ? decodeId(String(input.cohortId), 'Cohort') : null,
        quotas: toQuotaSpec(input.quotas),
        weight: input.weight,
        queueingStrategy: input.queueingStrategy,
        preemption: preemptionSpec(input.preemption),
        isolationLevel: input.isolationLevel,
        timeWindows: input.timeWindows ? toTimeWindows(input.timeWindows) : null,
        dedicatedPool: input.dedicatedPool,
        workloadType: input.workloadType,
        slaClass: input.slaClass,
        isolationPolicy: input.isolationPolicy,
      }),
  }),
  updateQueue: t.field({
    type: QueueRef,
    description: 'Platform admins. Fields left out stay as they are.',
    authScopes: { platformAdmin: true },
    args: { input: t.arg({ type: UpdateQueueInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      updateQueue(ctx, {
        id: decodeId(String(input.id), 'Queue'),
        ...(input.cohortId !== undefined
          ? { cohortId: input.cohortId ? decodeId(String(input.cohortId), 'Cohort') : null }
          : {}),
        ...(input.quotas ? { quotas: toQuotaSpec(input.quotas) } : {}),
        weight: input.weight,
        queueingStrategy: input.queueingStrategy,
        preemption: preemptionSpec(input.preemption),
        ...(input.isolationLevel !== undefined ? { isolationLevel: input.isolationLevel } : {}),
        ...(input.timeWindows ? { timeWindows: toTimeWindows(input.timeWindows) } : {}),
        ...(input.workloadType !== undefined ? { workloadType: input.workloadType } : {}),
        ...(input.slaClass !== undefined ? { slaClass: input.slaClass } : {}),
        ...(input.isolationPolicy !== undefined ? { isolationPolicy: input.isolationPolicy } : {}),
      }),
  }),
  setQuota: t.field({
    type: QueueRef,
    description: 'Platform admins: set one flavor/resource quota of a queue.',
    authScopes: { platformAdmin: true },
    args: { queueId: t.arg.id({ required: true }), quota: t.arg({ type: QuotaInput, required: true }) },
    resolve: (_r, { queueId, quota }, ctx) =>
      setQuota(ctx, {
        queueId: decodeId(String(queueId), 'Queue'),
        flavor: quota.flavor,
        resource: quota.resource ?? 'gpu',
        nominal: quota.nominal,
        borrowingLimit: quota.borrowingLimit,
        lendingLimit: quota.lendingLimit,
      }),
  }),
  setProjectQueue: t.field({
    type: ProjectRef,
    description: "Tenant admins: the queue a project's jobs go to when a submit names none (null to clear).",
    authScopes: { authenticated: true },
    args: { projectId: t.arg.id({ required: true }), queueId: t.arg.id() },
    resolve: (_r, { projectId, queueId }, ctx) =>
      setProjectQueue(
        ctx,
        decodeId(String(projectId), 'Project'),
        queueId ? decodeId(String(queueId), 'Queue') : null,
      ),
  }),
}));

builder.objectFields(ProjectRef, (t) => ({
  defaultQueue: t.field({
    type: QueueRef,
    nullable: true,
    resolve: async (p, _a, ctx) => (p.defaultQueueId ? getQueue(ctx, p.defaultQueueId) : null),
  }),
}));

builder.subscriptionFields((t) => ({
  queueUpdated: t.field({
    type: QueueRef,
    description:
      'The queue (usage, counts) whenever jobs are admitted, finish or are preempted in it, or its quota changes.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    ...reloadingSubscription({
      watch: ({ id }: { id: string | number }, ctx) => getQueue(ctx, decodeId(String(id), 'Queue')),
      source: (queue, ctx) => ctx.events.subscribe('queue-updated', queue.id),
      reload: ({ queueId }, _args, ctx) => getQueue(ctx, queueId),
    }),
  }),
}));
