import { type ResolveCursorConnectionArgs, resolveCursorConnection } from '@pothos/plugin-relay';
import { z } from 'zod';
import { JobRow, type WORKLOAD_KINDS } from '../../src/persistence/jobs/index.js';
import { requireCapability } from '../../src/services/context.js';
import type { JobExplanation } from '../../src/services/jobs/index.js';
import { cancelJob, getJob, listJobs } from '../../src/services/jobs/index.js';
import { type PageQuery, pageInMemory } from '../../src/services/paging.js';
import { builder } from '../builder.js';
import { decodeId, JobStateEnum, pageFrom, toCursor, WorkloadKindEnum } from '../common.js';
import type { GraphQLContext } from '../context.js';
import { JobEventRef, JobRef, ProjectRef, QueueRef, TenantRef } from '../refs.js';
import { reloadingSubscription } from '../reloading-subscription.js';
import { isEntity, tenantConnection } from '../tenancy/index.js';
import { JobPositionRef } from './job-position.js';
import { PendingReasonRef } from './pending-reason.js';
import { PlacementRef, placementLines } from './placement.js';
import { PodSetRef } from './pod-set.js';

// Submitting, previewing and following a job's position live beside this file:
// job-submit.ts, job-preview.ts, job-position.ts (and tenant-event.ts for a tenant's stream).

const JobCheckpointRef = builder
  .objectRef<{ intervalMs: number | null; resumable: boolean }>('JobCheckpoint')
  .implement({
    description: "How the job declared it saves progress (submitJob's checkpoint).",
    fields: (t) => ({
      intervalSeconds: t.int({
        nullable: true,
        resolve: (c) => (c.intervalMs == null ? null : Math.round(c.intervalMs / 1000)),
      }),
      resumable: t.exposeBoolean('resumable'),
    }),
  });

const pendingExplanation = (
  job: { id: string; state: string },
  ctx: GraphQLContext,
): JobExplanation | null =>
  job.state === 'PENDING'
    ? (ctx.scheduler.explain(job.id) ?? {
        jobId: job.id,
        queue: '',
        state: 'pending',
        reason: 'NotYetEvaluated',
        preemptions: 0,
      })
    : null;

builder.node(JobRef, {
  description: 'A unit of GPU work: one or more pod sets that start together.',
  id: { resolve: (j) => j.id },
  // listJobs answers plain rows (job-rows.ts), getJob and the mutations entities.
  isTypeOf: (v) => v instanceof JobRow || isEntity(v, 'Job'),
  fields: (t) => ({
    name: t.exposeString('name'),
    state: t.field({ type: JobStateEnum, resolve: (j) => j.state }),
    priorityClass: t.exposeString('priorityClass'),
    queue: t.field({
      type: QueueRef,
      resolve: async (j, _a, ctx) => (await ctx.loaders.queue.load(j.queue.id))!,
    }),
    project: t.field({
      type: ProjectRef,
      nullable: true,
      resolve: (j, _a, ctx) => (j.project ? ctx.loaders.project.load(j.project.id) : null),
    }),
    podSets: t.field({ type: [PodSetRef], resolve: (j) => j.podSets }),
    gpus: t.float({ description: 'GPU units requested over all pods.', resolve: (j) => j.gpusRequested }),
    expectedDurationSeconds: t.float({
      nullable: true,
      resolve: (j) => (j.expectedDurationMs == null ? null : j.expectedDurationMs / 1000),
    }),
    checkpoint: t.field({
      type: JobCheckpointRef,
      nullable: true,
      description:
        'Null when the job declared no checkpointing (a preemption loses all its work since admission).',
      resolve: (j) =>
        j.checkpointIntervalMs == null && !j.checkpointResumable
          ? null
          : { intervalMs: j.checkpointIntervalMs ?? null, resumable: Boolean(j.checkpointResumable) },
    }),
    submittedAt: t.field({ type: 'DateTime', resolve: (j) => j.submittedAt }),
    admittedAt: t.field({ type: 'DateTime', nullable: true, resolve: (j) => j.admittedAt ?? null }),
    startedAt: t.field({ type: 'DateTime', nullable: true, resolve: (j) => j.startedAt ?? null }),
    finishedAt: t.field({ type: 'DateTime', nullable: true, resolve: (j) => j.finishedAt ?? null }),
    exitReason: t.string({ nullable: true, resolve: (j) => j.exitReason ?? null }),
    preemptionCount: t.exposeInt('preemptionCount'),
    workloadKind: t.field({
      type: WorkloadKindEnum,
      resolve: (j) => (j.workloadKind ?? 'BATCH') as (typeof WORKLOAD_KINDS)[number],
    }),
    maxRetries: t.exposeInt('maxRetries', {
      description: "Retries in place of the job's own failures before it fails (0–10).",
    }),
    disruptionCount: t.exposeInt('disruptionCount', {
      description: 'Times the cluster stopped the job (eviction, drain, a lost node) and it was requeued.',
    }),
    lostGpuHours: t.float({
      description:
        "GPU-hours of this job's work thrown away by its preemptions (each: its GPUs × its run since its last checkpoint); 0 when never preempted.",
      // One query for the events of every job in the response, and none for a job never preempted.
      resolve: async (j, _a, ctx) => {
        if (!j.preemptionCount) return 0;
        requireCapability(ctx, j.tenant.id, 'jobs:read', 'Job');
        return (await ctx.loaders.jobEvents.load(j.id)).reduce(
          (sum, e) =>
            sum +
            (e.type === 'PREEMPTED' && typeof e.data?.lostGpuHours === 'number' ? e.data.lostGpuHours : 0),
          0,
        );
      },
    }),
    borrowed: t.boolean({
      description: 'Admitted on quota borrowed from the cohort (first to be reclaimed).',
      resolve: (j) => j.admission?.borrowed ?? false,
    }),
    placement: t.field({ type: [PlacementRef], resolve: (j) => placementLines(j.admission) }),
    position: t.field({
      type: JobPositionRef,
      nullable: true,
      description: 'Pending jobs only.',
      resolve: (j, _a, ctx) => pendingExplanation(j, ctx),
    }),
    eta: t.field({
      type: 'DateTime',
      nullable: true,
      description: "Estimated admission, from running jobs' expected end times; null when unknown.",
      resolve: (j, _a, ctx) => {
        const eta = pendingExplanation(j, ctx)?.eta;
        return eta == null ? null : new Date(eta);
      },
    }),
    pendingReason: t.field({
      type: PendingReasonRef,
      nullable: true,
      resolve: (j, _a, ctx) => pendingExplanation(j, ctx),
    }),
    gpuUtilization: t.float({
      nullable: true,
      description: 'Last sampled GPU utilization, 0..1 (running jobs).',
      resolve: (j, _a, ctx) => (j.state === 'RUNNING' ? ctx.scheduler.lastUtilization(j.id) : null),
    }),
    submittedByName: t.string({
      nullable: true,
      resolve: async (j, _a, ctx) =>
        j.submittedBy ? ((await ctx.loaders.user.load(j.submittedBy.id))?.name ?? null) : null,
    }),
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
    type: t.exposeString('type', {
      description:
        'SUBMITTED, ADMITTED, STARTED, PREEMPTED, SUCCEEDED, FAILED, CANCELLED, ADMITTED_NOT_RUNNING, FLAGGED, DISRUPTED (stopped by the cluster: eviction, drain, a lost node; requeued)',
    }),
    reason: t.string({ nullable: true, resolve: (e) => e.reason ?? null }),
    message: t.string({ nullable: true, resolve: (e) => e.message ?? null }),
    lostGpuHours: t.float({
      nullable: true,
      description:
        'PREEMPTED: GPU-hours of work the job lost (since its last checkpoint, or since admission); null for other events or when unknown.',
      resolve: (e) =>
        e.type === 'PREEMPTED' && typeof e.data?.lostGpuHours === 'number' ? e.data.lostGpuHours : null,
    }),
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
    mine: t.boolean({
      description: 'Only the jobs the caller submitted (by any of their tokens or sessions).',
    }),
  }),
});

builder.objectFields(TenantRef, (t) => ({
  jobs: t.connection({
    type: JobRef,
    description: 'Oldest first; page backwards with `last` for the newest.',
    args: { filter: t.arg({ type: JobFilterInput }) },
    authScopes: (tenant) => ({ capability: { tenantId: tenant.id, capability: 'jobs:read' } }),
    resolve: (tenant, args, ctx) =>
      tenantConnection(args, tenant, (tenantId) => jobsReader(ctx, tenantId, args.filter)),
  }),
}));

type JobFilterArgs =
  | {
      states?: readonly string[] | null;
      projectId?: string | number | null;
      queueId?: string | number | null;
      priorityClass?: string | null;
      submittedAfter?: Date | null;
      submittedBefore?: Date | null;
      mine?: boolean | null;
    }
  | null
  | undefined;

/** Decodes the filter's ids now (before the cursor), then reads pages of the filtered jobs. */
function jobsReader(ctx: GraphQLContext, tenantId: string, filter: JobFilterArgs) {
  const where = jobFilter(tenantId, filter);
  return (page: PageQuery) => listJobs(ctx, where, page);
}

function jobFilter(tenantId: string, filter: JobFilterArgs) {
  return {
    tenantId,
    states: (filter?.states as never) ?? null,
    projectId: filter?.projectId ? decodeId(String(filter.projectId), 'Project') : null,
    queueId: filter?.queueId ? decodeId(String(filter.queueId), 'Queue') : null,
    priorityClass: filter?.priorityClass ?? null,
    submittedAfter: filter?.submittedAfter ?? null,
    submittedBefore: filter?.submittedBefore ?? null,
    mine: filter?.mine ?? false,
  };
}

builder.queryFields((t) => ({
  jobs: t.connection({
    type: JobRef,
    description: "A tenant's jobs, filtered; oldest first (use `last` for the newest).",
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id({ required: true }), filter: t.arg({ type: JobFilterInput }) },
    resolve: (_r, args, ctx) =>
      tenantConnection(args, { globalId: args.tenantId }, (tenantId) =>
        jobsReader(ctx, tenantId, args.filter),
      ),
  }),
}));

builder.mutationFields((t) => ({
  cancelJob: t.field({
    type: JobRef,
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_r, { id }, ctx) => cancelJob(ctx, decodeId(String(id), 'Job')),
  }),
}));

builder.subscriptionFields((t) => ({
  jobUpdated: t.field({
    type: JobRef,
    description: 'The job each time its state changes.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    ...reloadingSubscription({
      watch: ({ id }: { id: string | number }, ctx) => getJob(ctx, decodeId(String(id), 'Job')),
      source: (job, ctx) => ctx.events.subscribe('job-updated', job.id),
      reload: ({ jobId }, _args, ctx) => getJob(ctx, jobId),
    }),
  }),
}));
