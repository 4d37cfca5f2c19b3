// Keeps each tenant's namespace and isolation objects (ResourceQuota, LimitRange,
// NetworkPolicy, ServiceAccount) as the tenant's settings say, by server-side apply; deletes
// the namespace of a tenant that is gone. An object is written again only when what Fairway
// wants of it changed (or after a restart), so a sync of unchanged tenants writes nothing; every
// `tenantRepairMs` the live objects are compared too, and those edited or deleted outside
// Fairway are applied again (force: Fairway's fields win, other managers' fields stay).
import type { KubernetesObject, V1Namespace } from '@kubernetes/client-node';
import { type BackendFlavor, BackendNotReadyError, type BackendTenant } from '../port.js';
import { type KubeClient, type ObjectRef, statusOf } from './client.js';
import { LABEL_TENANT_ID, MANAGED_BY, namespaceName } from './naming.js';
import { deviceUnits, type KubeObject, type KubeTenant, tenantObjects } from './objects.js';
import type { JobBuildContext } from './pod-spec.js';
import { BestEffortPriorityClass, TenantRefusedError } from './priority-class.js';
import type { FlavorMapping, KubernetesSettings } from './settings.js';
import { covers, liveTenantObjects, objectKey } from './tenant-drift.js';

export { TenantRefusedError };

const MANAGED_SELECTOR = Object.entries(MANAGED_BY)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');
/** How long a start waits for the first tenant sync before it fails (and the outbox retries it). */
const FIRST_SYNC_WAIT_MS = 10_000;

export class TenantReconciler {
  /** The tenants as last synced, with their device-unit ceilings (what a Job is built from). */
  private tenants = new Map<string, KubeTenant>();
  /** Tenants whose objects the API refused as invalid (or could not be built): their jobs fail instead of
   * waiting.
   */
  private refused = new Map<string, string>();
  /** Object key → the JSON last applied: unchanged objects are not written again. */
  private readonly applied = new Map<string, string>();
  /** Object key → what Fairway wants of it, for every synced tenant (what a repair compares with). */
  private desired = new Map<string, KubeObject>();
  private readonly priorityClass: BestEffortPriorityClass;
  private lastRepairAt = Number.NEGATIVE_INFINITY;
  /** Syncs and repairs take turns: a repair never applies what a concurrent sync is replacing. */
  private turn: Promise<unknown> = Promise.resolve();
  private synced = false;
  private readonly syncWaiters: (() => void)[] = [];

  /** Flavor name → its mapping to node resources (from the settings, which do not change). */
  readonly flavorMappings: Map<string, FlavorMapping>;

  constructor(
    private readonly client: KubeClient,
    private readonly settings: KubernetesSettings,
    private readonly log: (message: string) => void,
    private readonly now: () => number = Date.now,
  ) {
    this.flavorMappings = new Map(settings.flavors.map((f) => [f.flavor, f]));
    this.priorityClass = new BestEffortPriorityClass(client, settings, log);
  }

  /** The tenant as last synced; waits (boundedly) for the first sync after a start. */
  async tenant(id: string): Promise<KubeTenant> {
    if (!this.synced) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, FIRST_SYNC_WAIT_MS);
        timer.unref();
        this.syncWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    const refused = this.refused.get(id);
    if (refused) throw new TenantRefusedError(refused);
    const tenant = this.tenants.get(id);
    if (!tenant)
      throw new BackendNotReadyError(
        `tenant ${id} has no namespace yet (the tenant sync has not included it); the start is retried`,
      );
    // Only best-effort pods name the class: a problem with it is theirs alone.
    if (tenant.isolationLevel === 'BEST_EFFORT') this.priorityClass.admit();
    return tenant;
  }

  /**
   * Where and with what a job of this tenant is built: its namespace, the flavors and the node pools;
   * a tenant the cluster refuses is `{ refused }` (the job fails with it), one not synced yet throws.
   */
  async buildContext(
    tenantId: string,
    nodePools: Map<string, string>,
  ): Promise<JobBuildContext | { refused: string }> {
    let tenant: KubeTenant;
    try {
      tenant = await this.tenant(tenantId);
    } catch (error) {
      if (error instanceof TenantRefusedError) return { refused: error.message };
      throw error;
    }
    const namespace = namespaceName(this.settings, tenant.slug);
    return { namespace, tenant, flavors: this.flavorMappings, nodePools, flavorSpecs: this.flavorSpecs };
  }

  /** Flavor kinds from the last sync: how a flavor's quota units become device units (for Jobs too). */
  flavorSpecs = new Map<string, { kind: BackendFlavor['kind']; slicesPerGpu?: number }>();

  /** Flavor limits → Kubernetes resource counts (flavors sharing a resource add up). */
  private kubeTenant(t: BackendTenant): KubeTenant {
    // Every resource Fairway maps gets a ceiling, 0 when the tenant has no quota of it.
    const maxResources: Record<string, number> = Object.fromEntries(
      this.settings.flavors.map((f) => [f.resource, 0]),
    );
    for (const [flavor, gpus] of Object.entries(t.maxGpus)) {
      const mapping = this.flavorMappings.get(flavor);
      if (!mapping || !(gpus > 0)) continue;
      maxResources[mapping.resource] =
        (maxResources[mapping.resource] ?? 0) +
        Math.ceil(deviceUnits(gpus, mapping, this.flavorSpecs.get(flavor)) - 1e-9);
    }
    return {
      id: t.id,
      slug: t.slug,
      isolationLevel: t.isolationLevel,
      egressAllowlist: t.egressAllowlist,
      maxResources,
    };
  }

  sync(tenants: BackendTenant[], flavors: BackendFlavor[]): Promise<void> {
    return this.inTurn(() => this.syncNow(tenants, flavors));
  }

  /**
   * Compares every synced tenant's objects (and the best-effort PriorityClass) with the cluster
   * and applies again what was edited or deleted outside Fairway: five lists and a read, and no
   * write when nothing changed. Runs by itself at a sync every `tenantRepairMs`; returns how many
   * objects were applied.
   */
  repair(): Promise<number> {
    return this.inTurn(async () => {
      const transient = await this.priorityClass.ensure(true);
      const repaired = await this.repairNow();
      if (transient) throw transient;
      return repaired;
    });
  }

  private inTurn<T>(work: () => Promise<T>): Promise<T> {
    const run = this.turn.then(work, work);
    this.turn = run.catch(() => undefined);
    return run;
  }

  private async syncNow(tenants: BackendTenant[], flavors: BackendFlavor[]): Promise<void> {
    this.flavorSpecs = new Map(flavors.map((f) => [f.name, { kind: f.kind, slicesPerGpu: f.slicesPerGpu }]));
    const repairing = this.now() - this.lastRepairAt >= this.settings.tenantRepairMs;
    // A problem with the class is reported to best-effort tenants' jobs (tenant()), never thrown here.
    let transient: unknown = await this.priorityClass.ensure(repairing);
    // One tenant whose objects cannot be made or are refused as invalid must not keep the
    // others from their namespaces; a transient failure is thrown after all were tried.
    const refused = new Map<string, string>();
    const synced = new Map<string, KubeTenant>();
    const desired = new Map<string, KubeObject>();
    for (const tenant of tenants) {
      let objects: KubeObject[];
      try {
        const kube = this.kubeTenant(tenant);
        objects = tenantObjects(kube, this.settings);
        synced.set(tenant.id, kube);
      } catch (error) {
        refused.set(
          tenant.id,
          `its namespace objects cannot be made: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`,
        );
        this.log(`tenant ${tenant.slug}: ${refused.get(tenant.id)}`);
        continue;
      }
      try {
        for (const object of objects) await this.applyIfChanged(object);
        for (const object of objects) desired.set(objectKey(object), object);
      } catch (error) {
        const status = statusOf(error);
        if (status === 400 || status === 422) {
          synced.delete(tenant.id);
          refused.set(tenant.id, `the Kubernetes API refused its namespace objects (${status})`);
          this.log(
            `tenant ${tenant.slug}: ${refused.get(tenant.id)}: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`,
          );
        } else {
          transient ??= error;
          // Still this tenant's: a repair applies what this sync could not.
          for (const object of objects) desired.set(objectKey(object), object);
        }
      }
    }
    this.refused = refused;
    this.tenants = synced;
    this.desired = desired;
    const current = new Set(tenants.map((t) => t.id));
    if (!this.synced) {
      this.synced = true;
      for (const resolve of this.syncWaiters.splice(0)) resolve();
    }
    // A namespace Fairway made for a tenant that is no longer there: deleting it removes everything in it.
    const namespaces = await this.client.list<V1Namespace>('v1', 'Namespace', MANAGED_SELECTOR);
    for (const ns of namespaces) {
      const tenantId = ns.metadata?.labels?.[LABEL_TENANT_ID];
      if (!tenantId || current.has(tenantId) || ns.status?.phase === 'Terminating') continue;
      const name = ns.metadata!.name!;
      await this.client.deleteIfPresent({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      for (const key of [...this.applied.keys()])
        if (key.startsWith(`${name}/`) || key === `/Namespace/${name}`) this.applied.delete(key);
      this.log(`removed namespace ${name}: its tenant is gone`);
    }
    if (repairing) await this.repairNow().catch((error: unknown) => (transient ??= error));
    if (transient) throw transient;
  }

  private async repairNow(): Promise<number> {
    this.lastRepairAt = this.now();
    const live = await liveTenantObjects(this.client, MANAGED_SELECTOR);
    let repaired = 0;
    let failure: unknown = null;
    // Namespaces come first in `desired` (tenantObjects' order), so a deleted one exists again
    // before its objects are applied in it.
    const gone = new Set<string>();
    for (const [key, object] of this.desired) {
      const namespace = object.metadata.namespace;
      if (namespace && gone.has(namespace)) continue;
      const current = live.get(key);
      if (object.kind === 'Namespace' && terminating(current)) {
        // Its objects cannot be made until it is gone; the repair after that makes it again.
        gone.add(object.metadata.name);
        continue;
      }
      if (current && covers(current, object)) {
        this.applied.set(key, JSON.stringify(object));
        continue;
      }
      try {
        await this.client.apply(object as ObjectRef);
        this.applied.set(key, JSON.stringify(object));
        repaired++;
        this.log(
          `repaired ${object.kind} ${namespace ? `${namespace}/` : ''}${object.metadata.name}: ${current ? 'edited' : 'missing'} outside Fairway`,
        );
      } catch (error) {
        failure ??= error;
        if (object.kind === 'Namespace') gone.add(object.metadata.name);
      }
    }
    if (failure) throw failure;
    return repaired;
  }

  private async applyIfChanged(object: KubeObject): Promise<void> {
    const key = objectKey(object);
    const json = JSON.stringify(object);
    if (this.applied.get(key) === json) return;
    await this.client.apply(object as ObjectRef);
    this.applied.set(key, json);
  }
}

function terminating(ns: KubernetesObject | undefined): boolean {
  return (ns as V1Namespace | undefined)?.status?.phase === 'Terminating';
}
