// Changing and deleting flavors, node pools and cohorts (platform admins, audited). Like the
// creates in cluster.ts, a change is tried on a scratch core before it is written, and once it is
// committed (a 'config' input) the leader's core and followers' read models take it: in place when
// it only alters queue and cohort specs, else rebuilt from the database (scheduling/config-reload.ts). A delete
// of something in use, or a change that would pull capacity from under running work, is a
// CONFLICT naming what uses it, with nothing written.
import type { QuotaSpec } from '../../core/scheduling/index.js';
import { ClusterNode, Cohort, Flavor, NodePool, Queue } from '../../persistence/cluster/index.js';
import { FlavorPrice } from '../../persistence/metering/index.js';
import { Tenant } from '../../persistence/tenancy/index.js';
import { badInput, conflict, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import { requirePlatformAdmin, type ServiceContext } from '../context.js';
import { schedulerInputError } from '../errors.js';
import { addFlavorPriceVersion } from '../metering/index.js';
import { cohortSpec, flavorSpec, nodeSpec } from '../scheduling/index.js';
import type { CreateFlavorInput, NodeInput } from './cluster.js';
import { cohortUses, flavorUses, jobsOnNodes, names, nodePoolUses, refuseInUse } from './in-use.js';

/** Fields left out (undefined) stay as they are; null clears a nullable one. */
export interface UpdateFlavorInput {
  id: string;
  kind?: CreateFlavorInput['kind'] | null;
  gpuModel?: string | null;
  slicesPerGpu?: number | null;
  /** A new price-book version, from `priceEffectiveFrom` (default now, never in the past). */
  pricePerUnitHour?: number | null;
  priceEffectiveFrom?: Date | null;
}
export interface UpdateNodePoolInput {
  id: string;
  /** null: shared by every tenant. */
  dedicatedTenantId?: string | null;
  /** The pool's whole node list: nodes not in it are removed, new ones added, the others changed. */
  nodes?: NodeInput[] | null;
}
export interface UpdateCohortInput {
  id: string;
  /** null: a root cohort. */
  parentId?: string | null;
  quotas?: QuotaSpec | null;
}

type Core = Awaited<ReturnType<ServiceContext['scheduler']['configSnapshot']>>;

function check(core: Core, change: (core: Core) => void) {
  try {
    change(core);
  } catch (error) {
    schedulerInputError(error);
  }
}

/** Announced after commit: the leader and followers take it (in place, or rebuilt from the database). */
function configChanged(ctx: ServiceContext): void {
  ctx.scheduler.announce({ kind: 'config' });
}

export async function updateFlavor(ctx: ServiceContext, input: UpdateFlavorInput): Promise<Flavor> {
  const core = await ctx.scheduler.configSnapshot();
  const flavor = await auditedMutation(ctx, { action: 'flavor.update', input: { ...input } }, async (em) => {
    requirePlatformAdmin(ctx);
    const found = await em.findOne(Flavor, { id: input.id });
    if (!found) throw notFound('Flavor');
    if (input.priceEffectiveFrom != null && input.pricePerUnitHour == null)
      throw badInput('priceEffectiveFrom needs pricePerUnitHour: it says when that price takes effect.');
    const kind = input.kind ?? found.kind;
    const slicesPerGpu =
      input.slicesPerGpu !== undefined ? input.slicesPerGpu : kind === 'gpu' ? null : found.slicesPerGpu;
    if (kind !== 'gpu' && slicesPerGpu == null) throw badInput(`A ${kind} flavor needs slicesPerGpu.`);
    if (kind !== found.kind || (slicesPerGpu ?? null) !== (found.slicesPerGpu ?? null))
      // Quotas, nodes and admissions count in the flavor's units: those only change while nothing counts in them.
      refuseInUse(
        `Flavor "${found.name}"`,
        await flavorUses(em, found),
        'Its kind and slicesPerGpu change only while nothing uses it: create a flavor under a new name instead.',
      );
    found.kind = kind;
    found.slicesPerGpu = slicesPerGpu ?? null;
    if (input.gpuModel !== undefined) found.gpuModel = input.gpuModel ?? null;
    if (input.pricePerUnitHour != null)
      addFlavorPriceVersion(ctx, em, {
        flavor: found.name,
        pricePerUnitHour: input.pricePerUnitHour,
        effectiveFrom: input.priceEffectiveFrom ?? null,
      });
    check(core, (core) => core.upsertFlavor(flavorSpec(found)));
    await em.flush();
    return { result: found, tenantId: null, targetType: 'Flavor', targetId: found.id };
  });
  configChanged(ctx);
  return flavor;
}

export async function deleteFlavor(ctx: ServiceContext, id: string): Promise<string> {
  const deleted = await auditedMutation(ctx, { action: 'flavor.delete', input: { id } }, async (em) => {
    requirePlatformAdmin(ctx);
    const found = await em.findOne(Flavor, { id });
    if (!found) throw notFound('Flavor');
    refuseInUse(
      `Flavor "${found.name}"`,
      await flavorUses(em, found),
      'Remove those nodes and quotas, and let its jobs end, first.',
    );
    // Costs already charged are in the ledger; its price versions go with it (a new flavor of that name starts
    // afresh).
    await em.nativeDelete(FlavorPrice, { flavor: found.name });
    em.remove(found);
    await em.flush();
    return { result: found.id, tenantId: null, targetType: 'Flavor', targetId: found.id };
  });
  configChanged(ctx);
  return deleted;
}

export async function updateNodePool(ctx: ServiceContext, input: UpdateNodePoolInput): Promise<NodePool> {
  const core = await ctx.scheduler.configSnapshot();
  const pool = await auditedMutation(ctx, { action: 'nodePool.update', input: { ...input } }, async (em) => {
    requirePlatformAdmin(ctx);
    const found = await em.findOne(NodePool, { id: input.id });
    if (!found) throw notFound('NodePool');
    if (input.dedicatedTenantId !== undefined) {
      const tenant = input.dedicatedTenantId
        ? await em.findOne(Tenant, { id: input.dedicatedTenantId })
        : null;
      if (input.dedicatedTenantId && !tenant) throw notFound('Tenant');
      found.dedicatedTenant = tenant;
    }
    const current = await em.find(ClusterNode, { pool: found.id }, { populate: ['flavor'] });
    let nodes = current;
    if (input.nodes) {
      const wanted = new Map(input.nodes.map((n) => [n.name, n]));
      if (wanted.size !== input.nodes.length) throw badInput('Node names must be unique within the pool.');
      const mine = new Map(current.map((n) => [n.name, n]));
      const added = input.nodes.filter((n) => !mine.has(n.name));
      if (added.length) {
        const taken = await em.find(ClusterNode, { name: { $in: added.map((n) => n.name) } });
        if (taken.length)
          throw conflict(`Node ${names(taken.map((n) => n.name))} already belongs to another pool.`);
      }
      const flavors = new Map(
        (await em.find(Flavor, { name: { $in: input.nodes.map((n) => n.flavor) } })).map((f) => [f.name, f]),
      );
      for (const n of input.nodes)
        if (!flavors.has(n.flavor)) throw badInput(`Node ${n.name}: unknown flavor "${n.flavor}".`);
      const removed = current.filter((n) => !wanted.has(n.name));
      // A node's GPUs are handed out by flavor and index: those stay while jobs hold them (CPU and memory may
      // change).
      const reshaped = current.filter((n) => {
        const w = wanted.get(n.name);
        return w && (w.flavor !== n.flavor.name || w.gpus !== n.gpus);
      });
      const busy = await jobsOnNodes(
        em,
        [...removed, ...reshaped].map((n) => n.name),
      );
      refuseInUse(
        `Node pool "${found.name}"`,
        busy,
        'A node leaves, or changes its flavor or GPUs, only once no job runs there: wait for them to end or cancel them.',
      );
      for (const node of removed) em.remove(node);
      nodes = input.nodes.map((n) => {
        const node =
          mine.get(n.name) ??
          em.create(ClusterNode, {
            name: n.name,
            pool: found,
            flavor: flavors.get(n.flavor)!,
            gpus: n.gpus,
            cpu: n.cpu,
            memory: n.memory,
          });
        Object.assign(node, { flavor: flavors.get(n.flavor)!, gpus: n.gpus, cpu: n.cpu, memory: n.memory });
        return node;
      });
      check(core, (core) => {
        for (const node of removed) core.removeNode(node.name);
      });
    }
    check(core, (core) => {
      for (const node of nodes)
        core.upsertNode(nodeSpec(node, found.name, node.flavor.name, found.dedicatedTenant?.id ?? null));
    });
    await em.flush();
    return { result: found, tenantId: null, targetType: 'NodePool', targetId: found.id };
  });
  configChanged(ctx);
  return pool;
}

export async function deleteNodePool(ctx: ServiceContext, id: string): Promise<string> {
  const deleted = await auditedMutation(ctx, { action: 'nodePool.delete', input: { id } }, async (em) => {
    requirePlatformAdmin(ctx);
    const found = await em.findOne(NodePool, { id });
    if (!found) throw notFound('NodePool');
    const dedicatedBy = await em.find(Queue, { dedicatedPool: found.name });
    refuseInUse(
      `Node pool "${found.name}"`,
      [
        ...(await nodePoolUses(em, found)),
        ...(dedicatedBy.length
          ? [`queue ${names(dedicatedBy.map((q) => q.name))} run(s) on it as dedicated pool`]
          : []),
      ],
      'Empty it first (updateNodePool with nodes: []) and move those queues to another pool.',
    );
    em.remove(found);
    await em.flush();
    return { result: found.id, tenantId: null, targetType: 'NodePool', targetId: found.id };
  });
  configChanged(ctx);
  return deleted;
}

export async function updateCohort(ctx: ServiceContext, input: UpdateCohortInput): Promise<Cohort> {
  const core = await ctx.scheduler.configSnapshot();
  let queueIds: string[] = [];
  const cohort = await auditedMutation(ctx, { action: 'cohort.update', input: { ...input } }, async (em) => {
    requirePlatformAdmin(ctx);
    const found = await em.findOne(Cohort, { id: input.id }, { populate: ['parent'] });
    if (!found) throw notFound('Cohort');
    if (input.parentId !== undefined) {
      const parent = input.parentId ? await em.findOne(Cohort, { id: input.parentId }) : null;
      if (input.parentId && !parent) throw notFound('Cohort');
      found.parent = parent;
    }
    if (input.quotas != null) found.quotas = input.quotas;
    // The core refuses an unknown flavor in the quotas and a parent that would make a cycle.
    check(core, (core) => core.upsertCohort(cohortSpec(found, found.parent?.name ?? null)));
    queueIds = (await em.find(Queue, { cohort: found.id })).map((q) => q.id);
    await em.flush();
    return { result: found, tenantId: null, targetType: 'Cohort', targetId: found.id };
  });
  configChanged(ctx);
  // What the cohort's queues may borrow changed: their live views reload.
  for (const queueId of queueIds)
    ctx.events.publish('queue-updated', queueId, { queueId, at: ctx.now().getTime() });
  return cohort;
}

export async function deleteCohort(ctx: ServiceContext, id: string): Promise<string> {
  const deleted = await auditedMutation(ctx, { action: 'cohort.delete', input: { id } }, async (em) => {
    requirePlatformAdmin(ctx);
    const found = await em.findOne(Cohort, { id });
    if (!found) throw notFound('Cohort');
    refuseInUse(
      `Cohort "${found.name}"`,
      await cohortUses(em, found),
      'Move those queues (updateQueue cohortId) and cohorts (updateCohort parentId) elsewhere first.',
    );
    em.remove(found);
    await em.flush();
    return { result: found.id, tenantId: null, targetType: 'Cohort', targetId: found.id };
  });
  configChanged(ctx);
  return deleted;
}
