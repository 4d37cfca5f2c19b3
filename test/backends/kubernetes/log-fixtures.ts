// What the Kubernetes log and cluster-event tests share: a test API server with two 8-GPU nodes, a
// KubernetesBackend on it with two tenants synced, admitted jobs (batch or a workload kind) placed on
// those nodes, and the run as the log readers are given it.
import { KubeConfig } from '@kubernetes/client-node';
import {
  KubernetesBackend,
  type KubernetesBackendOptions,
} from '../../../src/backends/kubernetes/backend.js';
import { parseKubernetesSettings } from '../../../src/backends/kubernetes/settings.js';
import type {
  BackendEvent,
  BackendJob,
  BackendLogRun,
  BackendTenant,
  WorkloadKind,
} from '../../../src/backends/port.js';
import { CRDS } from '../../helpers/kube-api-server/crd-fixtures.js';
import { type KubeApiServer, startKubeApiServer } from '../../helpers/kube-api-server/index.js';
import { eventually, gpuNode, H100_PRODUCT } from '../../helpers/kube-app.js';

export { eventually };

export const FLAVORS = [{ name: 'h100-80g', kind: 'gpu' as const }];
export const AURORA: BackendTenant = {
  id: '0190f0a0-0000-7000-8000-00000000000a',
  slug: 'aurora',
  isolationLevel: 'GUARANTEED',
  egressAllowlist: null,
  maxGpus: { 'h100-80g': 16 },
};
export const BOREALIS: BackendTenant = {
  ...AURORA,
  id: '0190f0a0-0000-7000-8000-00000000000b',
  slug: 'borealis',
};
export const AURORA_NS = 'fairway-aurora';
export const BOREALIS_NS = 'fairway-borealis';
export const NODES = ['gpu-h100-1', 'gpu-h100-2'];

export interface LogCluster {
  kube: KubeApiServer;
  backend: KubernetesBackend;
  events: BackendEvent[];
  logs: string[];
  close(): Promise<void>;
}

export async function startLogCluster(
  options: Partial<KubernetesBackendOptions> & { crds?: boolean } = {},
): Promise<LogCluster> {
  const kube = await startKubeApiServer({
    kubelet: { startDelayMs: 20 },
    ...(options.crds ? { crds: CRDS } : {}),
  });
  for (const name of NODES) kube.put(gpuNode(name));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(kube.kubeconfigYaml);
  const logs: string[] = [];
  const backend = new KubernetesBackend({
    kubeConfig,
    settings: parseKubernetesSettings({
      flavors: [{ flavor: 'h100-80g', resource: 'nvidia.com/gpu', gpuProduct: H100_PRODUCT }],
      requestTimeoutMs: 3000,
    }),
    log: (m) => logs.push(m),
    logError: (e) => logs.push(`error: ${e instanceof Error ? e.message : String(e)}`),
    ...options,
  });
  const events: BackendEvent[] = [];
  backend.onEvent((e) => events.push(e));
  await backend.syncTenants([AURORA, BOREALIS], FLAVORS);
  await backend.ready();
  return {
    kube,
    backend,
    events,
    logs,
    close: async () => {
      await backend.close();
      await kube.close();
    },
  };
}

export interface PodSetShape {
  name: string;
  count: number;
  gpu: number;
}

let admissions = 1_700_000_000_000;

/** A job admitted now with its pods placed on the nodes in turn; env: its container's environment. */
export function admitted(
  jobId: string,
  sets: PodSetShape[],
  env: Record<string, string>,
  over: Partial<BackendJob> & { workloadKind?: WorkloadKind } = {},
): BackendJob {
  const at = Math.max(Date.now(), ++admissions);
  admissions = at;
  let next = 0;
  const podSets = sets.map((s) => ({ name: s.name, count: s.count, perPod: { gpu: s.gpu } }));
  const placed = sets.map((s) => ({
    name: s.name,
    flavor: 'h100-80g',
    count: s.count,
    placements: Array.from({ length: s.count }, () => ({ node: NODES[next++ % NODES.length]!, pods: 1 })),
  }));
  return {
    jobId,
    tenant: AURORA.id,
    queue: 'research',
    name: 'train',
    podSets,
    admission: { jobId, queue: 'research', at, podSets: placed, borrowed: false, mode: 'fit' },
    workload: {
      container: {
        image: 'nvcr.io/nvidia/pytorch:24.05-py3',
        command: ['python', 'train.py'],
        env: Object.entries(env).map(([name, value]) => ({ name, value })),
      },
    },
    ...over,
  };
}

/** The run of an admitted job as the database tells it to the log readers. */
export function runOf(job: BackendJob, over: Partial<BackendLogRun> = {}): BackendLogRun {
  return {
    jobId: job.jobId,
    tenant: job.tenant,
    name: job.name,
    run: 1,
    admissionAt: job.admission.at,
    startedAt: job.admission.at,
    endedAt: null,
    outcome: 'running',
    reason: null,
    podSets: job.podSets.map((p) => ({ name: p.name, count: p.count, gpusPerPod: p.perPod.gpu ?? 0 })),
    expectedDurationMs: null,
    checkpointIntervalMs: null,
    workloadType: null,
    ...over,
  };
}

/** The job's pods in the namespace, by name. */
export function podsOf(kube: KubeApiServer, jobId: string, namespace = AURORA_NS): any[] {
  return kube.objects('Pod', namespace).filter((p) => p.metadata.labels?.['fairway.dev/job-id'] === jobId);
}

export async function allRunning(kube: KubeApiServer, jobId: string, count: number): Promise<any[]> {
  return eventually(() => {
    const pods = podsOf(kube, jobId).filter((p) => p.status?.phase === 'Running');
    return pods.length === count && pods;
  }, `${count} running pods of ${jobId}`);
}
