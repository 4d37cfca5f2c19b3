// The Kubernetes backend's view of the cluster: informers on the Jobs and Pods Fairway manages and on
// every Node, with Jobs and Pods indexed by the Fairway job they belong to. backend.ts is told when a
// job's objects or the Nodes change, and reads the caches when it evaluates.
import {
  BatchV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1Job,
  type V1Node,
  type V1Pod,
} from '@kubernetes/client-node';
import { type KubeClient, ResilientInformer } from './client.js';
import { LABEL_JOB_ID, LABEL_SERVICE_ID, MANAGED_BY } from './naming.js';
import type { KubernetesSettings } from './settings.js';

const MANAGED_SELECTOR = Object.entries(MANAGED_BY)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

const jobIdOf = (o: V1Job | V1Pod) => o.metadata?.labels?.[LABEL_JOB_ID];

export interface ClusterWatchHandlers {
  /** A Job or Pod of this Fairway job was added, changed or deleted (the index is already updated). */
  onRunObject(jobId: string): void;
  /** A Node was added, changed or deleted. */
  onNodes(): void;
  /** A pod of an inference service's workload was added, changed or deleted (given to a replica or not yet). */
  onServicePod?(): void;
}

export class ClusterWatches {
  readonly jobs: ResilientInformer<V1Job>;
  readonly pods: ResilientInformer<V1Pod>;
  readonly nodes: ResilientInformer<V1Node>;
  /** Fairway job id → its Kubernetes Jobs / Pods by name (maintained from the informers). */
  readonly jobsById = new Map<string, Map<string, V1Job>>();
  readonly podsById = new Map<string, Map<string, V1Pod>>();
  /** `namespace/name` → the managed Pod (the probe source maps metric series to jobs through it). */
  readonly podsByName = new Map<string, V1Pod>();

  constructor(
    kc: KubeConfig,
    private readonly client: KubeClient,
    settings: KubernetesSettings,
    log: (message: string) => void,
    handlers: ClusterWatchHandlers,
  ) {
    const watchTimings = {
      listTimeoutMs: settings.requestTimeoutMs,
      restartEveryMs: settings.watchRestartMs,
    };
    const batch = kc.makeApiClient(BatchV1Api);
    const core = kc.makeApiClient(CoreV1Api);
    const health = (what: string) => (healthy: boolean, error?: unknown) => {
      if (healthy) log(`watching ${what} again`);
      else
        log(
          `lost the watch on ${what} (${error instanceof Error ? error.message : String(error)}); retrying with backoff`,
        );
    };
    const indexed = <T extends V1Job | V1Pod>(
      index: Map<string, Map<string, T>>,
      object: T,
      deleted: boolean,
    ): void => {
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
      handlers.onRunObject(jobId);
    };
    this.jobs = new ResilientInformer<V1Job>(kc, {
      path: '/apis/batch/v1/jobs',
      list: () => batch.listJobForAllNamespaces({ labelSelector: MANAGED_SELECTOR }),
      labelSelector: MANAGED_SELECTOR,
      onChange: (j) => indexed(this.jobsById, j, false),
      onDelete: (j) => indexed(this.jobsById, j, true),
      onHealth: health('jobs'),
      ...watchTimings,
    });
    this.pods = new ResilientInformer<V1Pod>(kc, {
      path: '/api/v1/pods',
      list: () => core.listPodForAllNamespaces({ labelSelector: MANAGED_SELECTOR }),
      labelSelector: MANAGED_SELECTOR,
      onChange: (p) => {
        this.podsByName.set(`${p.metadata?.namespace}/${p.metadata?.name}`, p);
        indexed(this.podsById, p, false);
        if (p.metadata?.labels?.[LABEL_SERVICE_ID]) handlers.onServicePod?.();
      },
      onDelete: (p) => {
        this.podsByName.delete(`${p.metadata?.namespace}/${p.metadata?.name}`);
        indexed(this.podsById, p, true);
        if (p.metadata?.labels?.[LABEL_SERVICE_ID]) handlers.onServicePod?.();
      },
      onHealth: health('pods'),
      ...watchTimings,
    });
    this.nodes = new ResilientInformer<V1Node>(kc, {
      path: '/api/v1/nodes',
      list: () => core.listNode(),
      onChange: () => handlers.onNodes(),
      onDelete: () => handlers.onNodes(),
      onHealth: health('nodes'),
      ...watchTimings,
    });
  }

  /** Lists and watches Jobs, Pods and Nodes; resolves once the three caches are filled. */
  start(): Promise<unknown> {
    return Promise.all([this.jobs.start(), this.pods.start(), this.nodes.start()]);
  }

  stop(): Promise<unknown> {
    return Promise.all([this.jobs.stop(), this.pods.stop(), this.nodes.stop()]);
  }

  /** The Fairway job's Pods in the cache (every namespace: callers that read logs filter by it). */
  podsOf(jobId: string): V1Pod[] {
    return [...(this.podsById.get(jobId)?.values() ?? [])];
  }

  /** The Fairway job's Kubernetes Jobs: from the cache, or (not seen yet) from the API. */
  async jobsOf(jobId: string): Promise<V1Job[]> {
    const cached = this.jobsById.get(jobId);
    if (cached?.size) return [...cached.values()];
    return this.client.list<V1Job>('batch/v1', 'Job', `${MANAGED_SELECTOR},${LABEL_JOB_ID}=${jobId}`);
  }
}
