import type { EntityManager, MikroORM } from '@mikro-orm/core';
import type { BackendFlavor, BackendNode, BackendTenant, ExecutionBackend } from '../../backends/port.js';
import type { EventBus, SchedulerInput } from '../../events/index.js';
import { ClusterNode, Flavor, NodePool, Queue } from '../../persistence/cluster/index.js';
import { Job } from '../../persistence/jobs/index.js';
import { Tenant } from '../../persistence/tenancy/index.js';
import { systemEntityManager } from '../../persistence/tenant-filter.js';
import { listenTo } from './service-helpers.js';

export interface BackendSyncOptions {
  orm: MikroORM;
  backend: ExecutionBackend;
  events: EventBus;
  /** Whether this replica leads the scheduler: only the leader writes the inventory. */
  isLeader: () => boolean;
  /** Tells the leader the configuration changed (nodes written): it rebuilds its core. */
  announce: (input: SchedulerInput) => void;
  logError: (error: unknown) => void;
  log: (message: string) => void;
  /** Tenants and the inventory are synced again this often (changes missed, leadership taken). Default 15 s.
   *
   */
  resyncMs?: number;
}

/**
 * Keeps a backend that discovers nodes and isolates tenants (Kubernetes) in step with the
 * database, both ways: the backend's node inventory becomes the scheduler's nodes (added,
 * cordoned, resized, removed once their jobs are gone), and every tenant's settings and
 * quota ceiling become the backend's per-tenant objects (archived tenants are removed).
 */
export class BackendSync {
  private latestInventory: BackendNode[] | null = null;
  private readonly warned = new Set<string>();
  private readonly unsubscribers: (() => void)[] = [];
  private timer: NodeJS.Timeout | null = null;
  /** Syncs run one at a time; a request during one runs once more after it. */
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(private readonly options: BackendSyncOptions) {}

  async start(): Promise<void> {
    const { backend, events, logError } = this.options;
    if (backend.onInventory)
      this.unsubscribers.push(
        backend.onInventory((nodes) => {
          this.latestInventory = nodes;
          this.request();
        }),
      );
    this.unsubscribers.push(
      listenTo(
        events,
        'scheduler-input',
        (input: SchedulerInput) => input.kind === 'config' && this.request(),
        logError,
      ),
    );
    await this.syncOnce().catch((error) => logError(error));
    this.timer = setInterval(() => this.request(), this.options.resyncMs ?? 15_000);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    for (const unsubscribe of this.unsubscribers) unsubscribe();
    await this.running?.catch(() => undefined);
  }

  /** Runs a sync now (after the one in progress, if any). */
  request(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.syncOnce().catch((error) => {
          // A database or API hiccup (or a race with another writer): try again soon, not at the next resync.
          this.options.logError(error);
          this.retrySoon();
        });
      } while (this.again && !this.stopped);
    })().finally(() => (this.running = null));
    return this.running;
  }

  private retryTimer: NodeJS.Timeout | null = null;

  private retrySoon(): void {
    if (this.retryTimer || this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.request();
    }, 1000);
    this.retryTimer.unref();
  }

  private async syncOnce(): Promise<void> {
    if (this.stopped) return;
    const em = systemEntityManager(this.options.orm);
    if (this.latestInventory && this.options.isLeader()) {
      const changed = await applyInventory(em, this.latestInventory, this.options.log, this.warned);
      if (changed) this.options.announce({ kind: 'config' });
    }
    if (this.options.backend.syncTenants) {
      const { tenants, flavors } = await backendTenants(em);
      await this.options.backend.syncTenants(tenants, flavors);
    }
  }
}

/**
 * Every current tenant with the most of each flavor its queues could ever hold (in the
 * flavor's quota units): nominal plus borrowing limit (no limit: the flavor's whole capacity)
 * as the queue's isolation level allows, capped at the flavor's capacity; and the flavors.
 */
export async function backendTenants(
  em: EntityManager,
): Promise<{ tenants: BackendTenant[]; flavors: BackendFlavor[] }> {
  const [tenants, queues, nodes, flavors] = await Promise.all([
    em.find(Tenant, { status: { $ne: 'ARCHIVED' } }, { orderBy: { id: 'asc' } }),
    em.find(Queue, {}),
    em.find(ClusterNode, {}, { populate: ['flavor'] }),
    em.find(Flavor, {}),
  ]);
  // Capacity in quota units: whole GPUs, or slices / shares for MIG and time-sliced flavors.
  const capacity = new Map<string, number>(flavors.map((f) => [f.name, 0]));
  for (const n of nodes)
    capacity.set(
      n.flavor.name,
      (capacity.get(n.flavor.name) ?? 0) +
        n.gpus * (n.flavor.kind === 'gpu' ? 1 : (n.flavor.slicesPerGpu ?? 1)),
    );
  const backendFlavors = flavors.map((f) => ({
    name: f.name,
    kind: f.kind,
    slicesPerGpu: f.slicesPerGpu ?? undefined,
  }));
  const withCeilings = tenants.map((tenant) => {
    const maxGpus: Record<string, number> = Object.fromEntries([...capacity.keys()].map((f) => [f, 0]));
    for (const queue of queues.filter((q) => q.tenant.id === tenant.id)) {
      for (const [flavor, limits] of Object.entries(queue.quotas)) {
        const gpu = limits.gpu;
        if (!gpu) continue;
        const cap = capacity.get(flavor) ?? 0;
        maxGpus[flavor] = Math.min(
          cap,
          (maxGpus[flavor] ?? 0) + mostOf(gpu, queue.isolationLevel ?? null, cap),
        );
      }
    }
    return {
      id: tenant.id,
      slug: tenant.slug,
      isolationLevel: tenant.isolationLevel,
      egressAllowlist: tenant.egressAllowlist ?? null,
      maxGpus,
    };
  });
  return { tenants: withCeilings, flavors: backendFlavors };
}

/** The most one queue may hold of a flavor: the isolation level is a knob over its limits
 * (core/quota-config.ts).
 */
function mostOf(
  gpu: { nominal: number; borrowingLimit?: number },
  isolation: string | null,
  capacity: number,
): number {
  if (isolation === 'DEDICATED' || isolation === 'GUARANTEED') return gpu.nominal; // no borrowing
  if (isolation === 'BEST_EFFORT') return gpu.borrowingLimit ?? capacity; // no nominal of its own
  return gpu.borrowingLimit === undefined ? capacity : gpu.nominal + gpu.borrowingLimit;
}

/**
 * Writes the backend's inventory as the scheduler's nodes. A node that is gone, or whose
 * capacity or flavor changed, while admitted jobs still hold it stays (unschedulable) until
 * they end: the core never loses track of GPUs it handed out. Returns whether anything changed.
 */
export async function applyInventory(
  em: EntityManager,
  inventory: BackendNode[],
  log: (message: string) => void,
  warned = new Set<string>(),
): Promise<boolean> {
  let changed = false;
  await em.transactional(async (tx) => {
    const [pools, flavors, stored, live] = await Promise.all([
      tx.find(NodePool, {}),
      tx.find(Flavor, {}),
      tx.find(ClusterNode, {}, { populate: ['pool', 'flavor'] }),
      tx.find(Job, { state: { $in: ['ADMITTED', 'RUNNING'] } }, { fields: ['id', 'admission'] }),
    ]);
    const busy = new Set<string>();
    for (const job of live)
      for (const ps of job.admission?.podSets ?? []) for (const p of ps.placements) busy.add(p.node);
    const poolByName = new Map(pools.map((p) => [p.name, p]));
    // A pool whose nodes are tainted for one tenant is that tenant's dedicated pool (if the tenant exists).
    const taintedFor = [
      ...new Set(inventory.map((n) => n.dedicatedTenant).filter((t): t is string => t !== null)),
    ];
    const knownTenants = new Set(
      taintedFor.length
        ? (await tx.find(Tenant, { id: { $in: taintedFor } }, { fields: ['id'] })).map((t) => t.id)
        : [],
    );
    const flavorByName = new Map(flavors.map((f) => [f.name, f]));
    const storedByName = new Map(stored.map((n) => [n.name, n]));
    const seen = new Set<string>();
    for (const node of inventory) {
      const flavor = flavorByName.get(node.flavor);
      if (!flavor) {
        // Said once per node and flavor: the sync runs every few seconds.
        const key = `${node.name}/${node.flavor}`;
        if (!warned.has(key))
          log(
            `node ${node.name} feeds flavor "${node.flavor}", which is not defined in Fairway: ignored until it is`,
          );
        warned.add(key);
        continue;
      }
      seen.add(node.name);
      const dedicatedTenant =
        node.dedicatedTenant && knownTenants.has(node.dedicatedTenant) ? node.dedicatedTenant : null;
      let pool = poolByName.get(node.pool);
      if (!pool) {
        pool = tx.create(NodePool, {
          name: node.pool,
          dedicatedTenant: dedicatedTenant ? tx.getReference(Tenant, dedicatedTenant) : null,
        });
        poolByName.set(node.pool, pool);
        changed = true;
      } else if (dedicatedTenant && !pool.dedicatedTenant) {
        pool.dedicatedTenant = tx.getReference(Tenant, dedicatedTenant);
        changed = true;
      }
      const current = storedByName.get(node.name);
      if (!current) {
        tx.create(ClusterNode, {
          name: node.name,
          pool,
          flavor,
          gpus: node.gpus,
          cpu: node.cpu,
          memory: node.memory,
          unschedulable: node.unschedulable,
        });
        changed = true;
        continue;
      }
      const reshaped =
        current.flavor.id !== flavor.id || current.gpus !== node.gpus || current.pool.id !== pool.id;
      if (reshaped && busy.has(node.name)) {
        // The core cannot move GPUs it handed out: keep the old shape, place nothing new, apply later.
        if (!current.unschedulable) {
          current.unschedulable = true;
          changed = true;
        }
        continue;
      }
      if (
        reshaped ||
        current.cpu !== node.cpu ||
        current.memory !== node.memory ||
        current.unschedulable !== node.unschedulable
      ) {
        Object.assign(current, {
          pool,
          flavor,
          gpus: node.gpus,
          cpu: node.cpu,
          memory: node.memory,
          unschedulable: node.unschedulable,
        });
        changed = true;
      }
    }
    for (const node of stored) {
      if (seen.has(node.name)) continue;
      if (busy.has(node.name)) {
        if (!node.unschedulable) {
          node.unschedulable = true;
          changed = true;
        }
      } else {
        tx.remove(node);
        log(`node ${node.name} left the cluster: removed from the scheduler's nodes`);
        changed = true;
      }
    }
  });
  return changed;
}
