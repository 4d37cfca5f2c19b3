// Inference replicas on Kubernetes. Each replica is a Fairway job (admitted, preempted, reclaimed and
// charged like any); the cluster runs a service's replicas of one revision as one Deployment (or
// LeaderWorkerSet) whose replica count is the number of that revision's admitted replica jobs, behind
// one Service. The workload's pods are created gated; each is given to one admitted replica job (its
// job-id label and admission) and released to that job's node, so Fairway's placement is what runs.
// A replica that leaves (scaled down, reclaimed, cancelled) has its own pod deleted, gracefully: the
// Service stops sending it traffic at once and the pod drains for its grace period; then the count
// drops (a ReplicaSet ranks a starting pod below a serving one, so lowering the count alone could
// remove the wrong replica). Fairway is the autoscaler: a HorizontalPodAutoscaler aimed at one of these
// workloads is removed, and a count changed from outside is set back at the next resync.
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import type { BackendEvent, BackendJob, ServiceLoadQuery, ServiceLoadReading } from '../port.js';
import type { KubeClient } from './client.js';
import { ANNOTATION_ADMISSION, LABEL_JOB_ID, LABEL_SERVICE_ID, LABEL_SERVICE_REVISION } from './naming.js';
import { isGated, nodeOfIndex } from './placement-gates.js';
import type { JobBuildContext } from './pod-spec.js';
import {
  assignPatch,
  LWS_GROUP_INDEX,
  leavingPatch,
  podReady,
  replicaOf,
  serviceObjectName,
} from './service-objects.js';
import { ServiceSignals } from './service-signals.js';
import {
  type ReplicaRun,
  refOf,
  removeServiceOrphans,
  retireRevision,
  revisionKey,
  writeRevision,
} from './service-writes.js';
import type { KubernetesSettings } from './settings.js';

export interface ServiceRunsDeps {
  client: KubeClient;
  settings: KubernetesSettings;
  /** Every pod Fairway manages, by `namespace/name` (the pod informer's cache). */
  pods: () => Iterable<V1Pod>;
  node: (name: string) => V1Node | undefined;
  emit: (event: BackendEvent) => void;
  now: () => number;
  log: (message: string) => void;
  logError: (error: unknown) => void;
  /** For the service signals (tests give their own). */
  fetch?: typeof fetch;
  /** The tenant's namespace, where its services run (also when none of a service's replicas does). */
  namespaceOf: (tenantId: string) => Promise<string | undefined>;
}

/** A replica on its way out: its pods stop over their grace ('stopped' once they are gone when `suspended`). */
interface Leaving {
  namespace: string;
  admissionAt: string;
  suspended: boolean;
  /** The job it ran (unknown after a restart): its pods' output is still archived as they stop. */
  job?: BackendJob;
}

const WORKER_INDEX = 'leaderworkerset.sigs.k8s.io/worker-index';

export class ServiceRuns {
  private readonly runs = new Map<string, ReplicaRun>();
  private readonly leaving = new Map<string, Leaving>();
  /** Pods asked to be given to a replica (uid → job id): the informer shows the patch a moment later. */
  private readonly asked = new Map<string, string>();
  private readonly signals: ServiceSignals;
  private check: NodeJS.Immediate | null = null;
  /** The last write of each revision (`revisionKey`), the next one waits for it. */
  private readonly writing = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: ServiceRunsDeps) {
    const { serviceSignals, probes } = deps.settings;
    this.signals = new ServiceSignals(serviceSignals, probes.prometheusUrl, deps.fetch);
  }

  static isReplica(job: Pick<BackendJob, 'workload'>): boolean {
    return replicaOf(job) !== null;
  }

  /** The replica's run under its admission (its logs are archived as its pods end). */
  run(jobId: string): { job: BackendJob; admissionAt: string } | undefined {
    const leaving = this.leaving.get(jobId);
    return (
      this.runs.get(jobId) ??
      (leaving?.job ? { job: leaving.job, admissionAt: leaving.admissionAt } : undefined)
    );
  }

  has(jobId: string): boolean {
    return this.runs.has(jobId) || this.leaving.has(jobId);
  }

  /** Replica jobs running now, as the cluster shows them (a pod of theirs that is not terminating). */
  running(): string[] {
    const out = new Set<string>();
    for (const pod of this.deps.pods()) {
      const jobId = pod.metadata?.labels?.[LABEL_JOB_ID];
      if (jobId && pod.metadata?.labels?.[LABEL_SERVICE_ID] && !pod.metadata.deletionTimestamp)
        out.add(jobId);
    }
    return [...out];
  }

  /**
   * Counts these replicas in before any workload is written (after a restart, every live replica is
   * known before the first count is set: a count of one would remove the others' pods).
   */
  expect(jobs: readonly { job: BackendJob; ctx: JobBuildContext }[]): void {
    for (const { job, ctx } of jobs) this.track(job, ctx);
  }

  /** Runs (or adopts) the replica: its revision's workload counts it, a pod is given to it. Returns why it cannot run, or null. */
  async start(job: BackendJob, ctx: JobBuildContext): Promise<string | null> {
    const run = this.track(job, ctx);
    const refused = await this.write(run);
    if (refused) {
      this.runs.delete(job.jobId);
      return refused;
    }
    setImmediate(() => this.evaluate());
    return null;
  }

  /** Preempted or reclaimed: its pod drains and goes; 'stopped' once it is gone. */
  suspend(jobId: string): Promise<void> {
    return this.leave(jobId, true);
  }

  cancel(jobId: string): Promise<void> {
    return this.leave(jobId, false);
  }

  /** A service pod changed: looked at once for every change of this turn. */
  changed(): void {
    this.check ??= setImmediate(() => {
      this.check = null;
      this.evaluate();
    });
  }

  /** Stops looking (the backend is closing). */
  close(): void {
    if (this.check) clearImmediate(this.check);
    this.check = null;
  }

  /** Looks at every replica's pods: gives gated pods to replicas, reports started, disrupted and stopped. */
  evaluate(): void {
    const byJob = new Map<string, V1Pod[]>();
    const free = new Map<string, V1Pod[]>();
    for (const pod of this.deps.pods()) {
      const labels = pod.metadata?.labels ?? {};
      if (!labels[LABEL_SERVICE_ID]) continue;
      const jobId = labels[LABEL_JOB_ID] ?? this.asked.get(pod.metadata?.uid ?? '');
      if (jobId) byJob.set(jobId, [...(byJob.get(jobId) ?? []), pod]);
      else if (isGated(pod) && !pod.metadata?.deletionTimestamp) {
        const key = `${pod.metadata?.namespace}/${labels[LABEL_SERVICE_ID]}/${labels[LABEL_SERVICE_REVISION]}`;
        free.set(key, [...(free.get(key) ?? []), pod]);
      }
    }
    for (const [jobId, run] of [...this.runs]) {
      const pods = (byJob.get(jobId) ?? []).filter(
        (p) =>
          p.metadata?.annotations?.[ANNOTATION_ADMISSION] === run.admissionAt ||
          this.asked.has(p.metadata?.uid ?? ''),
      );
      if (pods.length === 0) {
        if (run.started) this.disrupted(jobId, run, 'its pod is gone');
        else this.give(run, free);
        continue;
      }
      const lost = pods.find((p) => p.metadata?.deletionTimestamp || p.status?.phase === 'Failed');
      if (lost) {
        this.disrupted(
          jobId,
          run,
          lost.metadata?.deletionTimestamp ? 'its pod was deleted' : 'its pod failed',
        );
        continue;
      }
      if (!run.started && pods.some((p) => p.status?.phase === 'Running')) {
        run.started = true;
        this.deps.emit({ type: 'started', jobId, at: this.deps.now() });
      }
    }
    for (const [jobId, l] of [...this.leaving]) {
      const left = (byJob.get(jobId) ?? []).filter(
        (p) => p.metadata?.annotations?.[ANNOTATION_ADMISSION] === l.admissionAt,
      );
      if (left.length > 0) continue;
      this.leaving.delete(jobId);
      if (l.suspended) this.deps.emit({ type: 'stopped', jobId, at: this.deps.now() });
    }
  }

  /** Sets every revision's (or one service's) count again (a count changed from outside comes back) and removes HPAs aimed at them. */
  async resync(serviceId?: string): Promise<void> {
    const seen = new Set<string>();
    for (const run of this.runs.values()) {
      if (serviceId !== undefined && run.replica.serviceId !== serviceId) continue;
      const key = revisionKey(run);
      if (seen.has(key)) continue;
      seen.add(key);
      await this.write(run).catch(this.deps.logError);
    }
    this.evaluate();
  }

  /** The serving (ready, not terminating) pods of these replica jobs, and how many replicas they are. */
  serving(replicaJobIds: readonly string[]): { replicas: number; pods: V1Pod[] } {
    const ids = new Set(replicaJobIds);
    const replicas = new Set<string>();
    const pods: V1Pod[] = [];
    for (const pod of this.deps.pods()) {
      const jobId = pod.metadata?.labels?.[LABEL_JOB_ID];
      if (!jobId || !ids.has(jobId) || !pod.metadata?.labels?.[LABEL_SERVICE_ID] || !podReady(pod)) continue;
      replicas.add(jobId);
      pods.push(pod);
    }
    return { replicas: replicas.size, pods };
  }

  /**
   * The service's load for the autoscaler: its serving replicas and the signals of the configured source.
   * No source, or nothing read: null (the autoscaler keeps the replicas within bounds).
   */
  async load(query: ServiceLoadQuery): Promise<ServiceLoadReading | null> {
    // Each interval the count is Fairway's again (an HPA or a person may have changed it).
    await this.resync(query.serviceId);
    const serving = this.serving(query.replicaJobIds);
    const any = serving.pods[0];
    const run = [...this.runs.values()].find((r) => r.replica.serviceId === query.serviceId);
    const signal = await this.signals.read({
      // From the tenant when no replica runs (a service scaled to zero): a Prometheus query still reads its
      // traffic there, so the autoscaler can wake it.
      namespace:
        run?.ctx.namespace ?? any?.metadata?.namespace ?? (await this.deps.namespaceOf(query.tenant)) ?? '',
      service: serviceObjectName(query.serviceId),
      port: run?.replica.port ?? 0,
      pods: serving.pods.map((p) => ({
        namespace: p.metadata?.namespace ?? '',
        name: p.metadata?.name ?? '',
        ip: p.status?.podIP,
      })),
      windowMs: query.at - query.sinceMs,
      at: query.at,
    });
    return signal ? { ready: serving.replicas, ...signal } : null;
  }

  /** After a reconcile: the workloads, Services and pods of services none of whose replicas is live go. */
  removeOrphans(liveIds: ReadonlySet<string>, problems: unknown[]): Promise<number> {
    const runs = [...this.runs.values()];
    return removeServiceOrphans(this.deps.client, {
      services: new Set(runs.map((r) => r.replica.serviceId)),
      revisions: new Set(runs.map(revisionKey)),
      pods: [...this.deps.pods()],
      live: (jobId) => liveIds.has(jobId) || this.leaving.has(jobId),
      problems,
    });
  }

  // ─── internals ───

  private track(job: BackendJob, ctx: JobBuildContext): ReplicaRun {
    const replica = replicaOf(job);
    if (!replica) throw new Error(`job ${job.jobId} is no service replica`);
    const admissionAt = String(job.admission.at);
    const existing = this.runs.get(job.jobId);
    const run: ReplicaRun =
      existing && existing.admissionAt === admissionAt
        ? { ...existing, job, ctx }
        : { job, replica, ctx, admissionAt, started: false };
    this.runs.set(job.jobId, run);
    this.leaving.delete(job.jobId);
    return run;
  }

  private countOf(run: ReplicaRun): number {
    const key = revisionKey(run);
    let n = 0;
    for (const r of this.runs.values()) if (revisionKey(r) === key) n++;
    return n;
  }

  /**
   * Writes of one revision run one after another, each with the count as it is when it runs: a start
   * and a leave at once must not leave the count of whichever was computed first.
   */
  private write(run: ReplicaRun): Promise<string | null> {
    const key = revisionKey(run);
    const next = (this.writing.get(key) ?? Promise.resolve())
      .catch(() => undefined)
      .then(async () => {
        const count = this.countOf(run);
        if (count > 0) return writeRevision(this.deps.client, this.deps.settings, run, count, this.deps.log);
        // The revision's last replica left: an older revision rolled out goes; the only one stays at 0
        // (a scale to zero keeps its objects and name).
        const others = [...this.runs.values()].some((r) => r.replica.serviceId === run.replica.serviceId);
        await retireRevision(this.deps.client, run, others ? 'delete' : 'scale-to-zero');
        return null;
      });
    const settled = next.catch(() => undefined);
    this.writing.set(key, settled);
    void settled.then(() => {
      if (this.writing.get(key) === settled) this.writing.delete(key);
    });
    return next;
  }

  /** Gives free gated pods (a group of them for a LeaderWorkerSet) of the run's revision to it, each to its node. */
  private give(run: ReplicaRun, free: Map<string, V1Pod[]>): void {
    const key = revisionKey(run);
    const pods = free.get(key) ?? [];
    if (pods.length === 0) return;
    const groupOf = (p: V1Pod) => p.metadata?.labels?.[LWS_GROUP_INDEX] ?? p.metadata?.name ?? '';
    const group = groupOf(pods[0]!);
    const mine = pods.filter((p) => groupOf(p) === group);
    free.set(
      key,
      pods.filter((p) => groupOf(p) !== group),
    );
    const admitted = run.job.admission.podSets[0];
    if (!admitted) return;
    mine.forEach((pod, i) => {
      const index = Number(pod.metadata?.labels?.[WORKER_INDEX] ?? i);
      const node = nodeOfIndex(admitted, Number.isInteger(index) ? index : i);
      if (!node) return;
      const why = this.unusable(node);
      if (why) return this.disrupted(run.job.jobId, run, `NodeUnavailable: ${why}`);
      const uid = pod.metadata?.uid ?? pod.metadata?.name ?? '';
      this.asked.set(uid, run.job.jobId);
      void this.deps.client
        .mergePatch(refOf(pod, 'v1', 'Pod'), assignPatch(pod, run.job.jobId, run.admissionAt, node))
        .catch((error: unknown) => {
          this.asked.delete(uid);
          this.deps.logError(error);
        });
    });
    if (this.asked.size > 10_000) this.asked.clear();
  }

  private unusable(name: string): string | null {
    const node = this.deps.node(name);
    if (!node) return `node ${name} is gone`;
    if (node.spec?.unschedulable) return `node ${name} is cordoned`;
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    return ready && ready.status !== 'True' ? `node ${name} is not ready` : null;
  }

  /** The cluster stopped the replica: its pod goes, the count drops, the job is requeued. */
  private disrupted(jobId: string, run: ReplicaRun, reason: string): void {
    this.deps.log(`replica job ${jobId} of service ${run.replica.serviceId} was disrupted: ${reason}`);
    void this.leave(jobId, false).catch(this.deps.logError);
    this.deps.emit({
      type: 'disrupted',
      jobId,
      at: this.deps.now(),
      reason: `The replica was stopped by the cluster: ${reason}`,
    });
  }

  private async leave(jobId: string, suspended: boolean): Promise<void> {
    const run = this.runs.get(jobId);
    const pods = [...this.deps.pods()].filter(
      (p) => p.metadata?.labels?.[LABEL_JOB_ID] === jobId && p.metadata?.labels?.[LABEL_SERVICE_ID],
    );
    this.runs.delete(jobId);
    const admissionAt = run?.admissionAt ?? pods[0]?.metadata?.annotations?.[ANNOTATION_ADMISSION];
    if (admissionAt !== undefined)
      this.leaving.set(jobId, {
        namespace: run?.ctx.namespace ?? pods[0]?.metadata?.namespace ?? '',
        admissionAt,
        suspended,
        ...(run ? { job: run.job } : {}),
      });
    // Its own pod first (graceful: it drains), then the count: the ReplicaSet's replacement of the deleted
    // pod, gated and unscheduled, is the one the lower count removes.
    for (const pod of pods) {
      if (pod.metadata?.deletionTimestamp) continue;
      await this.deps.client.mergePatch(refOf(pod, 'v1', 'Pod'), leavingPatch()).catch(() => undefined);
      await this.deps.client.deleteIfPresent(refOf(pod, 'v1', 'Pod'));
    }
    if (run) await this.write(run);
    setImmediate(() => this.evaluate());
  }
}
