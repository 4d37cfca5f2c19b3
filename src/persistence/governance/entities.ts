// Governance: the isolation-policy library and its rules (platform data), quota requests
// and their approvals, runtime probe samples of jobs, and platform governance settings.
import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import type { IsolationPolicy, LimitSetting } from '../../core/governance/index.js';
import { Queue } from '../cluster/index.js';
import { uuidv7 } from '../ids.js';
import { Job } from '../jobs/index.js';
import { Tenant, User } from '../tenancy/index.js';
import { tenantFilter } from '../tenant-filter.js';

/** A policy's coefficients as stored (the row's name, description and level are columns). */
export type IsolationPolicyCoefficients = Omit<IsolationPolicy, 'name' | 'description' | 'level'>;

/**
 * A named isolation-strength policy. The four built-ins live in code (core/governance/policies.ts); a
 * row with a built-in's name overrides its coefficients (and deleting that row restores them).
 * Platform admins add others. Platform-wide: no tenant.
 */
export const IsolationPolicyRow = defineEntity({
  name: 'IsolationPolicyRow',
  tableName: 'isolation_policies',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    name: p.string().length(63).unique(),
    description: p.string().length(400),
    level: p.string().length(16),
    coefficients: p.json<IsolationPolicyCoefficients>(),
    builtIn: p.boolean().default(false),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type IsolationPolicyRow = InferEntity<typeof IsolationPolicyRow>;

/** Which policy a queue gets by its tenant's tier, workload type and SLA class (null: any); replaced as a
 * whole list, in order.
 */
export const IsolationPolicyRule = defineEntity({
  name: 'IsolationPolicyRule',
  tableName: 'isolation_policy_rules',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    position: p.integer(),
    tier: p.string().length(16).nullable(),
    workloadType: p.string().length(24).nullable(),
    slaClass: p.string().length(16).nullable(),
    policy: p.string().length(63),
  },
});
export type IsolationPolicyRule = InferEntity<typeof IsolationPolicyRule>;

export const QUOTA_REQUEST_STATUSES = [
  'PENDING',
  'APPROVED',
  'ACTIVE',
  'EXPIRED',
  'REJECTED',
  'CANCELLED',
] as const;
export type QuotaRequestStatus = (typeof QUOTA_REQUEST_STATUSES)[number];

/**
 * A tenant admin's request to change one nominal quota of a queue. Approved, it applies at once (or at
 * `startsAt`) in the same transaction as its status; with `expiresAt` it is undone then by itself
 * (the queue's nominal goes back by the granted difference, `previousNominal` records what it was).
 */
export const QuotaRequest = defineEntity({
  name: 'QuotaRequest',
  tableName: 'quota_requests',
  filters: tenantFilter,
  indexes: [{ properties: ['status'] }, { properties: ['tenant', 'id'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    queue: () => p.manyToOne(Queue).deleteRule('cascade'),
    flavor: p.string().length(63),
    resource: p.string().length(16),
    /** The nominal asked for (API units). */
    nominal: p.double().$type<number>(),
    /** The nominal when the change was applied; null before. */
    previousNominal: p.double().$type<number>().nullable(),
    startsAt: p.datetime().nullable(),
    expiresAt: p.datetime().nullable(),
    justification: p.string().length(2000),
    status: p.enum([...QUOTA_REQUEST_STATUSES]).default('PENDING'),
    requestedBy: () => p.manyToOne(User).nullable().deleteRule('set null'),
    decidedBy: () => p.manyToOne(User).nullable().deleteRule('set null'),
    decisionNote: p.string().length(2000).nullable(),
    decidedAt: p.datetime().nullable(),
    appliedAt: p.datetime().nullable(),
    endedAt: p.datetime().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type QuotaRequest = InferEntity<typeof QuotaRequest>;

/** A runtime probe reading of a running job (GPU utilization and memory), kept as a time series. */
export const JobProbeSample = defineEntity({
  name: 'JobProbeSample',
  tableName: 'job_probe_samples',
  filters: tenantFilter,
  indexes: [{ properties: ['job', 'at'] }, { properties: ['at'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    job: () => p.manyToOne(Job).deleteRule('cascade'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    /** ms epoch (the backend's clock). */
    at: p.bigint('number'),
    gpuUtilization: p.double().$type<number>(),
    memoryUtilization: p.double().$type<number>().nullable(),
  },
});
export type JobProbeSample = InferEntity<typeof JobProbeSample>;

/** Platform governance settings by key (e.g. 'controller': whether the second-level controller runs, and its
 * window).
 */
export const GovernanceSetting = defineEntity({
  name: 'GovernanceSetting',
  tableName: 'governance_settings',
  properties: {
    key: p.string().length(63).primary(),
    value: p.json<Record<string, unknown>>(),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type GovernanceSetting = InferEntity<typeof GovernanceSetting>;

/** The controller's coefficients in force for a queue (Queue.controllerSetting): null means the policy's
 * static base.
 */
export type ControllerSettingColumn = LimitSetting & { at: number };

export const governanceEntities = [
  IsolationPolicyRow,
  IsolationPolicyRule,
  QuotaRequest,
  JobProbeSample,
  GovernanceSetting,
];
