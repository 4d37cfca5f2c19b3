// Queue mutations: create, update, set a quota, point a project at a queue, and the queue a project
// submits to; their inputs (preemption policy, governance fields) and the queue subscription.
import { z } from 'zod';
import {
  createQueue,
  getQueue,
  setProjectQueue,
  setQuota,
  updateQueue,
} from '../../src/services/cluster/index.js';
import { builder } from '../builder.js';
import { decodeId, IsolationLevelEnum, SlaClassEnum, WorkloadTypeEnum } from '../common.js';
import { ProjectRef, QueueRef } from '../refs.js';
import { reloadingSubscription } from '../reloading-subscription.js';
import { QueueingStrategyEnum, ReclaimEnum, WithinQueueEnum } from './queue.js';
import { QuotaInput, TimeWindowInput, toQuotaSpec, toTimeWindows } from './quota.js';

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
      'The queue (usage, counts) whenever jobs are submitted to it, admitted, cancelled, finish or are preempted in it, or its quota changes.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    ...reloadingSubscription({
      watch: ({ id }: { id: string | number }, ctx) => getQueue(ctx, decodeId(String(id), 'Queue')),
      source: (queue, ctx) => ctx.events.subscribe('queue-updated', queue.id),
      reload: ({ queueId }, _args, ctx) => getQueue(ctx, queueId),
    }),
  }),
}));
