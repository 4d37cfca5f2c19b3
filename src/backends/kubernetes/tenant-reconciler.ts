// Keeps each tenant's namespace and isolation objects (ResourceQuota, LimitRange,
// NetworkPolicy, ServiceAccount) as the tenant's settings say, by server-side apply; deletes
// the namespace of a tenant that is gone. An object is written again only when what Fairway
// wants of it changed (or after a restart), so a sync of unchanged tenants writes nothing.
import type { V1Namespace } from '@kubernetes/client-node';
import type { BackendFlavor, BackendTenant } from '../port.js';
import { type KubeClient, type ObjectRef, statusOf } from './client.js';
import { LABEL_TENANT_ID, MANAGED_BY } from './naming.js';
import { bestEffortPriorityClass, deviceUnits, type KubeTenant, tenantObjects } from './objects.js';
import type { FlavorMapping, KubernetesSettings } from './settings.js';

/** A tenant whose namespace cannot be made: its jobs cannot run here. */
export class TenantRefusedError extends Error {}

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
  private synced = false;
  private readonly syncWaiters: (() => void)[] = [];

  /** Flavor name → its mapping to node resources (from the settings, which do not change). */
  readonly flavorMappings: Map<string, FlavorMapping>;

  constructor(
    private readonly client: KubeClient,
    private readonly settings: KubernetesSettings,
    private readonly log: (message: string) => void,
  ) {
    this.flavorMappings = new Map(settings.flavors.map((f) => [f.flavor, f]));
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
      throw new Error(
        `tenant ${id} has no namespace yet (the tenant sync has not included it); the start is retried`,
      );
    return tenant;
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

  async sync(tenants: BackendTenant[], flavors: BackendFlavor[]): Promise<void> {
    this.flavorSpecs = new Map(flavors.map((f) => [f.name, { kind: f.kind, slicesPerGpu: f.slicesPerGpu }]));
    await this.applyIfChanged(bestEffortPriorityClass(this.settings));
    // One tenant whose objects cannot be made or are refused as invalid must not keep the
    // others from their namespaces; a transient failure is thrown after all were tried.
    const refused = new Map<string, string>();
    const synced = new Map<string, KubeTenant>();
    let transient: unknown = null;
    for (const tenant of tenants) {
      let objects;
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
      } catch (error) {
        const status = statusOf(error);
        if (status === 400 || status === 422) {
          synced.delete(tenant.id);
          refused.set(tenant.id, `the Kubernetes API refused its namespace objects (${status})`);
          this.log(
            `tenant ${tenant.slug}: ${refused.get(tenant.id)}: ${error instanceof Error ? error.message.slice(0, 300) : String(error)}`,
          );
        } else transient ??= error;
      }
    }
    this.refused = refused;
    this.tenants = synced;
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
    if (transient) throw transient;
  }

  private async applyIfChanged(object: {
    apiVersion?: string;
    kind?: string;
    metadata?: { name?: string; namespace?: string };
  }): Promise<void> {
    const key = `${object.metadata?.namespace ?? ''}/${object.kind}/${object.metadata?.name}`;
    const json = JSON.stringify(object);
    if (this.applied.get(key) === json) return;
    await this.client.apply(object as ObjectRef);
    this.applied.set(key, json);
  }
}
