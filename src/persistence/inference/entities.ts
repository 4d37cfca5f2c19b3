// Inference services: long-running replicas under the same quotas as jobs. A service is its spec
// and its autoscaler's state; each replica is a Job of its queue (Job.service, Job.replicaSlot), so
// admission, placement, preemption and metering are the scheduler's as for any job.
import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import type {
  AutoscalerMemory,
  LatencyModel,
  MinimumWindow,
  ScalingRules,
  TrafficModel,
} from '../../core/inference/index.js';
import type { PodSetSpec } from '../../core/scheduling/index.js';
import { Queue } from '../cluster/index.js';
import { uuidv7 } from '../ids.js';
import { Project, Tenant, User } from '../tenancy/index.js';
import { tenantFilter } from '../tenant-filter.js';

/** What a replica runs (its containers' shape, as a job's `workload.container`). */
export interface ServiceContainer {
  image: string;
  command: string[];
  args: string[];
  env: { name: string; value: string; secret?: boolean }[];
}

/** The autoscaler's rules as stored (core ScalingRules less the bounds, which are columns). */
export type StoredScaling = Omit<ScalingRules, 'minReplicas' | 'maxReplicas' | 'minimumWindows'>;

/** The modelled traffic of a service on the simulated cluster (seeded from the service when not given). */
export interface StoredTraffic {
  traffic: TrafficModel;
  latency: LatencyModel;
}

/** The last decision, as the graph shows it. */
export interface StoredDecision {
  at: number;
  signalValue: number | null;
  desired: number;
  recommended: number;
  minimum: number;
  reason: string;
  coldStart: boolean;
  /** Replicas admitted and serving when it was made, and why not more were admitted (null: all were). */
  admitted: number;
  ready: number;
  whyNotMore: string | null;
}

export const SERVICE_STATES = ['ACTIVE', 'DELETING'] as const;

export const InferenceService = defineEntity({
  name: 'InferenceService',
  tableName: 'inference_services',
  filters: tenantFilter,
  uniques: [{ properties: ['tenant', 'name'] }],
  indexes: [{ properties: ['state'] }, { properties: ['tenant', 'id'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    project: () => p.manyToOne(Project).deleteRule('cascade'),
    queue: () => p.manyToOne(Queue),
    createdBy: () => p.manyToOne(User).nullable().deleteRule('set null'),
    name: p.string().length(63),
    container: p.json<ServiceContainer>(),
    port: p.integer(),
    /** One replica's pods (count > 1: a replica spanning several hosts) and their resources. */
    replica: p.json<PodSetSpec>(),
    minReplicas: p.integer(),
    maxReplicas: p.integer(),
    /** Minimums by weekly window (the day's, the night's); the first open one wins. */
    minimumWindows: p.json<MinimumWindow[]>(),
    scaling: p.json<StoredScaling>(),
    /** The p95 latency (ms) the service's SLA counts against; null: no SLA. */
    latencyObjectiveMs: p.double().$type<number>().nullable(),
    /** Slots replaced at once in a rolling update (new replica first, admitted within quota). */
    maxSurge: p.integer().default(1),
    guaranteedClass: p.string().length(63),
    burstClass: p.string().length(63),
    /** Bumped by each change of what replicas run (image, command, arguments, env, port, pods). */
    revision: p.integer().default(1),
    /** Replicas asked of the scheduler (the autoscaler's last decision, within the bounds). */
    desiredReplicas: p.integer(),
    memory: p.json<AutoscalerMemory>(),
    lastDecision: p.json<StoredDecision>().nullable(),
    traffic: p.json<StoredTraffic>().nullable(),
    state: p.enum([...SERVICE_STATES]).default('ACTIVE'),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type InferenceService = InferEntity<typeof InferenceService>;

/** One autoscaler decision that changed something or could not get what it asked for, with its numbers. */
export const ServiceScalingEvent = defineEntity({
  name: 'ServiceScalingEvent',
  tableName: 'service_scaling_events',
  filters: tenantFilter,
  indexes: [{ properties: ['service', 'id'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    service: () => p.manyToOne(InferenceService).deleteRule('cascade'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    at: p.datetime(),
    signal: p.string().length(24),
    signalValue: p.double().$type<number>().nullable(),
    target: p.double().$type<number>(),
    recommended: p.integer(),
    minimum: p.integer(),
    fromReplicas: p.integer(),
    desired: p.integer(),
    admitted: p.integer(),
    ready: p.integer(),
    reason: p.string().length(500),
    /** Why fewer are admitted than desired (the pending replicas' reason), null when all are. */
    whyNotMore: p.string().length(500).nullable(),
    coldStart: p.boolean().default(false),
  },
});
export type ServiceScalingEvent = InferEntity<typeof ServiceScalingEvent>;

/**
 * A service's load per hour: the autoscaler's readings tallied (its SLA is the share of readings whose
 * p95 was within the objective), one row per service and hour.
 */
export const ServiceLoadWindow = defineEntity({
  name: 'ServiceLoadWindow',
  tableName: 'service_load_windows',
  filters: tenantFilter,
  uniques: [{ properties: ['service', 'windowStart'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    service: () => p.manyToOne(InferenceService).deleteRule('cascade'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    windowStart: p.datetime(),
    readings: p.integer().default(0),
    withinObjective: p.integer().default(0),
    requests: p.double().$type<number>().default(0),
    maxP95Ms: p.double().$type<number>().default(0),
    sumP95Ms: p.double().$type<number>().default(0),
    replicaReadings: p.integer().default(0),
  },
});
export type ServiceLoadWindow = InferEntity<typeof ServiceLoadWindow>;

export const inferenceEntities = [InferenceService, ServiceScalingEvent, ServiceLoadWindow];
