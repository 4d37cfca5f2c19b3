import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import type { Admission, PodSetSpec, PreemptionSpec, QuotaSpec, TimeWindowSpec } from '../../core/scheduling/types.js';
import { Project, Tenant, User, tenantFilter } from '../tenancy/entities.js';
import { uuidv7 } from '../ids.js';

export const FLAVOR_KINDS = ['gpu', 'mig', 'timeslice'] as const;
export const QUEUEING_STRATEGIES = ['StrictFIFO', 'BestEffortFIFO'] as const;
export const JOB_STATES = ['PENDING', 'ADMITTED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type JobState = (typeof JOB_STATES)[number];
export const TERMINAL_JOB_STATES: ReadonlySet<JobState> = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);
export const PREEMPTIBLE_VALUES = ['yes', 'no', 'reclaim-only'] as const;

/** Platform-wide objects (flavors, pools, nodes, cohorts, priority classes) have no tenant. */
export const Flavor = defineEntity({
  name: 'Flavor',
  tableName: 'flavors',
  properties: {
    id: p.uuid().primary().onCreate(() => uuidv7()),
    name: p.string().length(63).unique(),
    kind: p.enum([...FLAVOR_KINDS]),
    gpuModel: p.string().length(100).nullable(),
    slicesPerGpu: p.integer().nullable(),
    pricePerUnitHour: p.double().$type<number>().default(0),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Flavor = InferEntity<typeof Flavor>;

export const NodePool = defineEntity({
  name: 'NodePool',
  tableName: 'node_pools',
  properties: {
    id: p.uuid().primary().onCreate(() => uuidv7()),
    name: p.string().length(63).unique(),
    /** A dedicated pool is tainted for this tenant's jobs only. */
    dedicatedTenant: () => p.manyToOne(Tenant).nullable().deleteRule('set null'),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type NodePool = InferEntity<typeof NodePool>;

export const ClusterNode = defineEntity({
  name: 'ClusterNode',
  tableName: 'nodes',
  properties: {
    id: p.uuid().primary().onCreate(() => uuidv7()),
    name: p.string().length(253).unique(),
    pool: () => p.manyToOne(NodePool).deleteRule('cascade'),
    flavor: () => p.manyToOne(Flavor),
    gpus: p.integer(),
    cpu: p.integer(),
    memory: p.integer(),
    /**
     * Cordoned, not ready, or gone from the cluster while Fairway pods still run there: the
     * scheduler places nothing new on it (its running jobs keep their GPUs until they end).
     */
    unschedulable: p.boolean().default(false),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type ClusterNode = InferEntity<typeof ClusterNode>;

export const Cohort = defineEntity({
  name: 'Cohort',
  tableName: 'cohorts',
  properties: {
    id: p.uuid().primary().onCreate(() => uuidv7()),
    name: p.string().length(63).unique(),
    parent: () => p.manyToOne(Cohort).nullable().deleteRule('set null'),
    quotas: p.json<QuotaSpec>(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Cohort = InferEntity<typeof Cohort>;

export const PriorityClassRow = defineEntity({
  name: 'PriorityClassRow',
  tableName: 'priority_classes',
  properties: {
    id: p.uuid().primary().onCreate(() => uuidv7()),
    name: p.string().length(63).unique(),
    value: p.integer(),
    preemptible: p.enum([...PREEMPTIBLE_VALUES]),
    description: p.string().length(200).nullable(),
    /** Usable only by projects granted it (tenant admins grant within the platform's grant to the tenant). */
    requiresGrant: p.boolean().default(false),
  },
});
export type PriorityClassRow = InferEntity<typeof PriorityClassRow>;

export const Queue = defineEntity({
  name: 'Queue',
  tableName: 'queues',
  filters: tenantFilter,
  properties: {
    id: p.uuid().primary().onCreate(() => uuidv7()),
    name: p.string().length(63).unique(),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    cohort: () => p.manyToOne(Cohort).nullable().deleteRule('set null'),
    quotas: p.json<QuotaSpec>(),
    weight: p.double().$type<number>().default(1),
    queueingStrategy: p.enum([...QUEUEING_STRATEGIES]).default('BestEffortFIFO'),
    preemption: p.json<PreemptionSpec>(),
    isolationLevel: p.string().length(16).nullable(),
    timeWindows: p.json<TimeWindowSpec[]>(),
    dedicatedPool: p.string().length(63).nullable(),
    /** Governance (issue 16): what the queue runs (WorkloadType) and its SLA class; they choose its isolation policy with the tenant's tier. */
    workloadType: p.string().length(24).nullable(),
    slaClass: p.string().length(16).nullable(),
    /** An isolation policy named for this queue, over the rules' choice. */
    isolationPolicy: p.string().length(63).nullable(),
    /** The controller's coefficients in force ({ lend, borrow, at }); null: the policy's static base. */
    controllerSetting: p.json<{ lend: number; borrow: number | null; at: number }>().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type Queue = InferEntity<typeof Queue>;

export const Job = defineEntity({
  name: 'Job',
  tableName: 'jobs',
  filters: tenantFilter,
  uniques: [{ properties: ['tenant', 'idempotencyKey'] }],
  // (tenant, id) and (queue, id): a page of a tenant's or a queue's jobs in id order walks the index and stops at the page size, instead of sorting all their jobs.
  indexes: [{ properties: ['tenant', 'state'] }, { properties: ['queue', 'state'] }, { properties: ['state'] }, { properties: ['tenant', 'finishedAt'] }, { properties: ['tenant', 'id'] }, { properties: ['queue', 'id'] }],
  properties: {
    id: p.uuid().primary().onCreate(() => uuidv7()),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    project: () => p.manyToOne(Project).nullable().deleteRule('set null'),
    queue: () => p.manyToOne(Queue),
    submittedBy: () => p.manyToOne(User).nullable().deleteRule('set null'),
    name: p.string().length(200),
    priorityClass: p.string().length(63),
    podSets: p.json<PodSetSpec[]>(),
    expectedDurationMs: p.bigint('number').nullable(),
    maxRunMs: p.bigint('number').nullable(),
    /** Declared checkpoint interval (declared ms): a preemption loses only the work since the last one. */
    checkpointIntervalMs: p.bigint('number').nullable(),
    /** Declared resumable: suspended on preemption and resumed from where it stopped. */
    checkpointResumable: p.boolean().default(false),
    /** Probes declared at submit (issue 16): the workload type (WorkloadType) and whether it serves latency-sensitive traffic. */
    workloadType: p.string().length(24).nullable(),
    latencySensitive: p.boolean().default(false),
    /** Summary of its probe samples ({ samples, meanGpu, lastGpu, lastMemory, lastAt }); null before the first. */
    probeSummary: p.json<{ samples: number; meanGpu: number; lastGpu: number; lastMemory: number | null; lastAt: number }>().nullable(),
    /** The governance flag in force (core/governance JobFlag: IDLE or NOT_RUNNING with its numbers); null when none. */
    governanceFlag: p.json<Record<string, unknown>>().nullable(),
    workload: p.json<Record<string, unknown>>().nullable(),
    state: p.enum([...JOB_STATES]).default('PENDING'),
    admission: p.json<Admission>().nullable(),
    /** Client-chosen key: a retried submit with the same key returns the same job. */
    idempotencyKey: p.string().length(128).nullable(),
    /** Hash of the submitted payload, to tell a retry from a different job under a reused key. */
    requestHash: p.string().length(64),
    /** Scheduler's submit time (ms epoch): queue order survives restarts and preemptions. */
    submitTime: p.bigint('number'),
    gpusRequested: p.double().$type<number>().default(0),
    preemptionCount: p.integer().default(0),
    /**
     * Start (ms epoch, the backend's clock) of the time the job has held GPUs and the ledger has
     * not charged yet: set when the backend reports it started, advanced by each metering
     * checkpoint, null once the hold ends. Written with the ledger rows, so charging is exactly once.
     */
    meteredFrom: p.bigint('number').nullable(),
    exitReason: p.string().length(500).nullable(),
    submittedAt: p.datetime().onCreate(() => new Date()),
    admittedAt: p.datetime().nullable(),
    startedAt: p.datetime().nullable(),
    finishedAt: p.datetime().nullable(),
    updatedAt: p.datetime().onCreate(() => new Date()).onUpdate(() => new Date()),
  },
});
export type Job = InferEntity<typeof Job>;

export const JOB_EVENT_TYPES = ['SUBMITTED', 'ADMITTED', 'STARTED', 'PREEMPTED', 'SUCCEEDED', 'FAILED', 'CANCELLED', 'ADMITTED_NOT_RUNNING', 'FLAGGED'] as const;
export type JobEventType = (typeof JOB_EVENT_TYPES)[number];

export const JobEvent = defineEntity({
  name: 'JobEvent',
  tableName: 'job_events',
  filters: tenantFilter,
  indexes: [{ properties: ['job', 'id'] }],
  properties: {
    id: p.uuid().primary().onCreate(() => uuidv7()),
    job: () => p.manyToOne(Job).deleteRule('cascade'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    type: p.enum([...JOB_EVENT_TYPES]),
    reason: p.string().length(64).nullable(),
    message: p.string().length(500).nullable(),
    data: p.json<Record<string, unknown>>().nullable(),
    at: p.datetime(),
  },
});
export type JobEvent = InferEntity<typeof JobEvent>;

/**
 * Transactional outbox: decisions and their side effects (backend calls, published
 * events) are written with the state change; a dispatcher performs and marks them.
 * After a crash, unperformed rows are replayed (backend calls are idempotent).
 */
export const OutboxEntry = defineEntity({
  name: 'OutboxEntry',
  tableName: 'outbox',
  indexes: [{ properties: ['performedAt', 'id'] }],
  properties: {
    id: p.uuid().primary().onCreate(() => uuidv7()),
    kind: p.string().length(32),
    payload: p.json<Record<string, unknown>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    performedAt: p.datetime().nullable(),
  },
});
export type OutboxEntry = InferEntity<typeof OutboxEntry>;

/**
 * The scheduler leader's fencing token: one row (id 1), bumped by each replica that takes
 * the leadership. Every write of scheduling decisions checks, in its own transaction, that
 * the stored epoch is still the writer's; a replica that lost the lock is refused.
 */
export const LeaderEpoch = defineEntity({
  name: 'LeaderEpoch',
  tableName: 'fairway_leader_epoch',
  properties: {
    id: p.integer().primary().autoincrement(false),
    epoch: p.bigint('number'),
  },
});
export type LeaderEpoch = InferEntity<typeof LeaderEpoch>;

export const schedulingEntities = [Flavor, NodePool, ClusterNode, Cohort, PriorityClassRow, Queue, Job, JobEvent, OutboxEntry, LeaderEpoch];
