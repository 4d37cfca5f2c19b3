/**
 * What the tests of the test API server share (test/backends/kubernetes/test-api-server*.test.ts):
 * a server with one 4-GPU node and the namespace `fairway-acme`, client-node clients for it, and
 * builders of pods, Jobs, Deployments and nodes whose pods satisfy Pod Security "restricted".
 */
import {
  ApiException,
  BatchV1Api,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  type V1Deployment,
  type V1Job,
} from '@kubernetes/client-node';
import { type KubeApiServer, type KubeApiServerOptions, startKubeApiServer } from './index.js';

export const NS = 'fairway-acme';

export interface TestCluster {
  server: KubeApiServer;
  kc: KubeConfig;
  api: KubernetesObjectApi;
  batch: BatchV1Api;
  core: CoreV1Api;
}

/** A server (kubelet start delay 10 ms) with the namespace NS and the node gpu-1 (4 GPUs). */
export async function startTestCluster(options: KubeApiServerOptions = {}): Promise<TestCluster> {
  const server = await startKubeApiServer({ kubelet: { startDelayMs: 10 }, ...options });
  const kc = new KubeConfig();
  kc.loadFromString(server.kubeconfigYaml);
  const api = KubernetesObjectApi.makeApiClient(kc);
  await api.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  server.put(node('gpu-1', 4));
  return { server, kc, api, batch: kc.makeApiClient(BatchV1Api), core: kc.makeApiClient(CoreV1Api) };
}

export async function waitFor<T>(
  what: string,
  probe: () => T | undefined | false,
  timeoutMs = 3000,
): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export async function apiError(promise: Promise<unknown>): Promise<{ code: number; body: any }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ApiException) return { code: error.code, body: JSON.parse(error.body as string) };
    throw error;
  }
  throw new Error('expected the request to fail');
}

/** A pod spec that satisfies Pod Security "restricted". */
export function podSpec(opts: { gpu?: number } = {}): any {
  return {
    restartPolicy: 'Never',
    securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
    tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
    containers: [
      {
        name: 'main',
        image: 'busybox:1.36',
        securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        resources: {
          limits: { cpu: '1', memory: '1Gi', ...(opts.gpu ? { 'nvidia.com/gpu': String(opts.gpu) } : {}) },
        },
      },
    ],
  };
}

export function job(
  name: string,
  opts: {
    annotations?: Record<string, string>;
    gpu?: number;
    pods?: number;
    extra?: Record<string, unknown>;
  } = {},
): V1Job & KubernetesObject {
  const pods = opts.pods ?? 1;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: NS },
    spec: {
      parallelism: pods,
      completions: pods,
      ...(pods > 1 ? { completionMode: 'Indexed' } : {}),
      ...opts.extra,
      template: {
        metadata: { labels: { app: name }, annotations: opts.annotations ?? {} },
        spec: podSpec({ gpu: opts.gpu }),
      },
    },
  } as V1Job & KubernetesObject;
}

/** A Deployment (apps/v1) of `replicas` restricted-compliant pods labelled app=<name>, restartPolicy Always. */
export function deployment(
  name: string,
  replicas: number | undefined,
  opts: { annotations?: Record<string, string>; grace?: number; probe?: object } = {},
): V1Deployment & KubernetesObject {
  const spec = podSpec();
  const container = { ...spec.containers[0], ...(opts.probe ? { readinessProbe: opts.probe } : {}) };
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: NS, labels: { app: name } },
    spec: {
      ...(replicas !== undefined ? { replicas } : {}),
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name }, annotations: opts.annotations ?? {} },
        spec: {
          ...spec,
          restartPolicy: 'Always',
          ...(opts.grace !== undefined ? { terminationGracePeriodSeconds: opts.grace } : {}),
          containers: [container],
        },
      },
    },
  };
}

export function pod(name: string, annotations: Record<string, string> = {}, spec: any = podSpec({ gpu: 1 })) {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: NS, annotations }, spec };
}

export function node(name: string, gpus: number, cpu = '32') {
  const resources = { cpu, memory: '256Gi', 'nvidia.com/gpu': String(gpus), pods: '110' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    spec: { taints: [{ key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' }] },
    status: { capacity: resources, allocatable: resources, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

export const condition = (obj: any, type: string) =>
  obj?.status?.conditions?.find((c: any) => c.type === type && c.status === 'True');
