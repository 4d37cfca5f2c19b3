/**
 * What the RayCluster controller (raycluster.ts) builds and counts: its pods (labels, env, the
 * wait-gcs-ready init container, the metrics port), the desired worker count of a group, and the desired
 * resources as quantities.
 */
import { parseQuantity } from '../scheduling.js';
import { ownerReference } from './common.js';

export const RAY_CLUSTER = 'ray.io/cluster';
export const RAY_NODE_TYPE = 'ray.io/node-type';
export const RAY_GROUP = 'ray.io/group';
export const MAX_INT32 = 2147483647;

export const headServiceName = (name: string) => `${name}-head-svc`;

export function desiredWorkers(group: any): number {
  if (group.suspend === true) return 0;
  const min = group.minReplicas ?? 0;
  const max = group.maxReplicas ?? MAX_INT32;
  const replicas = group.replicas === undefined || group.replicas < min ? min : Math.min(group.replicas, max);
  return replicas * (group.numOfHosts ?? 1);
}

/** Base units → a quantity string as resource.Quantity prints a sum. */
export function quantity(n: number, binary: boolean): string {
  if (n === 0) return '0';
  if (binary) {
    for (const [suffix, f] of [
      ['Ei', 2 ** 60],
      ['Pi', 2 ** 50],
      ['Ti', 2 ** 40],
      ['Gi', 2 ** 30],
      ['Mi', 2 ** 20],
      ['Ki', 2 ** 10],
    ] as const)
      if (n % f === 0) return `${n / f}${suffix}`;
    return String(n);
  }
  return Number.isInteger(n) ? String(n) : `${Math.round(n * 1000)}m`;
}

export function podResources(spec: any): Map<string, number> {
  const total = new Map<string, number>();
  for (const c of spec?.containers ?? []) {
    const r = { ...c.resources?.limits, ...c.resources?.requests };
    for (const [k, v] of Object.entries(r)) total.set(k, (total.get(k) ?? 0) + parseQuantity(v as string));
  }
  return total;
}

/** buildHeadPod / buildWorkerPod: a Ray node's pod (the Ray container is the first). */
export function podFor(rc: any, type: 'head' | 'worker', group?: any): any {
  const { name, namespace } = rc.metadata;
  const spec = type === 'head' ? rc.spec.headGroupSpec : group;
  const template = structuredClone(spec.template ?? {});
  const podSpec = template.spec ?? {};
  const containers: any[] = podSpec.containers ?? [];
  const ray = containers[0] ?? {};
  const port =
    spec.rayStartParams?.port ??
    (type === 'head' ? '6379' : (rc.spec.headGroupSpec?.rayStartParams?.port ?? '6379'));
  const fqdn = `${headServiceName(name)}.${namespace}.svc.cluster.local`;
  const groupName = type === 'head' ? 'headgroup' : group.groupName;
  const labels: Record<string, string> = {
    'ray.io/is-ray-node': 'yes',
    'ray.io/identifier': `${name}-${type}`,
    'app.kubernetes.io/name': 'kuberay',
    'app.kubernetes.io/created-by': 'kuberay-operator',
    ...template.metadata?.labels,
    ...spec.labels,
    [RAY_CLUSTER]: name,
    [RAY_NODE_TYPE]: type,
    [RAY_GROUP]: groupName,
  };
  if (type === 'worker')
    podSpec.initContainers = [
      ...(podSpec.initContainers ?? []),
      {
        name: 'wait-gcs-ready',
        image: ray.image,
        ...(ray.imagePullPolicy ? { imagePullPolicy: ray.imagePullPolicy } : {}),
        command: ['/bin/bash', '-c', '--'],
        args: [
          `until ray health-check --address ${fqdn}:${port} > /dev/null 2>&1; do echo "Waiting for GCS to be ready."; sleep 5; done`,
        ],
        ...(ray.securityContext ? { securityContext: structuredClone(ray.securityContext) } : {}),
        ...(ray.env ? { env: structuredClone(ray.env) } : {}),
        resources: { limits: { cpu: '200m', memory: '256Mi' }, requests: { cpu: '200m', memory: '256Mi' } },
      },
    ];
  if (!(ray.ports ?? []).some((p: any) => p.name === 'metrics'))
    ray.ports = [...(ray.ports ?? []), { name: 'metrics', containerPort: 8080 }];
  const params = {
    ...(type === 'head'
      ? { 'dashboard-agent-listen-port': '52365', 'metrics-export-port': '8080' }
      : { address: `${fqdn}:${port}`, 'metrics-export-port': '8080' }),
    ...spec.rayStartParams,
  };
  const startCmd = `ray start ${type === 'head' ? '--head ' : ''}${Object.entries(params)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `--${k}=${v}`)
    .join(' ')} --block`;
  const has = (n: string) => (ray.env ?? []).some((e: any) => e.name === n);
  const fieldRef = (n: string, fieldPath: string) => ({ name: n, valueFrom: { fieldRef: { fieldPath } } });
  const env: any[] = [...(ray.env ?? [])];
  const ip = type === 'head' ? '127.0.0.1' : fqdn;
  if (type === 'worker')
    env.push({ name: 'FQ_RAY_IP', value: fqdn }, { name: 'RAY_IP', value: headServiceName(name) });
  env.push(
    fieldRef('RAY_CLUSTER_NAME', `metadata.labels['${RAY_CLUSTER}']`),
    fieldRef('RAY_CLUSTER_NAMESPACE', 'metadata.namespace'),
    fieldRef('RAY_CLOUD_INSTANCE_ID', 'metadata.name'),
    fieldRef('RAY_NODE_TYPE_NAME', `metadata.labels['${RAY_GROUP}']`),
    { name: 'KUBERAY_GEN_RAY_START_CMD', value: startCmd },
  );
  if (!has('RAY_PORT')) env.push({ name: 'RAY_PORT', value: String(port) });
  if (!has('RAY_ADDRESS')) env.push({ name: 'RAY_ADDRESS', value: `${ip}:${port}` });
  if (!has('RAY_USAGE_STATS_KUBERAY_IN_USE'))
    env.push({ name: 'RAY_USAGE_STATS_KUBERAY_IN_USE', value: '1' });
  if (type === 'head') {
    const crd = rc.metadata.labels?.['ray.io/originated-from-crd'] ?? 'RayCluster';
    env.push({ name: 'RAY_USAGE_STATS_EXTRA_TAGS', value: `kuberay_version=nightly;kuberay_crd=${crd}` });
  }
  if (!has('RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE'))
    env.push({ name: 'RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE', value: '1' });
  ray.env = env;
  containers[0] = ray;
  podSpec.containers = containers;
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName:
        type === 'head'
          ? `${name.slice(0, 50)}-head-`
          : `${`${name}-${group.groupName}`.slice(0, 50)}-worker-`,
      namespace,
      labels,
      annotations: { ...template.metadata?.annotations, 'ray.io/ft-enabled': 'false' },
      ownerReferences: [ownerReference(rc)],
    },
    spec: podSpec,
  };
}
