import type {
  IsolationLevel,
  PreemptionSpec,
  QueueStatus,
  QuotaSpec,
  ResourceName,
  TimeWindowSpec,
} from '../../core/scheduling/index.js';

// The quota shapes a queue is configured with: the schema takes them from here, never from the core.
export type { QuotaSpec, ResourceName, TimeWindowSpec };

import type { SlaClass, WorkloadType } from '../../core/governance/index.js';
import { ClusterNode, Cohort, Flavor, NodePool, Queue } from '../../persistence/cluster/index.js';
import { findPlain } from '../../persistence/raw-reads.js';
import { Project, Tenant } from '../../persistence/tenancy/index.js';
import { badInput, conflict, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import {
  requireCapability,
  requirePlatformAdmin,
  requirePrincipal,
  type ServiceContext,
} from '../context.js';
import { schedulerInputError } from '../errors.js';
import { assignGovernanceFields, governanceForQueueWrite } from '../governance/index.js';
import { writeInitialFlavorPrice } from '../metering/index.js';
import { cohortSpec, flavorSpec, nodeSpec, queueSpec } from '../scheduling/index.js';
import { requireProjectManager } from '../tenancy/index.js';

export interface CreateFlavorInput {
  name: string;
  kind: 'gpu' | 'mig' | 'timeslice';
  gpuModel?: string | null;
  slicesPerGpu?: number | null;
  pricePerUnitHour: number;
}
export interface NodeInput {
  name: string;
  flavor: string;
  gpus: number;
  cpu: number;
  memory: number;
}
export interface CreateNodePoolInput {
  name: string;
  dedicatedTenantId?: string | null;
  nodes: NodeInput[];
}
export interface CreateCohortInput {
  name: string;
  parentId?: string | null;
  quotas?: QuotaSpec;
}
export interface QueueInput {
  name: string;
  tenantId: string;
  cohortId?: string | null;
  quotas: QuotaSpec;
  weight?: number | null;
  queueingStrategy?: 'StrictFIFO' | 'BestEffortFIFO' | null;
  preemption?: PreemptionSpec | null;
  isolationLevel?: IsolationLevel | null;
  timeWindows?: TimeWindowSpec[] | null;
  dedicatedPool?: string | null;
  /** Governance: with the tenant's tier these choose the queue's isolation policy; a named policy overrides
   * the rules.
   */
  workloadType?: WorkloadType | null;
  slaClass?: SlaClass | null;
  isolationPolicy?: string | null;
}
export type UpdateQueueInput = Partial<Omit<QueueInput, 'name' | 'tenantId'>> & { id: string };

type Core = Awaited<ReturnType<ServiceContext['scheduler']['configSnapshot']>>;

/** Tries a configuration change on a scratch core; the core's refusal is the caller's input error. */
function check(core: Core, change: (core: Core) => void) {
  try {
    change(core);
  } catch (error) {
    schedulerInputError(error);
  }
}

export async function listFlavors(ctx: ServiceContext): Promise<Flavor[]> {
  requirePrincipal(ctx);
  return ctx.em.find(Flavor, {}, { orderBy: { name: 'asc' } });
}

export async function listNodePools(ctx: ServiceContext): Promise<NodePool[]> {
  requirePlatformAdmin(ctx);
  return ctx.em.find(NodePool, {}, { orderBy: { name: 'asc' } });
}

export async function listNodes(ctx: ServiceContext, poolId: string): Promise<ClusterNode[]> {
  requirePlatformAdmin(ctx);
  return ctx.em.find(
    ClusterNode,
    { pool: poolId },
    { orderBy: { name: 'asc' }, populate: ['flavor', 'pool'] },
  );
}

export async function listCohorts(ctx: ServiceContext): Promise<Cohort[]> {
  requirePlatformAdmin(ctx);
  return ctx.em.find(Cohort, {}, { orderBy: { name: 'asc' } });
}

/** Platform admins: every queue (or one tenant's); others: the queues of a tenant they belong to. */
export async function listQueues(ctx: ServiceContext, tenantId: string | null): Promise<Queue[]> {
  const principal = requirePrincipal(ctx);
  if (tenantId) requireCapability(ctx, tenantId, 'tenant:read', 'Tenant');
  else if (!principal.isPlatformAdmin)
    return findPlain(ctx.em, Queue, { tenant_id: [...principal.roles.keys()] }, { orderBy: 'name' });
  // Tenant.queues is on every dashboard: plain rows, read without the query builder (raw-reads.ts).
  return findPlain(ctx.em, Queue, tenantId ? { tenant_id: tenantId } : {}, { orderBy: 'name' });
}

/**
 * A queue's live usage from the scheduler (usage lines, weighted share, pending and admitted
 * counts). The one rule for it, on every path that reaches these numbers (queries, nested
 * fields, queueUpdated events): usage:read in the queue's tenant, not just tenant:read.
 */
export function queueUsage(ctx: ServiceContext, queue: Queue): QueueStatus | null {
  requireCapability(ctx, queue.tenant.id, 'usage:read', 'Queue');
  return ctx.scheduler.queueStatus(queue.name);
}

export async function getQueue(ctx: ServiceContext, id: string): Promise<Queue> {
  // Through the request's loader (a plain row): every project's default queue in a list is one read, and a
  // queue the page already listed (Tenant.queues primes the loader) none.
  const queue = await ctx.loaders.queue.load(id);
  if (!queue) throw notFound('Queue');
  requireCapability(ctx, queue.tenant.id, 'tenant:read', 'Queue');
  return queue;
}

export async function createFlavor(ctx: ServiceContext, input: CreateFlavorInput): Promise<Flavor> {
  const core = await ctx.scheduler.configSnapshot();
  const flavor = await auditedMutation(ctx, { action: 'flavor.create', input: { ...input } }, async (em) => {
    requirePlatformAdmin(ctx);
    if (await em.count(Flavor, { name: input.name }))
      throw conflict(`A flavor named "${input.name}" already exists.`);
    const created = em.create(Flavor, {
      name: input.name,
      kind: input.kind,
      gpuModel: input.gpuModel ?? null,
      slicesPerGpu: input.slicesPerGpu ?? null,
      pricePerUnitHour: input.pricePerUnitHour,
    });
    // The creation price holds for all time until a later FlavorPrice (the price book is versioned).
    writeInitialFlavorPrice(em, input.name, input.pricePerUnitHour);
    check(core, (core) => core.upsertFlavor(flavorSpec(created)));
    await em.flush();
    return { result: created, tenantId: null, targetType: 'Flavor', targetId: created.id };
  });
  ctx.scheduler.announce({ kind: 'config' });
  return flavor;
}

export async function createNodePool(ctx: ServiceContext, input: CreateNodePoolInput): Promise<NodePool> {
  const core = await ctx.scheduler.configSnapshot();
  const pool = await auditedMutation(ctx, { action: 'nodePool.create', input: { ...input } }, async (em) => {
    requirePlatformAdmin(ctx);
    if (await em.count(NodePool, { name: input.name }))
      throw conflict(`A node pool named "${input.name}" already exists.`);
    const names = new Set(input.nodes.map((n) => n.name));
    if (names.size !== input.nodes.length) throw badInput('Node names must be unique within the pool.');
    if (input.nodes.length && (await em.count(ClusterNode, { name: { $in: [...names] } })))
      throw conflict('A node with one of these names already exists.');
    let dedicatedTenant: Tenant | null = null;
    if (input.dedicatedTenantId) {
      dedicatedTenant = await em.findOne(Tenant, { id: input.dedicatedTenantId });
      if (!dedicatedTenant) throw notFound('Tenant');
    }
    const flavors = new Map(
      (await em.find(Flavor, { name: { $in: input.nodes.map((n) => n.flavor) } })).map((f) => [f.name, f]),
    );
    const created = em.create(NodePool, { name: input.name, dedicatedTenant });
    const nodes = input.nodes.map((n) => {
      const flavor = flavors.get(n.flavor);
      if (!flavor) throw badInput(`Node ${n.name}: unknown flavor "${n.flavor}".`);
      return em.create(ClusterNode, {
        name: n.name,
        pool: created,
        flavor,
        gpus: n.gpus,
        cpu: n.cpu,
        memory: n.memory,
      });
    });
    check(core, (core) => {
      for (const node of nodes)
        core.upsertNode(nodeSpec(node, created.name, node.flavor.name, dedicatedTenant?.id ?? null));
    });
    await em.flush();
    return { result: created, tenantId: null, targetType: 'NodePool', targetId: created.id };
  });
  ctx.scheduler.announce({ kind: 'config' });
  return pool;
}

export async function createCohort(ctx: ServiceContext, input: CreateCohortInput): Promise<Cohort> {
  const core = await ctx.scheduler.configSnapshot();
  const cohort = await auditedMutation(ctx, { action: 'cohort.create', input: { ...input } }, async (em) => {
    requirePlatformAdmin(ctx);
    if (await em.count(Cohort, { name: input.name }))
      throw conflict(`A cohort named "${input.name}" already exists.`);
    const parent = input.parentId ? await em.findOne(Cohort, { id: input.parentId }) : null;
    if (input.parentId && !parent) throw notFound('Cohort');
    const created = em.create(Cohort, { name: input.name, parent, quotas: input.quotas ?? {} });
    check(core, (core) => core.upsertCohort(cohortSpec(created, parent?.name ?? null)));
    await em.flush();
    return { result: created, tenantId: null, targetType: 'Cohort', targetId: created.id };
  });
  ctx.scheduler.announce({ kind: 'config' });
  return cohort;
}

export async function createQueue(ctx: ServiceContext, input: QueueInput): Promise<Queue> {
  const core = await ctx.scheduler.configSnapshot();
  const queue = await auditedMutation(
    ctx,
    { action: 'queue.create', input: { ...input }, tenantHint: input.tenantId },
    async (em) => {
      requirePlatformAdmin(ctx);
      if (await em.count(Queue, { name: input.name }))
        throw conflict(`A queue named "${input.name}" already exists.`);
      const tenant = await em.findOne(Tenant, { id: input.tenantId });
      if (!tenant) throw notFound('Tenant');
      const cohort = input.cohortId ? await em.findOne(Cohort, { id: input.cohortId }) : null;
      if (input.cohortId && !cohort) throw notFound('Cohort');
      const created = em.create(Queue, {
        name: input.name,
        tenant,
        cohort,
        quotas: input.quotas,
        weight: input.weight ?? 1,
        queueingStrategy: input.queueingStrategy ?? 'BestEffortFIFO',
        preemption: input.preemption ?? {},
        isolationLevel: input.isolationLevel ?? null,
        timeWindows: input.timeWindows ?? [],
        dedicatedPool: input.dedicatedPool ?? null,
      });
      assignGovernanceFields(created, input);
      const governance = await governanceForQueueWrite(em, created, tenant.tier);
      check(core, (core) => core.upsertQueue(queueSpec(created, cohort?.name ?? null, 1, governance)));
      await em.flush();
      return { result: created, tenantId: tenant.id, targetType: 'Queue', targetId: created.id };
    },
  );
  ctx.scheduler.announce({ kind: 'config' });
  return queue;
}

export async function updateQueue(
  ctx: ServiceContext,
  input: UpdateQueueInput,
  action = 'queue.update',
): Promise<Queue> {
  const core = await ctx.scheduler.configSnapshot();
  const queue = await auditedMutation(ctx, { action, input: { ...input } }, async (em) => {
    const found = await em.findOne(Queue, { id: input.id }, { populate: ['cohort', 'tenant'] });
    if (!found) throw notFound('Queue');
    requirePlatformAdmin(ctx);
    let cohort = found.cohort ?? null;
    if (input.cohortId !== undefined) {
      cohort = input.cohortId ? await em.findOne(Cohort, { id: input.cohortId }) : null;
      if (input.cohortId && !cohort) throw notFound('Cohort');
      found.cohort = cohort;
    }
    if (input.quotas !== undefined && input.quotas !== null) found.quotas = input.quotas;
    if (input.weight != null) found.weight = input.weight;
    if (input.queueingStrategy != null) found.queueingStrategy = input.queueingStrategy;
    if (input.preemption != null) found.preemption = input.preemption;
    if (input.isolationLevel !== undefined) found.isolationLevel = input.isolationLevel ?? null;
    if (input.timeWindows != null) found.timeWindows = input.timeWindows;
    if (input.dedicatedPool !== undefined) found.dedicatedPool = input.dedicatedPool ?? null;
    assignGovernanceFields(found, input);
    const governance = await governanceForQueueWrite(em, found, found.tenant.tier);
    check(core, (core) => core.upsertQueue(queueSpec(found, cohort?.name ?? null, 1, governance)));
    await em.flush();
    return { result: found, tenantId: found.tenant.id, targetType: 'Queue', targetId: found.id };
  });
  ctx.scheduler.announce({ kind: 'config' });
  ctx.events.publish('tenant-event', queue.tenant.id, {
    kind: 'QUOTA_CHANGED',
    queueId: queue.id,
    at: ctx.now().getTime(),
  });
  ctx.events.publish('queue-updated', queue.id, { queueId: queue.id, at: ctx.now().getTime() });
  return queue;
}

/** Sets one flavor/resource quota of a queue, leaving the others as they are. */
export async function setQuota(
  ctx: ServiceContext,
  input: {
    queueId: string;
    flavor: string;
    resource: 'gpu' | 'cpu' | 'memory';
    nominal: number;
    borrowingLimit?: number | null;
    lendingLimit?: number | null;
  },
): Promise<Queue> {
  requirePlatformAdmin(ctx);
  const queue = await ctx.em.findOne(Queue, { id: input.queueId });
  if (!queue) throw notFound('Queue');
  const quotas: QuotaSpec = structuredClone(queue.quotas);
  quotas[input.flavor] = {
    ...(quotas[input.flavor] ?? {}),
    [input.resource]: {
      nominal: input.nominal,
      ...(input.borrowingLimit != null ? { borrowingLimit: input.borrowingLimit } : {}),
      ...(input.lendingLimit != null ? { lendingLimit: input.lendingLimit } : {}),
    },
  };
  return updateQueue(ctx, { id: queue.id, quotas }, 'queue.setQuota');
}

/** Tenant admins choose which of their queues a project's jobs go to by default. */
export async function setProjectQueue(
  ctx: ServiceContext,
  projectId: string,
  queueId: string | null,
): Promise<Project> {
  return auditedMutation(ctx, { action: 'project.setQueue', input: { projectId, queueId } }, async (em) => {
    const project = await em.findOne(Project, { id: projectId });
    if (!project) throw notFound('Project');
    requireProjectManager(ctx, project);
    if (queueId) {
      const queue = await em.findOne(Queue, { id: queueId });
      if (!queue || queue.tenant.id !== project.tenant.id) throw notFound('Queue');
    }
    project.defaultQueueId = queueId;
    await em.flush();
    return { result: project, tenantId: project.tenant.id, targetType: 'Project', targetId: project.id };
  });
}
