// The Kubernetes execution backend: one batch/v1 Job per pod set of an admitted Fairway job,
// in the tenant's namespace, suspended on preemption and resumed on readmission, deleted on
// cancel; informers on Jobs, Pods and Nodes turn what the cluster does back into Fairway's
// events and inventory. Shaped after Kueue's contract with Jobs (see ../README.md).
import {
  BatchV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1Job,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import type {
  BackendEvent,
  BackendFlavor,
  BackendJob,
  BackendNode,
  BackendTenant,
  ExecutionBackend,
} from '../port.js';
import { type PodOwner, PrometheusProbes, podOfName } from '../prometheus/index.js';
import {
  apiMessage,
  KubeClient,
  type KubeClientOptions,
  loadKubeConfig,
  ResilientInformer,
  statusOf,
} from './client.js';
import { inventoryOf } from './inventory.js';
import { ensureJob, finished, refOf, withWorkloadHash } from './job-updates.js';
import { ANNOTATION_ADMISSION, LABEL_JOB_ID, MANAGED_BY, namespaceName } from './naming.js';
import { jobObjects, type KubeTenant } from './objects.js';
import type { KubernetesSettings } from './settings.js';
import { notRunningMessage, observeRun, tenantSafeMessage } from './status.js';
import { TenantReconciler, TenantRefusedError } from './tenant-reconciler.js';

export interface KubernetesBackendOptions {
  kubeConfig: KubeConfig;
  settings: KubernetesSettings;
  now?: () => number;
  logError?: (error: unknown) => void;
  log?: (message: string) => void;
  /** How often every tracked job is evaluated again from the caches (missed events). Default 30 s. */
  resyncMs?: number;
  /** How often admitted jobs are checked against `notRunningAfterMs`. Default 5 s. */
  checkIntervalMs?: number;
  client?: KubeClientOptions;
  /** How the Prometheus probe source fetches (tests). Default: the global fetch. */
  fetch?: typeof fetch;
}

const MANAGED_SELECTOR = Object.entries(MANAGED_BY)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

/** One admitted run the backend answers for: its Kubernetes Jobs (one per pod set) of this admission. */
interface Tracked {
  job: BackendJob;
  admissionAt: string;
  namespace: string;
  names: string[];
  expectedPods: number;
  admittedAtMs: number;
  started: boolean;
  notRunningReported: boolean;
  /** A failure seen only on the Job so far: reported after a short wait for its pods' reasons. */
  failureSeenAt?: number;
}

/** Jobs and Pods are separate watches: a Job's Failed condition may arrive before its pod's OOMKilled. */
const POD_REASON_WAIT_MS = 1000;

const jobIdOf = (o: V1Job | V1Pod) => o.metadata?.labels?.[LABEL_JOB_ID];

export class KubernetesBackend implements ExecutionBackend {
  readonly name = 'kubernetes';
  readonly timeScale = 1;
  readonly client: KubeClient;
  private readonly settings: KubernetesSettings;
  private readonly now: () => number;
  private readonly logError: (error: unknown) => void;
  private readonly log: (message: string) => void;
  private readonly jobs: ResilientInformer<V1Job>;
  private readonly pods: ResilientInformer<V1Pod>;
  private readonly nodes: ResilientInformer<V1Node>;
  private readonly tenantReconciler: TenantReconciler;
  /** Fairway job id → its Kubernetes Jobs / Pods by name (maintained from the informers). */
  private readonly jobsById = new Map<string, Map<string, V1Job>>();
  private readonly podsById = new Map<string, Map<string, V1Pod>>();
  private readonly tracked = new Map<string, Tracked>();
  private readonly listeners = new Set<(event: BackendEvent) => void>();
  private readonly inventoryListeners = new Set<(nodes: BackendNode[]) => void>();
  private nodePools = new Map<string, string>();
  private lastInventory = '';
  private readonly ignoredSaid = new Set<string>();
  private inventoryTimer: NodeJS.Timeout | null = null;
  private readonly timers: NodeJS.Timeout[] = [];
  private started: Promise<void> | null = null;
  private closed = false;
  /** Reads running jobs' GPU utilization from Prometheus when the leader asks; absent without a Prometheus
   * URL.
   */
  readonly pollUtilization?: () => Promise<void>;

  constructor(options: KubernetesBackendOptions) {
    this.settings = options.settings;
    this.now = options.now ?? Date.now;
    this.logError = options.logError ?? ((error) => console.error('[fairway] kubernetes backend:', error));
    this.log = options.log ?? ((message) => console.log(`[fairway] kubernetes: ${message}`));
    const kc = options.kubeConfig;
    this.client = new KubeClient(kc, { requestTimeoutMs: this.settings.requestTimeoutMs, ...options.client });
    const watchTimings = {
      listTimeoutMs: this.settings.requestTimeoutMs,
      restartEveryMs: this.settings.watchRestartMs,
    };
    this.tenantReconciler = new TenantReconciler(this.client, this.settings, this.log);
    const batch = kc.makeApiClient(BatchV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    const health = (what: string) => (healthy: boolean, error?: unknown) => {
      if (healthy) this.log(`watching ${what} again`);
      else
        this.log(
          `lost the watch on ${what} (${error instanceof Error ? error.message : String(error)}); retrying with backoff`,
        );
    };
    this.jobs = new ResilientInformer<V1Job>(kc, {
      path: '/apis/batch/v1/jobs',
      list: () => batch.listJobForAllNamespaces({ labelSelector: MANAGED_SELECTOR }),
      labelSelector: MANAGED_SELECTOR,
      onChange: (j) => this.indexed(this.jobsById, j, false),
      onDelete: (j) => this.indexed(this.jobsById, j, true),
      onHealth: health('jobs'),
      ...watchTimings,
    });
    this.pods = new ResilientInformer<V1Pod>(kc, {
      path: '/api/v1/pods',
      list: () => core.listPodForAllNamespaces({ labelSelector: MANAGED_SELECTOR }),
      labelSelector: MANAGED_SELECTOR,
      onChange: (p) => this.indexed(this.podsById, p, false),
      onDelete: (p) => this.indexed(this.podsById, p, true),
      onHealth: health('pods'),
      ...watchTimings,
    });
    this.nodes = new ResilientInformer<V1Node>(kc, {
      path: '/api/v1/nodes',
      list: () => core.listNode(),
      onChange: () => this.inventoryChanged(),
      onDelete: () => this.inventoryChanged(),
      onHealth: health('nodes'),
      ...watchTimings,
    });
    const resync = setInterval(() => this.evaluateAll(), options.resyncMs ?? 30_000);
    const check = setInterval(() => this.checkNotRunning(), options.checkIntervalMs ?? 5000);
    for (const t of [resync, check]) t.unref();
    this.timers.push(resync, check);
    const { prometheusUrl } = this.settings.probes ?? {};
    if (prometheusUrl) {
      const probes = new PrometheusProbes(
        { ...this.settings.probes, prometheusUrl },
        {
          namespacePrefix: this.settings.namespacePrefix,
          owner: (namespace, pod) => this.podOwner(namespace, pod),
          emit: (event) => !this.closed && this.emit(event),
          now: this.now,
          log: this.log,
          fetch: options.fetch,
        },
      );
      this.pollUtilization = async () => void (this.closed ? 0 : await probes.poll());
    }
  }

  /**
   * The running job a pod belongs to, by its name (naming.ts) — and only when the pod is in the
   * namespace of that job's tenant: a pod named after another tenant's job is never mapped to it.
   */
  private podOwner(namespace: string, pod: string): PodOwner {
    const named = podOfName(pod);
    const t = named && this.tracked.get(named.jobId);
    if (!named || !t?.started || t.namespace !== namespace) return null;
    const podSet = t.job.podSets[named.podSet];
    return podSet ? { jobId: named.jobId, gpus: podSet.perPod.gpu ?? 0 } : null;
  }

  static fromKubeconfig(
    path: string | undefined,
    options: Omit<KubernetesBackendOptions, 'kubeConfig'>,
  ): KubernetesBackend {
    return new KubernetesBackend({ ...options, kubeConfig: loadKubeConfig({ kubeconfigPath: path }) });
  }

  /** Lists and watches Jobs, Pods and Nodes; resolves once the three caches are filled. Idempotent. */
  ready(): Promise<void> {
    this.started ??= Promise.all([this.jobs.start(), this.pods.start(), this.nodes.start()]).then(() =>
      this.inventoryChanged(0),
    );
    return this.started;
  }

  // ─── the port ───

  async start(job: BackendJob): Promise<void> {
    this.assertOpen();
    await this.ready();
    let tenant: KubeTenant;
    try {
      tenant = await this.tenantReconciler.tenant(job.tenant);
    } catch (error) {
      if (error instanceof TenantRefusedError) return this.cannotRun(job, error.message);
      throw error;
    }
    const namespace = namespaceName(this.settings, tenant.slug);
    let built: V1Job[];
    try {
      const { flavorMappings: flavors, flavorSpecs } = this.tenantReconciler;
      built = jobObjects(
        job,
        { namespace, tenant, flavors, nodePools: this.nodePools, flavorSpecs },
        this.settings,
      ).map(withWorkloadHash);
    } catch (error) {
      // A job this cluster can never run (half a GPU where only whole ones exist, a flavor with
      // no mapping): it fails with the reason, rather than being retried for ever.
      return this.cannotRun(
        job,
        `cannot run on this Kubernetes cluster: ${error instanceof Error ? error.message : String(error)}`,
      );
    }
    const admissionAt = String(job.admission.at);
    const previous = this.tracked.get(job.jobId);
    const tracked: Tracked = {
      job,
      admissionAt,
      namespace,
      names: built.map((b) => b.metadata!.name!),
      expectedPods: built.reduce((n, b) => n + (b.spec?.parallelism ?? 1), 0),
      admittedAtMs: previous?.admissionAt === admissionAt ? previous.admittedAtMs : this.now(),
      started: previous?.admissionAt === admissionAt ? previous.started : false,
      notRunningReported: previous?.admissionAt === admissionAt ? previous.notRunningReported : false,
    };
    // Tracked before the writes, so a watch event that beats the create's answer is understood.
    this.tracked.set(job.jobId, tracked);
    try {
      for (const desired of built)
        await ensureJob(
          this.client,
          this.jobs.get(desired.metadata!.name!, desired.metadata!.namespace),
          desired,
          admissionAt,
        );
    } catch (error) {
      // Refused as invalid: retrying would be refused again and hold up every start behind it.
      const status = statusOf(error);
      if (status !== 400 && status !== 422) throw error;
      this.tracked.delete(job.jobId);
      return this.cannotRun(job, `the Kubernetes API refused its Job (${status}): ${apiMessage(error)}`);
    }
    setImmediate(() => this.evaluate(job.jobId));
  }

  /** Reports, asynchronously as every event, that the job failed before it could run. */
  private cannotRun(job: BackendJob, reason: string): void {
    this.log(`job ${job.jobId} ${reason}`);
    const message = tenantSafeMessage(reason, [job.jobId, job.tenant]);
    setImmediate(() => this.emit({ type: 'failed', jobId: job.jobId, at: this.now(), reason: message }));
  }

  async suspend(jobId: string, _reason: string): Promise<void> {
    this.assertOpen();
    await this.ready();
    const queue = this.tracked.get(jobId)?.job.queue;
    this.tracked.delete(jobId);
    const remove = queue !== undefined && this.settings.deleteOnPreemptQueues.includes(queue);
    for (const j of await this.jobsOf(jobId)) {
      if (finished(j)) continue;
      if (remove) await this.client.deleteIfPresent(refOf(j));
      else if (!j.spec?.suspend) await this.client.mergePatch(refOf(j), { spec: { suspend: true } });
    }
  }

  async cancel(jobId: string): Promise<void> {
    this.assertOpen();
    await this.ready();
    this.tracked.delete(jobId);
    for (const j of await this.jobsOf(jobId)) await this.client.deleteIfPresent(refOf(j));
  }

  onEvent(listener: (event: BackendEvent) => void): () => void {
    const wrapped = (event: BackendEvent) => listener(event);
    this.listeners.add(wrapped);
    return () => void this.listeners.delete(wrapped);
  }

  onInventory(listener: (nodes: BackendNode[]) => void): () => void {
    this.inventoryListeners.add(listener);
    if (this.lastInventory) setImmediate(() => listener(JSON.parse(this.lastInventory) as BackendNode[]));
    return () => void this.inventoryListeners.delete(listener);
  }

  async syncTenants(tenants: BackendTenant[], flavors: BackendFlavor[]): Promise<void> {
    this.assertOpen();
    await this.tenantReconciler.sync(tenants, flavors);
  }

  async running(): Promise<string[]> {
    await this.ready();
    const out: string[] = [];
    for (const [jobId, byName] of this.jobsById)
      if ([...byName.values()].some((j) => !j.spec?.suspend && !finished(j))) out.push(jobId);
    return out;
  }

  async reconcile(live: BackendJob[]): Promise<void> {
    this.assertOpen();
    await this.ready();
    const problems: unknown[] = [];
    // Live jobs first: adopts what exists for the same admission, resumes what is suspended,
    // creates what is missing. One that fails does not keep the others from being tracked.
    for (const job of live) await this.start(job).catch((error: unknown) => problems.push(error));
    const liveIds = new Set(live.map((j) => j.jobId));
    let orphans = 0;
    for (const [jobId, byName] of [...this.jobsById]) {
      if (liveIds.has(jobId)) continue;
      this.tracked.delete(jobId);
      // Finished Jobs of finished Fairway jobs stay for their TTL (logs); anything else is an orphan.
      for (const j of byName.values()) {
        if (finished(j)) continue;
        try {
          await this.client.deleteIfPresent(refOf(j));
          orphans++;
        } catch (error) {
          problems.push(error);
        }
      }
    }
    if (orphans) this.log(`removed ${orphans} Job(s) of jobs Fairway no longer runs`);
    if (problems.length)
      throw new Error(
        `reconcile: ${problems.length} call(s) to the Kubernetes API failed (first: ${problems[0] instanceof Error ? problems[0].message : String(problems[0])})`,
      );
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    if (this.inventoryTimer) clearTimeout(this.inventoryTimer);
    this.listeners.clear();
    this.inventoryListeners.clear();
    await Promise.all([this.jobs.stop(), this.pods.stop(), this.nodes.stop()]);
  }

  // ─── internals ───

  private assertOpen(): void {
    if (this.closed) throw new Error('kubernetes backend is closed');
  }

  /** The Fairway job's Kubernetes Jobs: from the cache, or (not seen yet) from the API. */
  private async jobsOf(jobId: string): Promise<V1Job[]> {
    const cached = this.jobsById.get(jobId);
    if (cached?.size) return [...cached.values()];
    return this.client.list<V1Job>('batch/v1', 'Job', `${MANAGED_SELECTOR},${LABEL_JOB_ID}=${jobId}`);
  }

  private indexed<T extends V1Job | V1Pod>(
    index: Map<string, Map<string, T>>,
    object: T,
    deleted: boolean,
  ): void {
    const jobId = jobIdOf(object);
    const name = `${object.metadata?.namespace}/${object.metadata?.name}`;
    if (!jobId) return;
    let byName = index.get(jobId);
    if (deleted) {
      byName?.delete(name);
      if (byName && byName.size === 0) index.delete(jobId);
    } else {
      if (!byName) index.set(jobId, (byName = new Map()));
      byName.set(name, object);
    }
    if (this.tracked.has(jobId)) this.evaluate(jobId);
  }

  private evaluateAll(): void {
    for (const jobId of [...this.tracked.keys()]) this.evaluate(jobId);
  }

  /** Compares what the cluster shows for the tracked run with what was reported, and reports the difference.
   *
   */
  private evaluate(jobId: string): void {
    const t = this.tracked.get(jobId);
    if (!t || this.closed) return;
    const current = (o: V1Job | V1Pod) => o.metadata?.annotations?.[ANNOTATION_ADMISSION] === t.admissionAt;
    const jobs = [...(this.jobsById.get(jobId)?.values() ?? [])].filter(
      (j) => current(j) && !j.spec?.suspend,
    );
    if (jobs.length < t.names.length) return;
    const pods = [...(this.podsById.get(jobId)?.values() ?? [])].filter(current);
    const seen = observeRun(jobs, pods, t.expectedPods);
    const at = this.now();
    if (seen.kind === 'running' && !t.started) {
      t.started = true;
      this.emit({ type: 'started', jobId, at });
    } else if (seen.kind === 'succeeded' || seen.kind === 'failed') {
      if (seen.kind === 'failed' && seen.reason.startsWith('BackoffLimitExceeded')) {
        t.failureSeenAt ??= at;
        if (at - t.failureSeenAt < POD_REASON_WAIT_MS) {
          setTimeout(() => this.evaluate(jobId), POD_REASON_WAIT_MS).unref();
          return;
        }
      }
      this.tracked.delete(jobId);
      if (seen.kind === 'succeeded') this.emit({ type: 'succeeded', jobId, at });
      else {
        this.emit({
          type: 'failed',
          jobId,
          at,
          reason: tenantSafeMessage(seen.reason, [jobId, t.job.tenant]),
        });
        // A Job whose pods cannot start (an image that does not pull) would hold its GPUs forever.
        for (const j of jobs)
          if (!finished(j))
            void this.client.mergePatch(refOf(j), { spec: { suspend: true } }).catch(this.logError);
      }
    }
  }

  private checkNotRunning(): void {
    const now = this.now();
    for (const [jobId, t] of this.tracked) {
      if (t.started || t.notRunningReported || now - t.admittedAtMs < this.settings.notRunningAfterMs)
        continue;
      t.notRunningReported = true;
      const pods = [...(this.podsById.get(jobId)?.values() ?? [])].filter(
        (p) => p.metadata?.annotations?.[ANNOTATION_ADMISSION] === t.admissionAt,
      );
      this.emit({
        type: 'not-running',
        jobId,
        at: now,
        message: tenantSafeMessage(notRunningMessage(pods, t.expectedPods), [jobId, t.job.tenant]),
      });
    }
  }

  private inventoryChanged(delayMs = 100): void {
    if (this.inventoryTimer || this.closed) return;
    this.inventoryTimer = setTimeout(() => {
      this.inventoryTimer = null;
      const { nodes, ignored } = inventoryOf([...this.nodes.list()], this.settings);
      for (const { name, why } of ignored) {
        // Said once per node and reason: an operator's mapping mistake, not news every 100 ms.
        if (!this.ignoredSaid.has(`${name}\u0000${why}`)) this.log(`node ${name} is not used: ${why}`);
        this.ignoredSaid.add(`${name}\u0000${why}`);
      }
      this.nodePools = new Map(nodes.map((n) => [n.name, n.pool]));
      const inventory: BackendNode[] = nodes.map(({ gpuProduct: _product, ...node }) => node);
      const serialized = JSON.stringify(inventory);
      if (serialized === this.lastInventory) return;
      this.lastInventory = serialized;
      for (const listener of [...this.inventoryListeners]) listener(inventory);
    }, delayMs);
    this.inventoryTimer.unref();
  }

  private emit(event: BackendEvent): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(event);
      } catch (error) {
        this.logError(error);
      }
    }
  }
}
