import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import type { PreemptionSpec, QuotaSpec, TimeWindowSpec } from '../../core/scheduling/index.js';
import { uuidv7 } from '../ids.js';
import { Tenant } from '../tenancy/index.js';
import { tenantFilter } from '../tenant-filter.js';

export const FLAVOR_KINDS = ['gpu', 'mig', 'timeslice'] as const;
export const QUEUEING_STRATEGIES = ['StrictFIFO', 'BestEffortFIFO'] as const;
export const PREEMPTIBLE_VALUES = ['yes', 'no', 'reclaim-only'] as const;

/** Platform-wide objects (flavors, pools, nodes, cohorts, priority classes) have no tenant. */
export const Flavor = defineEntity({
  name: 'Flavor',
  tableName: 'flavors',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    name: p.string().length(63).unique(),
    kind: p.enum([...FLAVOR_KINDS]),
    gpuModel: p.string().length(100).nullable(),
    slicesPerGpu: p.integer().nullable(),
    /** The price at creation. What is charged, and what the graph shows, is the price book's (FlavorPrice). */
    pricePerUnitHour: p.double().$type<number>().default(0),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type Flavor = InferEntity<typeof Flavor>;

export const NodePool = defineEntity({
  name: 'NodePool',
  tableName: 'node_pools',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
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
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
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
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
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
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
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
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
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
    /** Governance: what the queue runs (WorkloadType) and its SLA class; they choose its isolation policy
     * with the tenant's tier.
     */
    workloadType: p.string().length(24).nullable(),
    slaClass: p.string().length(16).nullable(),
    /** An isolation policy named for this queue, over the rules' choice. */
    isolationPolicy: p.string().length(63).nullable(),
    /** The controller's coefficients in force ({ lend, borrow, at }); null: the policy's static base. */
    controllerSetting: p.json<{ lend: number; borrow: number | null; at: number }>().nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type Queue = InferEntity<typeof Queue>;

export const clusterEntities = [Flavor, NodePool, ClusterNode, Cohort, PriorityClassRow, Queue];
