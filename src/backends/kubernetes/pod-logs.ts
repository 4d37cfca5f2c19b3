// Job logs and cluster events of the Kubernetes backend (port.ts BackendLogs). Any replica answers:
// a run's pods come from the pod cache (every replica watches pods), its namespace from the tenants
// as last synced, and only pods of that namespace with the run's admission are ever read, so a pod of
// another tenant with the same name or labels never is. Lines come from the pod log API
// (pod-log-reads.ts); Events from per-namespace informers (cluster-events.ts); the leader's runs'
// output is archived as their pods end (log-archive.ts).
import type { KubeConfig, V1Pod } from '@kubernetes/client-node';
import type {
  BackendClusterEvent,
  BackendEvent,
  BackendLogLine,
  BackendLogPod,
  BackendLogRun,
  BackendLogSink,
  BackendLogs,
  BackendTenant,
} from '../port.js';
import type { KubeClient } from './client.js';
import { ClusterEvents } from './cluster-events.js';
import { type ArchivedRun, LogArchive } from './log-archive.js';
import { parseCursor, portable } from './log-lines.js';
import type { PodLogTarget } from './log-stream.js';
import { labelValue, namespaceName } from './naming.js';
import { followPodLog, type PodLogDeps, readPodLog } from './pod-log-reads.js';
import { mainContainer, type RunPod, runPods, samePosition } from './run-pods.js';
import type { KubernetesSettings } from './settings.js';

/** The backend's options for logs (KubernetesBackendOptions has them). */
export interface KubeLogOptions {
  /** The most of a pod's output kept for the archive when it ends (bytes of its last lines). Default 1 MiB. */
  logArchiveBytes?: number;
  /** Pods whose output is captured for the archive at once (others wait, pods being stopped first); 0: no
   * archive ('pod-log' events). Default 8. */
  logCaptureConcurrency?: number;
}

export const DEFAULT_LOG_ARCHIVE_BYTES = 1_048_576;
const DEFAULT_CAPTURE_CONCURRENCY = 8;
/** How long a read waits for the first tenant sync after a start before it finds nothing. */
const FIRST_SYNC_WAIT_MS = 10_000;

export interface KubeLogsDeps {
  kubeConfig: KubeConfig;
  client: KubeClient;
  settings: KubernetesSettings;
  options: KubeLogOptions;
  /** The job's pods in the cache (any namespace: filtered here). */
  pods(jobId: string): Iterable<V1Pod> | undefined;
  /** The run this backend runs for the job now (the leader's), for the archive. */
  run(jobId: string): ArchivedRun | undefined;
  emit(event: BackendEvent): void;
  now(): number;
  log(message: string): void;
  logError(error: unknown): void;
}

export class KubeLogs implements BackendLogs {
  private namespaces = new Map<string, string>();
  private synced = false;
  private syncWaiters: (() => void)[] = [];
  private readonly follows = new Set<() => void>();
  private readonly reads: PodLogDeps;
  private readonly clusterEvents: ClusterEvents;
  private readonly archive: LogArchive;

  constructor(private readonly deps: KubeLogsDeps) {
    this.reads = {
      kubeConfig: deps.kubeConfig,
      client: deps.client,
      answerWithinMs: deps.settings.requestTimeoutMs,
      log: deps.log,
    };
    this.clusterEvents = new ClusterEvents(deps.kubeConfig, deps.settings, deps.log);
    this.archive = new LogArchive({
      reads: this.reads,
      run: deps.run,
      pods: deps.pods,
      namespaceOf: (tenantId) => this.namespaces.get(tenantId),
      emit: deps.emit,
      now: deps.now,
      log: deps.log,
      archiveBytes: deps.options.logArchiveBytes ?? DEFAULT_LOG_ARCHIVE_BYTES,
      concurrency: deps.options.logCaptureConcurrency ?? DEFAULT_CAPTURE_CONCURRENCY,
    });
  }

  /** The tenants as synced: their namespaces are where their runs' pods are; their Events are watched. */
  syncTenants(tenants: readonly BackendTenant[]): void {
    const next = new Map<string, string>();
    for (const t of tenants) {
      try {
        next.set(t.id, namespaceName(this.deps.settings, t.slug));
      } catch {
        // no namespace can be made for it: the tenant reconciler says why
      }
    }
    this.namespaces = next;
    this.clusterEvents.sync(new Set(next.values()));
    if (!this.synced) {
      this.synced = true;
      for (const wake of this.syncWaiters.splice(0)) wake();
    }
  }

  /** A pod or Job of the job changed (the archive captures pods that end). Never throws: the caller
   * goes on with the job's own evaluation. */
  changed(jobId: string): void {
    this.guard(() => this.archive.changed(jobId));
  }

  async close(): Promise<void> {
    this.archive.close();
    for (const stop of [...this.follows]) stop();
    this.follows.clear();
    await this.clusterEvents.close();
  }

  async pods(run: BackendLogRun): Promise<BackendLogPod[]> {
    return (await this.runPods(run)).filter((p) => p.current).map((p) => p.position);
  }

  async read(
    run: BackendLogRun,
    pod: BackendLogPod,
    options: { after?: string | null; tailLines?: number },
  ): Promise<BackendLogLine[] | null> {
    const target = await this.target(run, pod);
    if (!target) return null;
    try {
      const { lines } = await readPodLog(this.reads, target, parseCursor(options.after), options.tailLines);
      return lines.map(portable);
    } catch (error) {
      const status = (error as { status?: number }).status;
      if (status === 404) return null;
      // Not started yet (or between restarts): it holds nothing yet.
      if (status === 400) return [];
      throw error;
    }
  }

  follow(run: BackendLogRun, pod: BackendLogPod, after: string | null, sink: BackendLogSink): () => void {
    let stopped = false;
    let stopFollow: (() => void) | undefined;
    const stop = () => {
      stopped = true;
      this.follows.delete(stop);
      stopFollow?.();
    };
    this.follows.add(stop);
    const end = () => {
      this.follows.delete(stop);
      if (!stopped) this.guard(() => sink.end());
    };
    void this.target(run, pod).then(
      (target) => {
        if (stopped) return;
        if (!target) return end();
        stopFollow = followPodLog(
          this.reads,
          target,
          { after: parseCursor(after) },
          {
            lines: (lines) => !stopped && this.guard(() => sink.lines(lines.map(portable))),
            end,
          },
        );
      },
      (error: unknown) => {
        this.deps.logError(error);
        end();
      },
    );
    return stop;
  }

  async events(run: BackendLogRun): Promise<BackendClusterEvent[]> {
    const namespace = await this.namespaceOf(run.tenant);
    if (!namespace) return [];
    const pods = this.runPodsIn(run, namespace);
    const jobPods = [...(this.deps.pods(labelValue(run.jobId)) ?? [])].filter(
      (p) => p.metadata?.namespace === namespace,
    );
    return this.clusterEvents.ofRun(run, namespace, pods, jobPods);
  }

  private guard(call: () => void): void {
    try {
      call();
    } catch (error) {
      this.deps.logError(error);
    }
  }

  /** The tenant's namespace as synced (waits a moment for the first sync); undefined for an unknown tenant. */
  async namespaceOf(tenantId: string): Promise<string | undefined> {
    if (!this.synced)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, FIRST_SYNC_WAIT_MS);
        timer.unref();
        this.syncWaiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    return this.namespaces.get(tenantId);
  }

  private async runPods(run: BackendLogRun): Promise<RunPod[]> {
    const namespace = await this.namespaceOf(run.tenant);
    return namespace ? this.runPodsIn(run, namespace) : [];
  }

  private runPodsIn(run: BackendLogRun, namespace: string): RunPod[] {
    const scope = { namespace, admissionAt: String(run.admissionAt), podSets: run.podSets };
    return runPods(this.deps.pods(labelValue(run.jobId)) ?? [], scope);
  }

  /** The pod now at the position (the newest there), as a log to read; null when there is none. */
  private async target(run: BackendLogRun, position: BackendLogPod): Promise<PodLogTarget | null> {
    const found = (await this.runPods(run)).find((p) => p.current && samePosition(p.position, position));
    const meta = found?.pod.metadata;
    const container = found && mainContainer(found.pod);
    if (!meta?.name || !meta.namespace || !meta.uid || !container) return null;
    return { namespace: meta.namespace, pod: meta.name, container, uid: meta.uid };
  }
}
