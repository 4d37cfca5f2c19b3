/**
 * What the tests of custom resources share (test/backends/kubernetes/test-api-server.crd*.test.ts): a
 * test cluster serving the shared CRDs (../shared/kubernetes/crds) with a second node `gpu-2` labelled
 * `pool: b`, raw HTTP, and builders of JobSets, PyTorchJobs and RayCluster specs whose pods satisfy
 * Pod Security "restricted".
 */
import { type KubernetesObject, PatchStrategy } from '@kubernetes/client-node';
import { crdDirectory } from '../crd-dir.js';
import { NS, node, podSpec, startTestCluster, type TestCluster } from './fixtures.js';
import type { KubeApiServerOptions } from './index.js';

/** The shared CRDs: JobSet, PyTorchJob, RayJob, RayCluster, RayService, LeaderWorkerSet, TrainJob. */
export const CRDS = crdDirectory();

/**
 * The Training Operator's init container for PyTorchJob workers (its --pytorch-init-container-template-file)
 * as a restricted namespace needs it: the operator's default has no securityContext, so Pod Security
 * "restricted" (Fairway's tenant namespaces) refuses the workers.
 */
export const RESTRICTED_PYTORCH_INIT = {
  name: 'init-pytorch',
  image: '{{.InitContainerImage}}',
  command: ['sh', '-c', 'until nslookup {{.MasterAddr}}; do sleep 2; done'],
  securityContext: {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    runAsNonRoot: true,
    runAsUser: 65534,
    seccompProfile: { type: 'RuntimeDefault' },
  },
};

export interface CrdCluster extends TestCluster {
  /** A request with the test token (JSON content type unless given). */
  raw(path: string, init?: RequestInit): Promise<Response>;
  /** Pods of NS with this label value. */
  podsWith(label: string, value: string): any[];
  /** Reasons of the Events about objects of this name in NS. */
  reasons(name: string): string[];
  /** A JSON merge patch (custom resources take no strategic merge patch). */
  mergePatch(obj: any): Promise<KubernetesObject>;
}

/** A test cluster serving `crds` (default: all the shared ones; false: none), with node gpu-2 (pool b). */
export async function startCrdCluster(
  crds: string | false = CRDS,
  options: KubeApiServerOptions = {},
): Promise<CrdCluster> {
  const t = await startTestCluster({ ...(crds ? { crds } : {}), ...options });
  const pool = node('gpu-2', 4);
  t.server.put({ ...pool, metadata: { ...pool.metadata, labels: { ...pool.metadata.labels, pool: 'b' } } });
  return {
    ...t,
    raw: (path, init = {}) =>
      fetch(`${t.server.url}${path}`, {
        ...init,
        headers: { Authorization: 'Bearer test-token', 'Content-Type': 'application/json', ...init.headers },
      }),
    podsWith: (label, value) =>
      t.server.objects('Pod', NS).filter((p) => p.metadata.labels?.[label] === value),
    reasons: (name) =>
      t.server
        .objects('Event', NS)
        .filter((e) => e.involvedObject.name === name)
        .map((e) => e.reason),
    mergePatch: (obj) =>
      t.api.patch(obj, undefined, undefined, undefined, undefined, PatchStrategy.MergePatch),
  };
}

export const cond = (obj: any, type: string) => obj?.status?.conditions?.find((c: any) => c.type === type);
export const running = (p: any) => p.status.phase === 'Running';

/** A JobSet of one replicatedJob `workers`: 2 Jobs of 2 pods (1 GPU each) that run a minute. */
export const jobSet = (name: string, extra: any = {}): any => ({
  apiVersion: 'jobset.x-k8s.io/v1alpha2',
  kind: 'JobSet',
  metadata: { name, namespace: NS },
  spec: {
    replicatedJobs: [
      {
        name: 'workers',
        replicas: 2,
        template: {
          spec: {
            parallelism: 2,
            completions: 2,
            backoffLimit: 0,
            template: {
              metadata: { annotations: { 'fairway.dev/test-run-ms': '60000' } },
              spec: podSpec({ gpu: 1 }),
            },
          },
        },
      },
    ],
    ...extra,
  },
});

/** A pod template whose container is the operator's `pytorch`. */
export const pytorchTemplate = (annotations: Record<string, string> = {}) => {
  const spec = podSpec({ gpu: 1 });
  spec.containers[0].name = 'pytorch';
  delete spec.restartPolicy;
  return { metadata: { annotations }, spec };
};

/** A PyTorchJob: a Master (annotated `annotations`) and 2 Workers that run a minute, restartPolicy Never. */
export const pyTorchJob = (name: string, extra: any = {}, annotations: Record<string, string> = {}): any => ({
  apiVersion: 'kubeflow.org/v1',
  kind: 'PyTorchJob',
  metadata: { name, namespace: NS },
  spec: {
    pytorchReplicaSpecs: {
      Master: { replicas: 1, restartPolicy: 'Never', template: pytorchTemplate(annotations) },
      Worker: {
        replicas: 2,
        restartPolicy: 'Never',
        template: pytorchTemplate({ 'fairway.dev/test-run-ms': '60000' }),
      },
    },
    ...extra,
  },
});

export const rayPod = (gpu: number, env: { name: string; value: string }[] = []) => {
  const spec = podSpec(gpu ? { gpu } : {});
  spec.containers[0].name = 'ray';
  spec.containers[0].image = 'rayproject/ray:2.46.0';
  spec.containers[0].env = env;
  delete spec.restartPolicy;
  return { spec };
};

/** A RayCluster spec: a head without GPU (its container's env `headEnv`) and 2 one-GPU workers of group `gpu`. */
export const rayClusterSpec = (headEnv: { name: string; value: string }[] = []) => ({
  headGroupSpec: { rayStartParams: {}, template: rayPod(0, headEnv) },
  workerGroupSpecs: [
    {
      groupName: 'gpu',
      replicas: 2,
      minReplicas: 0,
      maxReplicas: 4,
      rayStartParams: {},
      template: rayPod(1),
    },
  ],
});
