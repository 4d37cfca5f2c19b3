/**
 * The test cluster's control loop: pod GC, the workload controllers of custom kinds (JobSet, PyTorchJob,
 * RayJob, RayCluster: crd-controllers/, each while its CRD is installed), the HorizontalPodAutoscaler,
 * Deployment, ReplicaSet and Job controllers, the scheduler, the kubelet and the quota controller, run together on one unref'd timer whenever something changes (Events and Leases aside)
 * or a deadline (pod start, pod end, SIGTERM exit, Job deadline, TTL, retry) comes due. Every write goes
 * through the store, so what they make is defaulted, admitted and validated too.
 */
import type { Cluster, ClusterOptions } from './cluster.js';
import { JobSetController } from './crd-controllers/jobset.js';
import { PyTorchJobController } from './crd-controllers/pytorchjob.js';
import { RayClusterController } from './crd-controllers/raycluster.js';
import { RayJobController } from './crd-controllers/rayjob.js';
import { DeploymentController } from './deployment-controller.js';
import { collectOrphanedPods } from './disruption.js';
import { EventRecorder } from './events.js';
import { HpaController } from './hpa-controller.js';
import { JobController } from './job-controller.js';
import { Kubelet } from './kubelet.js';
import { PodLogs } from './pod-logs.js';
import { ReplicaSetController } from './replicaset-controller.js';
import { Scheduler } from './scheduler.js';
import { podRequests } from './scheduling.js';
import { type Store, type StoreEvent, terminal } from './store.js';

export type { KubeletOptions, Scoring } from './cluster.js';
export { ANNOTATION_OUTCOME, ANNOTATION_RUN_MS, ANNOTATION_SIGTERM_MS } from './cluster.js';

/** Kinds whose changes do not concern the controllers (they write them themselves). */
const QUIET = new Set(['Event', 'Lease']);

export class Controllers implements Cluster {
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private stopped = false;
  private running = false;
  private again = false;
  private nextWake = Infinity;
  private readonly unsubscribe: () => void;
  private readonly reported = new Set<string>();
  private readonly jobController: JobController;
  /** The apps/v1 and autoscaling/v2 controllers, in the order they run. */
  private readonly apps: { pass(now: number): void }[];
  /** The workload controllers of custom kinds; each acts only while its CRD is installed. */
  private readonly workloads: { pass(now: number): void }[];
  private readonly scheduler: Scheduler;
  private readonly kubelet: Kubelet | undefined;
  readonly events: EventRecorder;
  readonly logs: PodLogs;
  /** Writes the controllers could not make (e.g. a pod refused by a quota), newest last. */
  readonly problems: string[] = [];

  constructor(
    readonly store: Store,
    readonly options: ClusterOptions,
  ) {
    this.events = new EventRecorder(store);
    this.logs = new PodLogs(store);
    this.jobController = new JobController(this);
    this.apps = [new HpaController(this), new DeploymentController(this), new ReplicaSetController(this)];
    this.workloads = [
      new JobSetController(this),
      new PyTorchJobController(this),
      new RayJobController(this),
      new RayClusterController(this),
    ];
    this.kubelet = options.kubelet ? new Kubelet(this, options.kubelet) : undefined;
    this.scheduler = new Scheduler(this, (uid, now) => this.kubelet?.bound(uid, now));
    this.unsubscribe = store.subscribe((e) => this.observe(e));
  }

  close(): void {
    this.stopped = true;
    this.unsubscribe();
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  private observe(e: StoreEvent): void {
    if (QUIET.has(e.kind)) return;
    this.jobController.observe(e);
    if (e.kind === 'Pod' && e.type === 'DELETED') this.kubelet?.forget(e.object.metadata.uid);
    if (this.running) this.again = true;
    else this.wakeAt(Date.now() + 1);
  }

  private wakeAt(at: number): void {
    if (this.stopped || at >= this.timerAt) return;
    if (this.timer) clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = setTimeout(() => this.reconcile(), Math.max(0, at - Date.now())).unref();
  }

  due(at: number, now: number): boolean {
    if (at <= now) return true;
    this.nextWake = Math.min(this.nextWake, at);
    return false;
  }

  private reconcile(): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    if (this.stopped) return;
    this.running = true;
    this.nextWake = Infinity;
    try {
      for (let pass = 0; pass < 20; pass++) {
        this.again = false;
        const now = Date.now();
        collectOrphanedPods(this);
        for (const w of this.workloads) w.pass(now);
        for (const a of this.apps) a.pass(now);
        this.jobController.pass(now);
        this.scheduler.pass(now);
        this.kubelet?.pass(now);
        this.quotaUsage();
        if (!this.again) break;
      }
    } finally {
      this.running = false;
    }
    if (this.again) this.wakeAt(Date.now() + 1);
    if (this.nextWake < Infinity) this.wakeAt(this.nextWake);
  }

  /**
   * Holds a pod not ready (its readiness probe failing) or lets its probes decide again, and runs the
   * loop at once so that the pod and its ReplicaSet / Deployment say so when this returns.
   */
  setPodReady(namespace: string, name: string, ready: boolean): void {
    const pod = this.store.peek('Pod', namespace, name);
    if (!pod) throw new Error(`no pod ${namespace}/${name}`);
    if (!this.kubelet) throw new Error('setPodReady needs a kubelet (kubelet: false)');
    this.kubelet.setReady(pod.metadata.uid, ready);
    if (this.running) return void (this.again = true);
    if (this.timer) clearTimeout(this.timer);
    this.reconcile();
  }

  /** Reports each problem once, even when a test empties `problems` and the loop meets it again. */
  problem(message: string): void {
    if (this.reported.has(message)) return;
    this.reported.add(message);
    this.problems.push(message);
  }

  write<T>(action: () => T): T | undefined {
    try {
      return action();
    } catch (error) {
      this.problem(error instanceof Error ? error.message : String(error));
      return undefined;
    }
  }

  /** Keeps each ResourceQuota's status.hard / status.used current, as the quota controller does. */
  private quotaUsage(): void {
    const quotas = this.store.list('ResourceQuota');
    if (!quotas.length) return;
    const pods = this.store.peekAll('Pod').filter((p) => !terminal(p));
    const asQuantity = (n: number) => (Number.isInteger(n) ? String(n) : `${Math.round(n * 1000)}m`);
    for (const quota of quotas) {
      const hard: Record<string, string> = quota.spec?.hard ?? {};
      const inNamespace = pods.filter((p) => p.metadata.namespace === quota.metadata.namespace);
      const used: Record<string, string> = {};
      for (const key of Object.keys(hard)) {
        const resource = key.replace(/^(requests|limits)\./, '');
        used[key] =
          key === 'pods'
            ? String(inNamespace.length)
            : asQuantity(inNamespace.reduce((sum, p) => sum + (podRequests(p).get(resource) ?? 0), 0));
      }
      const status = { hard, used };
      if (JSON.stringify(status) !== JSON.stringify(quota.status))
        this.write(() => this.store.replace({ ...quota, status }, 'system'));
    }
  }
}
