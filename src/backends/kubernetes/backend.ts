// The Kubernetes execution backend: one batch/v1 Job per pod set of an admitted Fairway job (or a
// workload controller's object, custom-runs.ts; an inference replica: a pod of its revision's
// Deployment, service-runs.ts), in the tenant's namespace, suspended on preemption and resumed on
// readmission, deleted on cancel; informers on Jobs, Pods and Nodes turn what the cluster does back
// into Fairway's events and inventory. Shaped after Kueue's contract with Jobs (see ../README.md).
import type {
  BackendEvent,
  BackendFlavor,
  BackendJob,
  BackendNode,
  BackendTenant,
  ExecutionBackend,
  ServiceLoadQuery,
  ServiceLoadReading,
  WorkloadRequest,
} from '../port.js';
import type { ProbeHealth } from '../prometheus/index.js';
import type { KubernetesBackendOptions } from './backend-options.js';
import { BatchReports } from './batch-reports.js';
import { batchRunObjects, writeBatchRun } from './batch-runs.js';
import { KubeClient, loadKubeConfig } from './client.js';
import { CustomRuns, workloadProblem } from './custom-runs.js';
import { GateReleaser } from './gate-releaser.js';
import { InventoryFeed } from './inventory-feed.js';
import { finished, refOf } from './job-updates.js';
import { ANNOTATION_ADMISSION, LABEL_SERVICE_ID } from './naming.js';
import { removeJobServices, removeOrphans } from './orphans.js';
import { KubeLogs } from './pod-logs.js';
import { probeSource } from './probe-source.js';
import { type TrackedRun, trackedRun } from './run-tracking.js';
import { ServiceRuns } from './service-runs.js';
import type { KubernetesSettings } from './settings.js';
import { tenantSafeMessage } from './status.js';
import { TenantReconciler } from './tenant-reconciler.js';
import { ClusterWatches } from './watches.js';

export type { KubernetesBackendOptions } from './backend-options.js';

export class KubernetesBackend implements ExecutionBackend {
  readonly name = 'kubernetes';
  readonly timeScale = 1;
  readonly stopGraceSeconds: number;
  readonly client: KubeClient;
  /** Job logs and cluster events (pod-logs.ts); archives the output of the runs it runs as their pods end. */
  readonly logs: KubeLogs;
  private readonly settings: KubernetesSettings;
  private readonly now: () => number;
  private readonly logError: (error: unknown) => void;
  private readonly log: (message: string) => void;
  private readonly watches: ClusterWatches;
  private readonly inventory: InventoryFeed;
  private readonly tenantReconciler: TenantReconciler;
  private readonly tracked = new Map<string, TrackedRun>();
  /** What the cluster does to the tracked batch runs, reported (batch-reports.ts). */
  private readonly batch: BatchReports;
  /** Jobs run by a workload controller's custom resource (JobSet, PyTorchJob, Ray). */
  private readonly custom: CustomRuns;
  /** Inference services' replicas: a Deployment (or LeaderWorkerSet) per revision and a Service. */
  private readonly services: ServiceRuns;
  /** Releases gated pods to their nodes (exactPlacement); absent without it. */
  private readonly gates?: GateReleaser;
  /** Suspended runs whose pods may still be stopping: job id → the admission they ran under. */
  private readonly stopping = new Map<string, string>();
  private readonly listeners = new Set<(event: BackendEvent) => void>();
  private readonly timers: NodeJS.Timeout[] = [];
  private started: Promise<void> | null = null;
  private closed = false;
  /** Reads running jobs' GPU utilization from Prometheus when the leader asks; absent without a Prometheus
   * URL.
   */
  readonly pollUtilization?: () => Promise<void>;
  /** The Prometheus probe source's health (port.ts probeHealth); absent without a Prometheus URL. */
  readonly probeHealth?: () => ProbeHealth;

  constructor(options: KubernetesBackendOptions) {
    this.settings = options.settings;
    this.stopGraceSeconds = options.settings.preemptionGraceSeconds;
    this.now = options.now ?? Date.now;
    this.logError = options.logError ?? ((error) => console.error('[fairway] kubernetes backend:', error));
    this.log = options.log ?? ((message) => console.log(`[fairway] kubernetes: ${message}`));
    const kc = options.kubeConfig;
    this.client = new KubeClient(kc, { requestTimeoutMs: this.settings.requestTimeoutMs, ...options.client });
    this.tenantReconciler = new TenantReconciler(this.client, this.settings, this.log);
    this.watches = new ClusterWatches(kc, this.client, this.settings, this.log, {
      onRunObject: (jobId) => {
        this.logs.changed(jobId);
        if (this.tracked.has(jobId)) this.batch.evaluate(jobId);
        if (this.custom.has(jobId)) this.custom.evaluate(jobId);
        this.gates?.release(jobId);
        if (this.stopping.has(jobId)) this.batch.checkStopped(jobId);
      },
      onNodes: () => this.inventory.changed(),
      onServicePod: () => this.services.changed(),
    });
    this.batch = new BatchReports({
      client: this.client,
      settings: this.settings,
      watches: this.watches,
      tracked: this.tracked,
      stopping: this.stopping,
      now: this.now,
      emit: (event) => this.emit(event),
      log: this.log,
      logError: this.logError,
      closed: () => this.closed,
    });
    if (this.settings.exactPlacement)
      this.gates = new GateReleaser({
        client: this.client,
        run: (jobId) => {
          const t = this.tracked.get(jobId);
          return t
            ? { jobId, admissionAt: t.admissionAt, admissions: t.job.admission.podSets }
            : this.custom.gatedRun(jobId);
        },
        pods: (jobId) => this.watches.podsOf(jobId),
        node: (name) => this.watches.nodes.get(name),
        unavailable: (jobId, reason) => this.batch.disrupted(jobId, reason),
        log: this.log,
        logError: this.logError,
        closed: () => this.closed,
      });
    // What every part that writes to the cluster or reports on its own timers is given.
    const parts = {
      client: this.client,
      settings: this.settings,
      emit: this.emitIfOpen,
      now: this.now,
      log: this.log,
      logError: this.logError,
    };
    this.services = new ServiceRuns({
      ...parts,
      pods: () => this.watches.podsByName.values(),
      node: (name) => this.watches.nodes.get(name),
      fetch: options.fetch,
      namespaceOf: (tenantId) => this.logs.namespaceOf(tenantId),
    });
    this.custom = new CustomRuns({ ...parts, pods: (jobId) => this.watches.podsOf(jobId) });
    this.logs = new KubeLogs({
      ...parts,
      kubeConfig: kc,
      options,
      pods: (jobId) => this.watches.podsById.get(jobId)?.values(),
      run: (jobId) => this.tracked.get(jobId) ?? this.custom.run(jobId) ?? this.services.run(jobId),
    });
    this.inventory = new InventoryFeed(() => this.watches.nodes.list(), this.settings, this.log);
    const resync = setInterval(() => this.evaluateAll(), options.resyncMs ?? 30_000);
    const check = setInterval(() => this.batch.checkNotRunning(), options.checkIntervalMs ?? 5000);
    for (const t of [resync, check]) t.unref();
    this.timers.push(resync, check);
    const probes = probeSource(this.settings, {
      runs: () => [...this.tracked, ...this.custom.probed()],
      run: (jobId) => this.tracked.get(jobId) ?? this.custom.probedRun(jobId),
      pod: (namespace, name) => this.watches.podsByName.get(`${namespace}/${name}`),
      emit: this.emitIfOpen,
      now: this.now,
      log: this.log,
      fetch: options.fetch,
    });
    if (probes) {
      this.pollUtilization = async () => void (this.closed ? 0 : await probes.poll());
      this.probeHealth = () => probes.health();
    }
  }

  static fromKubeconfig(
    path: string | undefined,
    options: Omit<KubernetesBackendOptions, 'kubeConfig'>,
  ): KubernetesBackend {
    return new KubernetesBackend({ ...options, kubeConfig: loadKubeConfig({ kubeconfigPath: path }) });
  }

  /** Lists and watches Jobs, Pods and Nodes; resolves once the three caches are filled. Idempotent. */
  ready(): Promise<void> {
    this.started ??= this.watches.start().then(() => this.inventory.changed(0));
    return this.started;
  }

  // ─── the port ───

  async start(job: BackendJob): Promise<void> {
    this.assertOpen();
    await this.ready();
    const ctx = await this.tenantReconciler.buildContext(job.tenant, this.inventory.pools);
    if ('refused' in ctx) return this.cannotRun(job, ctx.refused);
    const { namespace } = ctx;
    if (ServiceRuns.isReplica(job)) {
      const refused = await this.services.start(job, ctx);
      return refused ? this.cannotRun(job, refused) : undefined;
    }
    if (job.workloadKind && job.workloadKind !== 'BATCH') {
      const refused = await this.custom.startOrRefuse(job, ctx);
      return refused ? this.cannotRun(job, refused) : undefined;
    }
    const objects = batchRunObjects(job, ctx, this.settings);
    if ('cannotRun' in objects) return this.cannotRun(job, objects.cannotRun);
    const tracked = trackedRun(job, namespace, objects.jobs, this.tracked.get(job.jobId), this.now);
    // Tracked before the writes, so a watch event that beats the create's answer is understood.
    this.tracked.set(job.jobId, tracked);
    const existing = (name: string, ns: string | undefined) => this.watches.jobs.get(name, ns);
    const refused = await writeBatchRun(this.client, existing, objects, tracked.admissionAt);
    if (refused) {
      this.tracked.delete(job.jobId);
      return this.cannotRun(job, refused);
    }
    setImmediate(() => {
      this.batch.evaluate(job.jobId);
      // Pods that already exist (an adopted run after a restart) wait behind their gate for this.
      this.gates?.release(job.jobId);
    });
  }

  /** Why this cluster cannot run the workload as asked (port.ts workloadProblem), or null. */
  workloadProblem(request: WorkloadRequest): Promise<string | null> {
    return workloadProblem(this.client, request);
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
    if (this.isServiceReplica(jobId)) return this.services.suspend(jobId);
    const run = this.tracked.get(jobId);
    const queue = run?.job.queue;
    this.tracked.delete(jobId);
    const remove = queue !== undefined && this.settings.deleteOnPreemptQueues.includes(queue);
    const jobs = await this.watches.jobsOf(jobId);
    if (this.custom.has(jobId) || jobs.length === 0) {
      const customAdmission = await this.custom.suspend(jobId);
      if (customAdmission !== undefined) this.stopping.set(jobId, customAdmission);
    }
    // Its pods stop over their grace: said 'stopped' once they are gone (after a restart, the
    // admission is read off its Jobs).
    const admissionAt =
      run?.admissionAt ?? jobs.find((j) => !finished(j))?.metadata?.annotations?.[ANNOTATION_ADMISSION];
    if (admissionAt !== undefined) this.stopping.set(jobId, admissionAt);
    for (const j of jobs) {
      if (finished(j)) continue;
      if (remove) await this.client.deleteIfPresent(refOf(j));
      else if (!j.spec?.suspend) await this.client.mergePatch(refOf(j), { spec: { suspend: true } });
    }
    setImmediate(() => this.batch.checkStopped(jobId));
  }

  async cancel(jobId: string): Promise<void> {
    this.assertOpen();
    await this.ready();
    if (this.isServiceReplica(jobId)) return this.services.cancel(jobId);
    this.tracked.delete(jobId);
    const jobs = await this.watches.jobsOf(jobId);
    if (this.custom.has(jobId) || jobs.length === 0) await this.custom.cancel(jobId);
    for (const j of jobs) await this.client.deleteIfPresent(refOf(j));
    await removeJobServices(this.client, jobs);
  }

  onEvent(listener: (event: BackendEvent) => void): () => void {
    const wrapped = (event: BackendEvent) => listener(event);
    this.listeners.add(wrapped);
    return () => void this.listeners.delete(wrapped);
  }

  onInventory(listener: (nodes: BackendNode[]) => void): () => void {
    return this.inventory.subscribe(listener);
  }

  async syncTenants(tenants: BackendTenant[], flavors: BackendFlavor[]): Promise<void> {
    this.assertOpen();
    this.logs.syncTenants(tenants);
    await this.tenantReconciler.sync(tenants, flavors);
  }

  async running(): Promise<string[]> {
    await this.ready();
    const out: string[] = [];
    for (const [jobId, byName] of this.watches.jobsById)
      if ([...byName.values()].some((j) => !j.spec?.suspend && !finished(j))) out.push(jobId);
    return [...out, ...this.services.running()];
  }

  /** A service's replica load: the replicas serving as the cluster shows them (readiness). */
  async serviceLoad(query: ServiceLoadQuery): Promise<ServiceLoadReading | null> {
    await this.ready();
    return this.services.load(query);
  }

  /** A replica job this backend runs (or ran before a restart: its pods carry the service label). */
  private isServiceReplica(jobId: string): boolean {
    return (
      this.services.has(jobId) ||
      this.watches.podsOf(jobId).some((p) => p.metadata?.labels?.[LABEL_SERVICE_ID])
    );
  }

  async reconcile(live: BackendJob[]): Promise<void> {
    this.assertOpen();
    await this.ready();
    const problems: unknown[] = [];
    // Every live replica counted before any count is set (else the first one's count removes the others).
    for (const job of live.filter((j) => ServiceRuns.isReplica(j))) {
      const ctx = await this.tenantReconciler
        .buildContext(job.tenant, this.inventory.pools)
        .catch((error: unknown) => ({ refused: String(error) }));
      if (!('refused' in ctx)) this.services.expect([{ job, ctx }]);
    }
    // Live jobs first: adopts what exists for the same admission, resumes what is suspended,
    // creates what is missing. One that fails does not keep the others from being tracked.
    for (const job of live) await this.start(job).catch((error: unknown) => problems.push(error));
    const liveIds = new Set(live.map((j) => j.jobId));
    for (const jobId of this.watches.jobsById.keys()) if (!liveIds.has(jobId)) this.tracked.delete(jobId);
    const orphans = await removeOrphans(this.client, this.watches.jobsById, this.custom, liveIds, problems);
    const serviceOrphans = await this.services.removeOrphans(liveIds, problems);
    if (orphans + serviceOrphans)
      this.log(`removed ${orphans + serviceOrphans} object(s) or pod(s) of jobs Fairway no longer runs`);
    if (problems.length)
      throw new Error(
        `reconcile: ${problems.length} call(s) to the Kubernetes API failed (first: ${problems[0] instanceof Error ? problems[0].message : String(problems[0])})`,
      );
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers) clearInterval(t);
    this.inventory.close();
    this.listeners.clear();
    this.services.close();
    await Promise.all([this.watches.stop(), this.logs.close()]);
  }

  // ─── internals ───

  private assertOpen(): void {
    if (this.closed) throw new Error('kubernetes backend is closed');
  }

  private evaluateAll(): void {
    this.custom.evaluateAll();
    void this.services.resync().catch(this.logError);
    for (const jobId of [...this.tracked.keys()]) {
      this.batch.evaluate(jobId);
      this.gates?.release(jobId);
    }
  }

  /** For the parts that report on their own timers: nothing once the backend is closed. */
  private readonly emitIfOpen = (event: BackendEvent): void => {
    if (!this.closed) this.emit(event);
  };

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
