import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { uuidv7 } from '../ids.js';
import { Job } from '../jobs/index.js';
import { Project, Tenant } from '../tenancy/index.js';
import { tenantFilter } from '../tenant-filter.js';

/** What closed a ledger interval: a periodic checkpoint of a running job, or the state change that ended its
 * hold.
 */
export const USAGE_CLOSERS = [
  'checkpoint',
  'preempted',
  'disrupted',
  'grace',
  'succeeded',
  'failed',
  'cancelled',
  'requeued',
] as const;
export type UsageCloser = (typeof USAGE_CLOSERS)[number];

/**
 * The usage ledger: one row per job × flavor × interval the job held GPUs. An interval never
 * crosses an hour boundary nor a price change, so a row belongs to exactly one hour bucket and
 * one price. Rows are written in the same transaction as the state change that closes them
 * (and the job's `meteredFrom`), so a restart or failover neither repeats nor drops time; the
 * unique key refuses a second charge of the same time outright. Dimensions are stored as ids
 * (not relations) so a deleted project or user does not rewrite history.
 */
export const UsageRecord = defineEntity({
  name: 'UsageRecord',
  tableName: 'usage_records',
  filters: tenantFilter,
  uniques: [{ properties: ['job', 'flavor', 'startedAt'] }],
  indexes: [{ properties: ['tenant', 'startedAt'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    job: () => p.manyToOne(Job).deleteRule('cascade'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    projectId: p.string().length(36).nullable(),
    queueId: p.string().length(36),
    userId: p.string().length(36).nullable(),
    priorityClass: p.string().length(63),
    flavor: p.string().length(63),
    startedAt: p.datetime(),
    endedAt: p.datetime(),
    /** The real span, exact (the backend's clock). */
    durationMs: p.bigint('number'),
    /** Flavor units held: GPUs, or MIG slices / time-slice shares. */
    gpuUnits: p.double().$type<number>(),
    /** Device-equivalent seconds charged (a slice or share counts as its fraction of a GPU; scaled time on
     * the simulated cluster).
     */
    gpuSeconds: p.double().$type<number>(),
    cpuSeconds: p.double().$type<number>(),
    memoryGibSeconds: p.double().$type<number>(),
    /** gpuSeconds × the mean sampled GPU utilization over the interval; null when nothing was sampled. */
    usedGpuSeconds: p.double().$type<number>().nullable(),
    /** Price of one flavor unit for one hour, the priority class's multiplier included. */
    unitPricePerHour: p.double().$type<number>(),
    cost: p.double().$type<number>(),
    closedBy: p.enum([...USAGE_CLOSERS]),
    /** The job's very first row: counts the job once in rollups. */
    firstOfJob: p.boolean().default(false),
  },
});
export type UsageRecord = InferEntity<typeof UsageRecord>;

/**
 * Hourly rollup of the ledger, kept in the same transaction as the rows it sums: the usage
 * queries read it instead of the ledger. '' stands for "no project" / "no user" so the unique
 * key works the same on SQLite and PostgreSQL (NULLs are distinct in unique keys).
 */
export const UsageHourly = defineEntity({
  name: 'UsageHourly',
  tableName: 'usage_hourly',
  filters: tenantFilter,
  uniques: [{ properties: ['hour', 'tenant', 'projectId', 'queueId', 'userId', 'priorityClass', 'flavor'] }],
  indexes: [{ properties: ['tenant', 'hour'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    hour: p.datetime(),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    projectId: p.string().length(36),
    queueId: p.string().length(36),
    userId: p.string().length(36),
    priorityClass: p.string().length(63),
    flavor: p.string().length(63),
    gpuSeconds: p.double().$type<number>(),
    usedGpuSeconds: p.double().$type<number>(),
    /** gpuSeconds of the rows that had a utilization sample: efficiency = usedGpuSeconds /
     * measuredGpuSeconds.
     */
    measuredGpuSeconds: p.double().$type<number>(),
    cpuSeconds: p.double().$type<number>(),
    memoryGibSeconds: p.double().$type<number>(),
    cost: p.double().$type<number>(),
    /** Jobs that first ran in this hour (summable over buckets). */
    jobs: p.integer(),
  },
});
export type UsageHourly = InferEntity<typeof UsageHourly>;

/** Price book: a flavor's price per unit-hour from `effectiveFrom` on (until a later row). */
export const FlavorPrice = defineEntity({
  name: 'FlavorPrice',
  tableName: 'flavor_prices',
  uniques: [{ properties: ['flavor', 'effectiveFrom'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    flavor: p.string().length(63),
    pricePerUnitHour: p.double().$type<number>(),
    effectiveFrom: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type FlavorPrice = InferEntity<typeof FlavorPrice>;

/** Price book: a priority class's multiplier on flavor prices from `effectiveFrom` on. */
export const PriceMultiplier = defineEntity({
  name: 'PriceMultiplier',
  tableName: 'price_multipliers',
  uniques: [{ properties: ['priorityClass', 'effectiveFrom'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    priorityClass: p.string().length(63),
    multiplier: p.double().$type<number>(),
    effectiveFrom: p.datetime(),
    createdAt: p.datetime().onCreate(() => new Date()),
  },
});
export type PriceMultiplier = InferEntity<typeof PriceMultiplier>;

/** A monthly budget of a tenant (project null) or of one project, in the price book's currency. */
export const Budget = defineEntity({
  name: 'Budget',
  tableName: 'budgets',
  filters: tenantFilter,
  uniques: [{ properties: ['tenant', 'scopeKey'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    project: () => p.manyToOne(Project).nullable().deleteRule('cascade'),
    /** 'tenant', or the project's id: one budget per scope. */
    scopeKey: p.string().length(36),
    monthlyAmount: p.double().$type<number>(),
    /** Percent thresholds that alert once per month each. */
    thresholds: p.json<number[]>(),
    /** Hard: once spent, new jobs of non-exempt classes wait (BudgetExhausted). */
    hard: p.boolean().default(false),
    exemptPriorityClasses: p.json<string[]>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    updatedAt: p
      .datetime()
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
});
export type Budget = InferEntity<typeof Budget>;

/** A threshold crossed in a period: the unique key makes it fire once per budget, month and threshold. */
export const BudgetAlert = defineEntity({
  name: 'BudgetAlert',
  tableName: 'budget_alerts',
  filters: tenantFilter,
  uniques: [{ properties: ['budget', 'period', 'threshold'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    budget: () => p.manyToOne(Budget).deleteRule('cascade'),
    tenant: () => p.manyToOne(Tenant).deleteRule('cascade'),
    /** UTC month, 'YYYY-MM'. */
    period: p.string().length(7),
    threshold: p.integer(),
    spent: p.double().$type<number>(),
    /** The budget's monthly amount when it fired. */
    limitAmount: p.double().$type<number>(),
    at: p.datetime(),
  },
});
export type BudgetAlert = InferEntity<typeof BudgetAlert>;

export const meteringEntities = [UsageRecord, UsageHourly, FlavorPrice, PriceMultiplier, Budget, BudgetAlert];
