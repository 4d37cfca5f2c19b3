import { type ResolveCursorConnectionArgs, resolveCursorConnection } from '@pothos/plugin-relay';
import type {
  InferenceService,
  ServiceLoadWindow,
  ServiceScalingEvent,
  StoredDecision,
} from '../../src/persistence/inference/index.js';
import {
  listScalingEvents,
  liveReplicaJobs,
  serviceLoadWindows,
  serviceReplicas,
  serviceUsage,
} from '../../src/services/inference/index.js';
import { mayReadContent } from '../../src/services/tenancy/index.js';
import { forbidden } from '../../src/shared/index.js';
import { builder } from '../builder.js';
import { pageFrom, toCursor } from '../common.js';
import { PodSetRef } from '../jobs/index.js';
import { JobRef, ProjectRef, QueueRef } from '../refs.js';
import { isEntity } from '../tenancy/index.js';
import { ScalingSignalEnum } from './scaling-signal.js';

export const InferenceServiceRef = builder.objectRef<InferenceService>('InferenceService');
export const ScalingEventRef = builder.objectRef<ServiceScalingEvent>('ScalingEvent');

const ReplicasRef = builder
  .objectRef<{ desired: number; admitted: number; ready: number; pending: number; minimum: number }>(
    'ServiceReplicas',
  )
  .implement({
    description: 'Replica counts now (a replica is one job of the queue; see `replicaJobs`).',
    fields: (t) => ({
      desired: t.exposeInt('desired', { description: 'What the autoscaler asks of the scheduler.' }),
      admitted: t.exposeInt('admitted', { description: 'Admitted by the scheduler (starting or serving).' }),
      ready: t.exposeInt('ready', { description: 'Serving.' }),
      pending: t.exposeInt('pending', {
        description: 'Waiting for admission (see the replica jobs’ pending reasons).',
      }),
      minimum: t.exposeInt('minimum', {
        description: 'The guaranteed replicas in force now (the open minimum window’s, else minReplicas).',
      }),
    }),
  });

const ScalingRulesRef = builder.objectRef<InferenceService['scaling']>('ScalingRules').implement({
  fields: (t) => ({
    signal: t.field({ type: ScalingSignalEnum, resolve: (s) => s.signal }),
    target: t.exposeFloat('target', {
      description:
        'Per replica for IN_FLIGHT and REQUESTS_PER_SECOND; the wanted average for P95_LATENCY_MS (ms) and GPU_UTILIZATION (0..1).',
    }),
    scaleUpStabilizationSeconds: t.float({ resolve: (s) => s.scaleUpStabilizationMs / 1000 }),
    scaleDownStabilizationSeconds: t.float({ resolve: (s) => s.scaleDownStabilizationMs / 1000 }),
    maxScaleUpStep: t.exposeInt('maxScaleUpStep'),
    maxScaleDownStep: t.exposeInt('maxScaleDownStep'),
    tolerance: t.exposeFloat('tolerance'),
    scaleToZeroAfterSeconds: t.float({
      nullable: true,
      resolve: (s) => (s.scaleToZeroAfterMs === null ? null : s.scaleToZeroAfterMs / 1000),
    }),
  }),
});

const MinimumWindowRef = builder
  .objectRef<InferenceService['minimumWindows'][number]>('MinimumWindow')
  .implement({
    fields: (t) => ({
      days: t.exposeIntList('days'),
      start: t.exposeString('start'),
      end: t.exposeString('end'),
      timeZone: t.exposeString('timeZone'),
      minReplicas: t.exposeInt('minReplicas'),
    }),
  });

const DecisionRef = builder.objectRef<StoredDecision>('ScalingDecision').implement({
  description: "The autoscaler's last decision with its numbers.",
  fields: (t) => ({
    at: t.field({ type: 'DateTime', resolve: (d) => new Date(d.at) }),
    signalValue: t.float({ nullable: true, resolve: (d) => d.signalValue }),
    recommended: t.exposeInt('recommended', { description: 'What the signal alone asked for.' }),
    desired: t.exposeInt('desired'),
    minimum: t.exposeInt('minimum'),
    admitted: t.exposeInt('admitted'),
    ready: t.exposeInt('ready'),
    reason: t.exposeString('reason'),
    whyNotMore: t.string({ nullable: true, resolve: (d) => d.whyNotMore }),
    coldStart: t.exposeBoolean('coldStart'),
  }),
});

const LoadWindowRef = builder.objectRef<ServiceLoadWindow>('ServiceLoadWindow').implement({
  description: "An hour of the service's readings.",
  fields: (t) => ({
    start: t.field({ type: 'DateTime', resolve: (w) => w.windowStart }),
    readings: t.exposeInt('readings'),
    sla: t.float({
      description:
        'Share of readings whose p95 was within the latency objective (readings without requests count as within).',
      resolve: (w) => (w.readings ? w.withinObjective / w.readings : 1),
    }),
    meanP95Ms: t.float({ resolve: (w) => (w.readings ? w.sumP95Ms / w.readings : 0) }),
    maxP95Ms: t.exposeFloat('maxP95Ms'),
    requests: t.exposeFloat('requests'),
    meanReadyReplicas: t.float({ resolve: (w) => (w.readings ? w.replicaReadings / w.readings : 0) }),
  }),
});

const UsageRef = builder
  .objectRef<{ gpuHours: number; cost: number; currency: string }>('ServiceUsage')
  .implement({
    fields: (t) => ({
      gpuHours: t.exposeFloat('gpuHours', {
        description: 'Replica-GPU-hours charged (each hold once, as jobs).',
      }),
      cost: t.exposeFloat('cost'),
      currency: t.exposeString('currency'),
    }),
  });

const HOUR = 3_600_000;

builder.node(InferenceServiceRef, {
  description:
    'A long-running service whose replicas are jobs of its queue: the minimum is guaranteed (never preempted, within the nominal), replicas above it borrow and yield. Fairway scales it on its signal.',
  id: { resolve: (s) => s.id },
  isTypeOf: (value) => isEntity(value, 'InferenceService'),
  fields: (t) => ({
    name: t.exposeString('name'),
    queue: t.field({
      type: QueueRef,
      resolve: async (s, _a, ctx) => (await ctx.loaders.queue.load(s.queue.id))!,
    }),
    project: t.field({
      type: ProjectRef,
      resolve: async (s, _a, ctx) => (await ctx.loaders.project.load(s.project.id))!,
    }),
    image: t.string({
      description: "The replicas' image (readable as a job's content is).",
      resolve: async (s, _a, ctx) => {
        if (!(await mayReadContent(ctx, contentOf(s))))
          throw forbidden("You may not read this service's content.");
        return s.container.image;
      },
    }),
    port: t.exposeInt('port'),
    replica: t.field({ type: PodSetRef, description: "One replica's pods.", resolve: (s) => s.replica }),
    minReplicas: t.exposeInt('minReplicas'),
    maxReplicas: t.exposeInt('maxReplicas'),
    minimumWindows: t.field({ type: [MinimumWindowRef], resolve: (s) => s.minimumWindows }),
    scaling: t.field({ type: ScalingRulesRef, resolve: (s) => s.scaling }),
    latencyObjectiveMs: t.float({ nullable: true, resolve: (s) => s.latencyObjectiveMs ?? null }),
    maxSurge: t.exposeInt('maxSurge'),
    guaranteedClass: t.exposeString('guaranteedClass'),
    burstClass: t.exposeString('burstClass'),
    revision: t.exposeInt('revision', { description: 'Bumped by each change of what the replicas run.' }),
    replicas: t.field({
      type: ReplicasRef,
      resolve: (s, _a, ctx) => serviceReplicas(ctx, s),
    }),
    replicaJobs: t.field({
      type: [JobRef],
      description: 'The replica jobs that have not ended, oldest first.',
      resolve: (s, _a, ctx) => liveReplicaJobs(ctx.em, s.id),
    }),
    lastDecision: t.field({ type: DecisionRef, nullable: true, resolve: (s) => s.lastDecision ?? null }),
    scalingEvents: t.connection({
      type: ScalingEventRef,
      description: 'Decisions that moved something or got fewer replicas than asked, oldest first.',
      resolve: (s, args, ctx) =>
        resolveCursorConnection({ args, toCursor }, (page: ResolveCursorConnectionArgs) =>
          listScalingEvents(ctx, s.id, pageFrom(page)),
        ),
    }),
    loadWindows: t.field({
      type: [LoadWindowRef],
      args: { hours: t.arg.int({ defaultValue: 24, description: 'How far back (1–744).' }) },
      resolve: (s, { hours }, ctx) =>
        serviceLoadWindows(
          ctx,
          s,
          new Date(ctx.now().getTime() - Math.max(1, Math.min(744, hours ?? 24)) * HOUR),
        ),
    }),
    sla: t.float({
      nullable: true,
      description: 'Share of the last 24 h of readings within the latency objective; null without readings.',
      resolve: async (s, _a, ctx) => {
        const windows = await serviceLoadWindows(ctx, s, new Date(ctx.now().getTime() - 24 * HOUR));
        const readings = windows.reduce((n, w) => n + w.readings, 0);
        return readings ? windows.reduce((n, w) => n + w.withinObjective, 0) / readings : null;
      },
    }),
    usage: t.field({ type: UsageRef, resolve: (s, _a, ctx) => serviceUsage(ctx, s) }),
    createdAt: t.field({ type: 'DateTime', resolve: (s) => s.createdAt }),
    updatedAt: t.field({ type: 'DateTime', resolve: (s) => s.updatedAt }),
  }),
});

/** Whose the service's content is, for the content rule (its creator is the submitter). */
const contentOf = (s: InferenceService) => ({
  tenant: s.tenant,
  project: s.project,
  submittedBy: s.createdBy ?? null,
});

builder.node(ScalingEventRef, {
  description: 'One autoscaler decision with its numbers.',
  id: { resolve: (e) => e.id },
  isTypeOf: (value) => isEntity(value, 'ServiceScalingEvent'),
  fields: (t) => ({
    at: t.field({ type: 'DateTime', resolve: (e) => e.at }),
    signal: t.field({ type: ScalingSignalEnum, resolve: (e) => e.signal as never }),
    signalValue: t.float({ nullable: true, resolve: (e) => e.signalValue ?? null }),
    target: t.exposeFloat('target'),
    recommended: t.exposeInt('recommended'),
    minimum: t.exposeInt('minimum'),
    fromReplicas: t.exposeInt('fromReplicas'),
    desired: t.exposeInt('desired'),
    admitted: t.exposeInt('admitted'),
    ready: t.exposeInt('ready'),
    reason: t.exposeString('reason'),
    whyNotMore: t.string({ nullable: true, resolve: (e) => e.whyNotMore ?? null }),
    coldStart: t.exposeBoolean('coldStart'),
  }),
});
