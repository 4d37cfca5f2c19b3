import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import type { Admission, PodSetSpec } from '../../core/scheduling/index.js';
import { Queue } from '../cluster/index.js';
import { uuidv7 } from '../ids.js';
import { InferenceService } from '../inference/index.js';
import { Project, Tenant, User } from '../tenancy/index.js';
import { tenantFilter } from '../tenant-filter.js';

export const WORKLOAD_KINDS = ['BATCH', 'JOBSET', 'PYTORCH_JOB', 'RAY_JOB', 'RAY_CLUSTER'] as const;
export type WorkloadKindName = (typeof WORKLOAD_KINDS)[number];

export const JOB_STATES = ['PENDING', 'ADMITTED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'] as const;
export type JobState = (typeof JOB_STATES)[number];
export const TERMINAL_JOB_STATES: ReadonlySet<JobState> = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

export const Job = defineEntity({
  name: 'Job',
  tableName: 'jobs',
  filters: tenantFilter,
  uniques: [{ properties: ['tenant', 'idempotencyKey'] }],
  // (tenant, id) and (queue, id): a page of a tenant's or a queue's jobs in id order walks the index and
  // stops at the page size, instead of sorting all their jobs.
  indexes: [
    { properties: ['tenant', 'state'] },
    { properties: ['queue', 'state'] },
    { properties: ['state'] },
    { properties: ['tenant', 'finishedAt'] },
    { properties: ['tenant', 'id'] },
    { properties: ['queue', 'id'] },
    { properties: ['stoppingUntil'] },
    { properties: ['service', 'state'] },
  ],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
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
    /** Probes declared at submit: the workload type (WorkloadType) and whether it serves latency-sensitive
     * traffic.
     */
    workloadType: p.string().length(24).nullable(),
    latencySensitive: p.boolean().default(false),
    /** Summary of its probe samples ({ samples, meanGpu, lastGpu, lastMemory, lastAt }); null before the
     * first.
     */
    probeSummary: p
      .json<{
        samples: number;
        meanGpu: number;
        lastGpu: number;
        lastMemory: number | null;
        lastAt: number;
      }>()
      .nullable(),
    /** The governance flag in force (core/governance JobFlag: IDLE or NOT_RUNNING with its numbers); null
     * when none.
     */
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
     * Which controller runs it on Kubernetes: BATCH (batch/v1 Jobs), JOBSET, PYTORCH_JOB, RAY_JOB,
     * RAY_CLUSTER (an open-ended Ray cluster under quota). Other backends run every kind as pods.
     */
    workloadKind: p.enum([...WORKLOAD_KINDS]).default('BATCH'),
    /** The inference service this job is a replica of (null: a batch job). */
    service: () => p.manyToOne(InferenceService).nullable().deleteRule('set null'),
    /** The replica's slot in its service (0..desired−1); slots below the minimum are the guaranteed ones. */
    replicaSlot: p.integer().nullable(),
    /** The service revision the replica runs. */
    serviceRevision: p.integer().nullable(),
    /** Retries in place of the job's own failures (a non-zero exit, OOMKilled) before it fails; 0–10. */
    maxRetries: p.integer().default(0),
    /** Times the cluster stopped it (eviction, drain, a lost node) and it was requeued. */
    disruptionCount: p.integer().default(0),
    /**
     * Start (ms epoch, the backend's clock) of the time the job has held GPUs and the ledger has
     * not charged yet: set when the backend reports it started, advanced by each metering
     * checkpoint, null once the hold ends. Written with the ledger rows, so charging is exactly once.
     */
    meteredFrom: p.bigint('number').nullable(),
    /**
     * A preempted run whose pods may still hold their GPUs for their termination grace (the
     * backend's clock, ms): charged from `stoppingSince` until the backend reports the pods gone,
     * at most until `stoppingUntil` (since + grace), with the admission it ran under. Null when
     * no run is stopping.
     */
    stoppingSince: p.bigint('number').nullable(),
    stoppingUntil: p.bigint('number').nullable(),
    stoppingAdmission: p.json<Admission>().nullable(),
    exitReason: p.string().length(500).nullable(),
    submittedAt: p.datetime().onCreate(() => new Date()),
    admittedAt: p.datetime().nullable(),
    startedAt: p.datetime().nullable(),
    finishedAt: p.datetime().nullable(),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type Job = InferEntity<typeof Job>;

export const JOB_EVENT_TYPES = [
  'SUBMITTED',
  'ADMITTED',
  'STARTED',
  'PREEMPTED',
  'SUCCEEDED',
  'FAILED',
  'CANCELLED',
  'ADMITTED_NOT_RUNNING',
  'FLAGGED',
  'DISRUPTED',
] as const;
export type JobEventType = (typeof JOB_EVENT_TYPES)[number];

export const JobEvent = defineEntity({
  name: 'JobEvent',
  tableName: 'job_events',
  filters: tenantFilter,
  indexes: [{ properties: ['job', 'id'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
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

export const jobEntities = [Job, JobEvent];
