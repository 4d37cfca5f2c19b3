import { encodeGlobalID, resolveCursorConnection, type ResolveCursorConnectionArgs } from '@pothos/plugin-relay';
import { z } from 'zod';
import type { TenantEventPayload } from '../src/events/bus.js';
import { cancelJob, getJob, listJobs, previewJob, submitJob, type PodSetSpec, type Preview, type SubmitJobInput } from '../src/services/jobs.js';
import { getQueue } from '../src/services/cluster.js';
import {
  etaUnknownReasonOf,
  etaUnknownText,
  nodeFitOf,
  pendingReasonMessage,
  previewMessage,
  type JobExplanation,
  type NodeFit,
} from '../src/services/pending-reasons.js';
import { requireCapability } from '../src/services/context.js';
import { pageInMemory } from '../src/services/paging.js';
import { jobPositionStream, type JobPosition } from '../src/services/job-position-stream.js';
import type { Job } from '../src/persistence/scheduling-entities.js';
import type { GraphQLContext } from './context.js';
import { builder } from './builder.js';
import { JobStateEnum, decodeId, pageFrom, toCursor } from './common.js';
import { JobEventRef, JobRef, ProjectRef, QueueRef, TenantRef } from './refs.js';
import { isEntity } from './tenant.js';
import { ResourceEnum } from './quota.js';

const PodSetRef = builder.objectRef<PodSetSpec>('PodSet').implement({
  fields: (t) => ({
    name: t.exposeString('name'),
    count: t.exposeInt('count'),
    minCount: t.int({ description: 'Gang minimum: all pods up to this many start together or none do.', resolve: (p) => p.minCount ?? p.count }),
    gpusPerPod: t.float({ resolve: (p) => p.perPod.gpu ?? 0 }),
    cpuMillisPerPod: t.int({ resolve: (p) => p.perPod.cpu ?? 0 }),
    memoryMiBPerPod: t.int({ resolve: (p) => p.perPod.memory ?? 0 }),
    flavors: t.stringList({ nullable: true, resolve: (p) => p.flavors ?? null }),
  }),
});

interface PlacementLine {
  podSet: string;
  flavor: string;
  node: string;
  pods: number;
  gpuIndices: number[];
}
const PlacementRef = builder.objectRef<PlacementLine>('Placement').implement({
  fields: (t) => ({
    podSet: t.exposeString('podSet'),
    flavor: t.exposeString('flavor'),
    node: t.exposeString('node'),
    pods: t.exposeInt('pods'),
    gpuIndices: t.exposeIntList('gpuIndices', { description: 'GPU (or slice) indices on the node, in pod order.' }),
  }),
});

const JobPositionRef = builder.objectRef<JobExplanation>('JobPosition').implement({
  description: "Where a pending job stands. Counts only: other tenants' jobs ahead are never named.",
  fields: (t) => ({
    inQueue: t.int({ nullable: true, description: '1-based, in its queue.', resolve: (e) => e.positionInQueue ?? null }),
    queueLength: t.int({ nullable: true, resolve: (e) => e.queuePending ?? null }),
    inCohort: t.int({ nullable: true, description: "1-based, in the cohort's admission order (fair share and borrowing included).", resolve: (e) => e.positionInCohort ?? null }),
    cohortLength: t.int({ nullable: true, resolve: (e) => e.cohortPending ?? null }),
  }),
});

const NodeFitRef = builder.objectRef<NodeFit>('NodeFit').implement({
  description: 'NoNodeFits: the free capacity of one flavor against the pods the job needs (GPUs, slices or shares).',
  fields: (t) => ({
    flavor: t.exposeString('flavor'),
    largestFreeOnOneNode: t.float({ description: 'The most free units on any single eligible node.', resolve: (f) => f.largestFreeGpusOnOneNode }),
    free: t.float({ description: 'Free units summed over the eligible nodes.', resolve: (f) => f.freeGpus }),
    podsNeeded: t.exposeInt('podsNeeded'),
    perPod: t.float({ resolve: (f) => f.gpusPerPod }),
  }),
});

const PendingReasonRef = builder.objectRef<JobExplanation>('PendingReason').implement({
  description: 'Why a job waits, and the numbers behind it.',
  fields: (t) => ({
    code: t.string({ description: 'WaitingForQuota, ExceedsMaxQuota, NoNodeFits, NoFittingNode, WindowClosed, StrictFIFOBlocked, WaitingForPreemption, NotYetEvaluated…', resolve: (e) => e.reason ?? 'NotYetEvaluated' }),
    message: t.string({
      description: "Rendered for the reader: names another job only when it is one of this tenant's jobs you may read, else \"a job of another tenant\".",
      resolve: (e, _a, ctx) => pendingReasonMessage(ctx, e),
    }),
    flavor: t.string({ nullable: true, resolve: (e) => e.shortfall?.flavor ?? null }),
    resource: t.field({ type: ResourceEnum, nullable: true, resolve: (e) => e.shortfall?.resource ?? null }),
    requested: t.float({ nullable: true, resolve: (e) => e.shortfall?.requested ?? null }),
    available: t.float({ nullable: true, resolve: (e) => e.shortfall?.available ?? null }),
    nominal: t.float({ nullable: true, resolve: (e) => e.shortfall?.nominal ?? null }),
    borrowingLimit: t.float({ nullable: true, resolve: (e) => e.shortfall?.borrowingLimit ?? null }),
    used: t.float({ nullable: true, resolve: (e) => e.shortfall?.used ?? null }),
    nodeFit: t.field({ type: [NodeFitRef], nullable: true, description: 'NoNodeFits only: per flavor tried, the largest free block on one node.', resolve: (e) => nodeFitOf(e) }),
    etaUnknownReason: t.string({
      nullable: true,
      description: 'Why eta is null: NoDeclaredDuration, TooFarAhead, NeverFits or StrictFIFOBlocked (null when there is an ETA).',
      resolve: (e) => etaUnknownReasonOf(e),
    }),
    etaUnknownMessage: t.string({ nullable: true, description: 'The same, in words.', resolve: (e) => etaUnknownText(etaUnknownReasonOf(e)) }),
  }),
});

const pendingExplanation = (job: { id: string; state: string }, ctx: GraphQLContext): JobExplanation | null =>
  job.state === 'PENDING' ? (ctx.scheduler.explain(job.id) ?? { jobId: job.id, queue: '', state: 'pending', reason: 'NotYetEvaluated', preemptions: 0 }) : null;

builder.node(JobRef, {
  description: 'A unit of GPU work: one or more pod sets that start together.',
  id: { resolve: (j) => j.id },
  isTypeOf: (v) => isEntity(v, 'Job'),
  fields: (t) => ({
    name: t.exposeString('name'),
    state: t.field({ type: JobStateEnum, resolve: (j) => j.state }),
    priorityClass: t.exposeString('priorityClass'),
    queue: t.field({ type: QueueRef, resolve: async (j, _a, ctx) => (await ctx.loaders.queue.load(j.queue.id))! }),
    project: t.field({ type: ProjectRef, nullable: true, resolve: (j, _a, ctx) => (j.project ? ctx.loaders.project.load(j.project.id) : null) }),
    podSets: t.field({ type: [PodSetRef], resolve: (j) => j.podSets }),
    gpus: t.float({ description: 'GPU units requested over all pods.', resolve: (j) => j.gpusRequested }),
    expectedDurationSeconds: t.float({ nullable: true, resolve: (j) => (j.expectedDurationMs == null ? null : j.expectedDurationMs / 1000) }),
    submittedAt: t.field({ type: 'DateTime', resolve: (j) => j.submittedAt }),
    admittedAt: t.field({ type: 'DateTime', nullable: true, resolve: (j) => j.admittedAt ?? null }),
    startedAt: t.field({ type: 'DateTime', nullable: true, resolve: (j) => j.startedAt ?? null }),
    finishedAt: t.field({ type: 'DateTime', nullable: true, resolve: (j) => j.finishedAt ?? null }),
    exitReason: t.string({ nullable: true, resolve: (j) => j.exitReason ?? null }),
    preemptionCount: t.exposeInt('preemptionCount'),
    borrowed: t.boolean({ description: 'Admitted on quota borrowed from the cohort (first to be reclaimed).', resolve: (j) => j.admission?.borrowed ?? false }),
    placement: t.field({
      type: [PlacementRef],
      resolve: (j) =>
        (j.admission?.podSets ?? []).flatMap((ps) => ps.placements.map((p) => ({ podSet: ps.name, flavor: ps.flavor, node: p.node, pods: p.pods, gpuIndices: p.gpuIndices ?? [] }))),
    }),
    position: t.field({ type: JobPositionRef, nullable: true, description: 'Pending jobs only.', resolve: (j, _a, ctx) => pendingExplanation(j, ctx) }),
    eta: t.field({
      type: 'DateTime',
      nullable: true,
      description: "Estimated admission, from running jobs' expected end times; null when unknown.",
      resolve: (j, _a, ctx) => {
        const eta = pendingExplanation(j, ctx)?.eta;
        return eta == null ? null : new Date(eta);
      },
    }),
    pendingReason: t.field({ type: PendingReasonRef, nullable: true, resolve: (j, _a, ctx) => pendingExplanation(j, ctx) }),
    gpuUtilization: t.float({ nullable: true, description: 'Last sampled GPU utilization, 0..1 (running jobs).', resolve: (j, _a, ctx) => (j.state === 'RUNNING' ? ctx.scheduler.lastUtilization(j.id) : null) }),
    submittedByName: t.string({ nullable: true, resolve: async (j, _a, ctx) => (j.submittedBy ? ((await ctx.loaders.user.load(j.submittedBy.id))?.name ?? null) : null) }),
    events: t.connection({
      type: JobEventRef,
      // One query for the events of every job in the response (a list of jobs must not cost a query per job).
      resolve: (j, args, ctx) =>
        resolveCursorConnection({ args, toCursor }, async (page: ResolveCursorConnectionArgs) => {
          requireCapability(ctx, j.tenant.id, 'jobs:read', 'Job');
          return pageInMemory(await ctx.loaders.jobEvents.load(j.id), pageFrom(page));
        }),
    }),
  }),
});

builder.node(JobEventRef, {
  id: { resolve: (e) => e.id },
  isTypeOf: (v) => isEntity(v, 'JobEvent'),
  fields: (t) => ({
    type: t.exposeString('type', { description: 'SUBMITTED, ADMITTED, STARTED, PREEMPTED, SUCCEEDED, FAILED, CANCELLED' }),
    reason: t.string({ nullable: true, resolve: (e) => e.reason ?? null }),
    message: t.string({ nullable: true, resolve: (e) => e.message ?? null }),
    at: t.field({ type: 'DateTime', resolve: (e) => e.at }),
  }),
});

const JobFilterInput = builder.inputType('JobFilter', {
  fields: (t) => ({
    states: t.field({ type: [JobStateEnum] }),
    projectId: t.id(),
    queueId: t.id(),
    priorityClass: t.string({ validate: z.string().max(63) }),
    submittedAfter: t.field({ type: 'DateTime' }),
    submittedBefore: t.field({ type: 'DateTime' }),
  }),
});

builder.objectFields(TenantRef, (t) => ({
  jobs: t.connection({
    type: JobRef,
    description: 'Oldest first; page backwards with `last` for the newest.',
    args: { filter: t.arg({ type: JobFilterInput }) },
    authScopes: (tenant) => ({ capability: { tenantId: tenant.id, capability: 'jobs:read' } }),
    resolve: (tenant, args, ctx) => resolveCursorConnection({ args, toCursor }, (page: ResolveCursorConnectionArgs) => listJobs(ctx, jobFilter(tenant.id, args.filter), pageFrom(page))),
  }),
}));

function jobFilter(tenantId: string, filter: { states?: readonly string[] | null; projectId?: string | number | null; queueId?: string | number | null; priorityClass?: string | null; submittedAfter?: Date | null; submittedBefore?: Date | null } | null | undefined) {
  return {
    tenantId,
    states: (filter?.states as never) ?? null,
    projectId: filter?.projectId ? decodeId(String(filter.projectId), 'Project') : null,
    queueId: filter?.queueId ? decodeId(String(filter.queueId), 'Queue') : null,
    priorityClass: filter?.priorityClass ?? null,
    submittedAfter: filter?.submittedAfter ?? null,
    submittedBefore: filter?.submittedBefore ?? null,
  };
}

builder.queryFields((t) => ({
  jobs: t.connection({
    type: JobRef,
    description: "A tenant's jobs, filtered; oldest first (use `last` for the newest).",
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id({ required: true }), filter: t.arg({ type: JobFilterInput }) },
    resolve: (_r, args, ctx) =>
      resolveCursorConnection({ args, toCursor }, (page: ResolveCursorConnectionArgs) => listJobs(ctx, jobFilter(decodeId(String(args.tenantId), 'Tenant'), args.filter), pageFrom(page))),
  }),
}));

const PodSetInput = builder.inputType('PodSetInput', {
  fields: (t) => ({
    name: t.string({ defaultValue: 'main', validate: z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'use lowercase letters, digits and dashes') }),
    count: t.int({ defaultValue: 1, validate: z.number().int().min(1, 'at least one pod').max(10_000, 'at most 10000 pods') }),
    minCount: t.int({ description: 'Gang minimum (default: count).', validate: z.number().int().min(1, 'at least one pod') }),
    gpusPerPod: t.float({
      defaultValue: 0,
      description: 'Whole GPUs, a fraction of one GPU in 1/1000 steps, or slices/shares on MIG and time-sliced flavors.',
      validate: z.number().min(0, 'must not be negative').max(64, 'at most 64 per pod').refine((v) => Math.abs(v * 1000 - Math.round(v * 1000)) < 1e-6, 'use steps of 1/1000'),
    }),
    cpuMillisPerPod: t.int({ defaultValue: 0, validate: z.number().int().min(0, 'must not be negative') }),
    memoryMiBPerPod: t.int({ defaultValue: 0, validate: z.number().int().min(0, 'must not be negative') }),
    flavors: t.stringList({ description: 'Flavor preference, best first (default: the queue\'s order).', validate: z.array(z.string().max(63)).max(16) }),
  }),
});

const SimulateInput = builder.inputType('SimulateInput', {
  description: 'For the simulated cluster: force how the run ends.',
  fields: (t) => ({
    fail: t.boolean({ defaultValue: false }),
    failAfterSeconds: t.float({ validate: z.number().min(0) }),
  }),
});

const SubmitJobInputRef = builder.inputType('SubmitJobInput', {
  fields: (t) => ({
    queueId: t.id({ description: "Default: the project's default queue." }),
    projectId: t.id(),
    name: t.string({ required: true, validate: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters') }),
    priorityClass: t.string({ defaultValue: 'training', validate: z.string().max(63) }),
    podSets: t.field({ type: [PodSetInput], required: true, validate: z.array(z.any()).min(1, 'give at least one pod set').max(8, 'at most 8 pod sets') }),
    expectedDurationSeconds: t.float({ validate: z.number().positive('must be positive').max(90 * 86_400, 'at most 90 days') }),
    maxRunSeconds: t.float({ validate: z.number().positive('must be positive').max(90 * 86_400, 'at most 90 days') }),
    idempotencyKey: t.string({
      description: 'Send the same key when retrying: the retry returns the first job instead of making another.',
      validate: z.string().min(1).max(128, 'must be at most 128 characters'),
    }),
    simulate: t.field({ type: SimulateInput }),
  }),
});

type SubmitArgs = typeof SubmitJobInputRef.$inferInput;

function toSubmitInput(input: SubmitArgs): SubmitJobInput {
  const podSets = input.podSets.map((ps) => {
    return {
      name: ps.name ?? 'main',
      count: ps.count ?? 1,
      ...(ps.minCount != null ? { minCount: ps.minCount } : {}),
      perPod: { gpu: ps.gpusPerPod ?? 0, cpu: ps.cpuMillisPerPod ?? 0, memory: ps.memoryMiBPerPod ?? 0 },
      ...(ps.flavors ? { flavors: ps.flavors } : {}),
    };
  });
  return {
    queueId: input.queueId ? decodeId(String(input.queueId), 'Queue') : null,
    projectId: input.projectId ? decodeId(String(input.projectId), 'Project') : null,
    name: input.name,
    priorityClass: input.priorityClass ?? 'training',
    podSets,
    expectedDurationMs: input.expectedDurationSeconds != null ? Math.round(input.expectedDurationSeconds * 1000) : null,
    maxRunMs: input.maxRunSeconds != null ? Math.round(input.maxRunSeconds * 1000) : null,
    idempotencyKey: input.idempotencyKey ?? null,
    workload: input.simulate
      ? { simulate: { outcome: input.simulate.fail ? 'fail' : 'succeed', ...(input.simulate.failAfterSeconds != null ? { failAfterMs: input.simulate.failAfterSeconds * 1000 } : {}) } }
      : null,
  };
}

const PreviewVictimRef = builder.objectRef<{ victimId: string; reason: string; sameTenant: boolean }>('PreviewPreemption').implement({
  fields: (t) => ({
    reason: t.exposeString('reason'),
    jobId: t.id({ nullable: true, description: 'Only for jobs of your own tenant.', resolve: (v) => (v.sameTenant ? encodeGlobalID('Job', v.victimId) : null) }),
  }),
});

const JobPreviewRef = builder.objectRef<Preview & { tenantId: string; queueName: string; victims: { victimId: string; reason: string; sameTenant: boolean }[] }>('JobPreview').implement({
  description: 'What would happen if the job were submitted now. Nothing is changed.',
  fields: (t) => ({
    admissible: t.exposeBoolean('admissible', { description: 'It would be admitted in the next cycle.' }),
    borrowed: t.exposeBoolean('borrowed'),
    mode: t.string({ nullable: true, description: 'fit, borrow, preempt or preempt-borrow.', resolve: (p) => p.admission?.mode ?? null }),
    placement: t.field({
      type: [PlacementRef],
      resolve: (p) => (p.admission?.podSets ?? []).flatMap((ps) => ps.placements.map((pl) => ({ podSet: ps.name, flavor: ps.flavor, node: pl.node, pods: pl.pods, gpuIndices: pl.gpuIndices ?? [] }))),
    }),
    wouldPreempt: t.field({ type: [PreviewVictimRef], resolve: (p) => p.victims }),
    reason: t.string({ nullable: true, resolve: (p) => p.reason ?? null }),
    message: t.string({ nullable: true, description: 'Why it would wait, in the same words as a pending job\'s reason.', resolve: (p, _a, ctx) => previewMessage(ctx, p, p.queueName) }),
  }),
});

const validateSubmit = (input: SubmitArgs) => input.podSets.every((ps) => ps.minCount == null || ps.minCount <= (ps.count ?? 1));

builder.mutationFields((t) => ({
  submitJob: t.field({
    type: JobRef,
    description: 'Needs jobs:write in the queue\'s tenant (members and tenant admins).',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: SubmitJobInputRef, required: true, validate: z.any().refine(validateSubmit, 'minCount must not exceed count') }) },
    resolve: (_r, { input }, ctx) => submitJob(ctx, toSubmitInput(input)),
  }),
  cancelJob: t.field({
    type: JobRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_r, { id }, ctx) => cancelJob(ctx, decodeId(String(id), 'Job')),
  }),
  previewJob: t.field({
    type: JobPreviewRef,
    description: 'The what-if: would this job fit now, borrow, preempt whom. Changes nothing.',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: SubmitJobInputRef, required: true, validate: z.any().refine(validateSubmit, 'minCount must not exceed count') }) },
    resolve: async (_r, { input }, ctx) => {
      const submit = toSubmitInput(input);
      const preview = await previewJob(ctx, submit);
      const queue = await getQueue(ctx, submit.queueId ?? (await projectQueue(ctx, submit.projectId)));
      const victims = await Promise.all(
        preview.wouldPreempt.map(async (v) => {
          const victimQueueId = ctx.scheduler.queueIdOf(v.victimQueue);
          const victimQueue = victimQueueId ? await ctx.loaders.queue.load(victimQueueId) : null;
          return { victimId: v.victimId, reason: v.reason, sameTenant: victimQueue?.tenant.id === queue.tenant.id };
        }),
      );
      return { ...preview, tenantId: queue.tenant.id, queueName: queue.name, victims };
    },
  }),
}));

async function projectQueue(ctx: GraphQLContext, projectId: string | null | undefined): Promise<string> {
  const project = projectId ? await ctx.loaders.project.load(projectId) : null;
  return project?.defaultQueueId ?? '';
}

// ─── subscriptions ───
// Sources carry ids and scheduler values, never rows. Each event then resolves in its own
// context (plugins/useSubscriptionEventContext): the caller's rights as they are now, a
// fresh EntityManager and loaders, so nested fields read what is stored when it is sent.
// An event whose root object the caller may no longer see is dropped there.

const JobPositionUpdateRef = builder.objectRef<JobPosition & { job: Job }>('JobPositionUpdate').implement({
  fields: (t) => ({
    job: t.field({ type: JobRef, description: 'The job as stored when this update was sent.', resolve: (u) => u.job }),
    state: t.field({ type: JobStateEnum, resolve: (u) => u.state }),
    position: t.field({ type: JobPositionRef, nullable: true, resolve: (u) => u.explanation }),
    eta: t.field({ type: 'DateTime', nullable: true, resolve: (u) => (u.explanation?.eta == null ? null : new Date(u.explanation.eta)) }),
    pendingReason: t.field({ type: PendingReasonRef, nullable: true, resolve: (u) => u.explanation }),
  }),
});

const TenantEventKindEnum = builder.enumType('TenantEventKind', { values: ['ADMITTED', 'PREEMPTED', 'QUOTA_CHANGED', 'WINDOW_CHANGED'] as const });

const TenantEventRef = builder.objectRef<TenantEventPayload>('TenantEvent').implement({
  description: "Something that happened to the tenant's jobs or quota.",
  fields: (t) => ({
    kind: t.field({ type: TenantEventKindEnum, resolve: (e) => e.kind }),
    at: t.field({ type: 'DateTime', resolve: (e) => new Date(e.at) }),
    jobId: t.id({ nullable: true, resolve: (e) => ('jobId' in e ? encodeGlobalID('Job', e.jobId) : null) }),
    queueId: t.id({ resolve: (e) => encodeGlobalID('Queue', e.queueId) }),
    reason: t.string({ nullable: true, description: 'Preemptions: reclaim, priority, fair-share, window-closed or idle.', resolve: (e) => (e.kind === 'PREEMPTED' ? e.reason : null) }),
    preemptorJobId: t.id({
      nullable: true,
      description: 'The preempting job, only when it belongs to the same tenant.',
      resolve: (e) => (e.kind === 'PREEMPTED' && e.preemptorJobId ? encodeGlobalID('Job', e.preemptorJobId) : null),
    }),
    borrowed: t.boolean({ nullable: true, resolve: (e) => (e.kind === 'ADMITTED' ? e.borrowed : null) }),
  }),
});

builder.subscriptionFields((t) => ({
  jobUpdated: t.field({
    type: JobRef,
    description: "The job each time its state changes.",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    subscribe: async (_r, { id }, ctx) => {
      const job = await getJob(ctx, decodeId(String(id), 'Job'));
      return ctx.events.subscribe('job-updated', job.id);
    },
    resolve: ({ jobId }, _args, ctx) => getJob(ctx, jobId),
  }),
  jobPosition: t.field({
    type: JobPositionUpdateRef,
    description:
      'Position, ETA and pending reason of a job, and its state: the current value first, then once per scheduling cycle that changed one of them (as it stood at the end of that cycle), and on each state change.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    subscribe: async (_r, { id }, ctx) => {
      const job = await getJob(ctx, decodeId(String(id), 'Job'));
      return jobPositionStream(ctx, { id: job.id, state: job.state });
    },
    resolve: async (position, _args, ctx) => ({ ...position, job: await getJob(ctx, position.jobId) }),
  }),
  tenantEvents: t.field({
    type: TenantEventRef,
    description: 'Admissions, preemptions (with reason), quota and window changes of a tenant. Needs jobs:read.',
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id({ required: true }) },
    subscribe: (_r, { tenantId }, ctx) => {
      const id = decodeId(String(tenantId), 'Tenant');
      requireCapability(ctx, id, 'jobs:read', 'Tenant');
      return ctx.events.subscribe('tenant-event', id);
    },
    resolve: (event, { tenantId }, ctx) => {
      requireCapability(ctx, decodeId(String(tenantId), 'Tenant'), 'jobs:read', 'Tenant');
      return event;
    },
  }),
  queueUpdated: t.field({
    type: QueueRef,
    description: 'The queue (usage, counts) whenever jobs are admitted, finish or are preempted in it, or its quota changes.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    subscribe: async (_r, { id }, ctx) => {
      const queue = await getQueue(ctx, decodeId(String(id), 'Queue'));
      return ctx.events.subscribe('queue-updated', queue.id);
    },
    resolve: ({ queueId }, _args, ctx) => getQueue(ctx, queueId),
  }),
}));
