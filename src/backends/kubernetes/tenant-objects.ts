// Per-tenant objects: the tenant's namespace and what isolates it (Pod Security, quota, defaults,
// network policy, a token-less service account), plus the cluster-wide best-effort PriorityClass.
// Pure builders. The objects are in @kubernetes/client-node's in-memory form (its V1* types), which
// its serializer turns into wire JSON: two fields are renamed there, LimitRangeItem `_default`
// (wire `default`) and NetworkPolicyIngressRule `_from` (wire `from`). Send them through client-node
// (KubernetesObjectApi, typed APIs) or convert with `toWireJson` first: a plain JSON `from` would be
// dropped by client-node's serializer, leaving an ingress rule that admits everyone.
import { isIP } from 'node:net';
import type {
  V1LimitRange,
  V1Namespace,
  V1NetworkPolicy,
  V1NetworkPolicyEgressRule,
  V1NetworkPolicyIngressRule,
  V1ObjectMeta,
  V1PriorityClass,
  V1ResourceQuota,
  V1ServiceAccount,
} from '@kubernetes/client-node';
import { LABEL_TENANT_ID, labelValue, MANAGED_BY, namespaceName } from './naming.js';
import type { KubernetesSettings } from './settings.js';

export interface KubeTenant {
  id: string;
  slug: string;
  isolationLevel: 'DEDICATED' | 'GUARANTEED' | 'ELASTIC' | 'BEST_EFFORT';
  /** Egress CIDRs; null = unrestricted egress. DNS (53 UDP/TCP to any namespace's kube-dns) is always
   * allowed when restricted.
   */
  egressAllowlist: string[] | null;
  /** The most the tenant can ever hold: resource name → integer count, e.g. { 'nvidia.com/gpu': 16,
   * 'nvidia.com/mig-1g.10gb': 14 }.
   */
  maxResources: Record<string, number>;
}

/** A built object: apiVersion, kind and a named metadata are always there. */
export type KubeObject = (
  | V1Namespace
  | V1ResourceQuota
  | V1LimitRange
  | V1NetworkPolicy
  | V1ServiceAccount
  | V1PriorityClass
) & {
  apiVersion: string;
  kind: string;
  metadata: V1ObjectMeta & { name: string };
};

export const RESOURCE_QUOTA_NAME = 'fairway-quota';
export const LIMIT_RANGE_NAME = 'fairway-defaults';
export const NETWORK_POLICY_NAME = 'fairway-isolation';
export const WORKLOAD_SERVICE_ACCOUNT = 'fairway-workload';

/**
 * Namespace first (the rest live in it), then ResourceQuota 'fairway-quota', LimitRange
 * 'fairway-defaults', NetworkPolicy 'fairway-isolation', ServiceAccount 'fairway-workload'.
 */
export function tenantObjects(t: KubeTenant, s: KubernetesSettings): KubeObject[] {
  const namespace = namespaceName(s, t.slug);
  const labels = tenantLabels(t);
  const meta = (name: string) => ({ name, namespace, labels: { ...labels } });
  const ns: KubeObject = {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: {
      name: namespace,
      labels: {
        ...labels,
        // Pod Security admission refuses (enforce), logs (audit) and warns about anything short of
        // "restricted".
        'pod-security.kubernetes.io/enforce': 'restricted',
        'pod-security.kubernetes.io/enforce-version': 'latest',
        'pod-security.kubernetes.io/audit': 'restricted',
        'pod-security.kubernetes.io/warn': 'restricted',
      },
    },
  };
  const quota: KubeObject = {
    apiVersion: 'v1',
    kind: 'ResourceQuota',
    metadata: meta(RESOURCE_QUOTA_NAME),
    spec: { hard: quotaHard(t) },
  };
  const limits: KubeObject = {
    apiVersion: 'v1',
    kind: 'LimitRange',
    metadata: meta(LIMIT_RANGE_NAME),
    spec: {
      limits: [
        {
          type: 'Container',
          _default: { cpu: s.containerDefaults.cpu, memory: s.containerDefaults.memory },
          defaultRequest: { cpu: s.containerDefaults.cpu, memory: s.containerDefaults.memory },
        },
      ],
    },
  };
  const policy: KubeObject = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: meta(NETWORK_POLICY_NAME),
    spec: {
      podSelector: {},
      policyTypes: ['Ingress', 'Egress'],
      // Only pods of this namespace may connect in: no other tenant's pods (and the Ray operator, to
      // the Ray dashboard port only).
      ingress: [{ _from: [{ podSelector: {} }] }, ...operatorIngress(s)],
      egress: egressRules(t),
    },
  };
  const account: KubeObject = {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: meta(WORKLOAD_SERVICE_ACCOUNT),
    automountServiceAccountToken: false,
  };
  return [ns, quota, limits, policy, account];
}

/** Cluster-wide class for BEST_EFFORT tenants' pods: below the default 0, never preempts others. */
export function bestEffortPriorityClass(s: KubernetesSettings): KubeObject {
  return {
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: s.bestEffortPriorityClass, labels: { ...MANAGED_BY } },
    value: -100,
    preemptionPolicy: 'Never',
    globalDefault: false,
    description: 'Fairway best-effort tenants: lowest priority, preemptible, never preempts.',
  };
}

export function tenantLabels(t: KubeTenant): Record<string, string> {
  return { ...MANAGED_BY, [LABEL_TENANT_ID]: labelValue(t.id) };
}

function quotaHard(t: KubeTenant): Record<string, string> {
  const hard: Record<string, string> = {};
  for (const [resource, count] of Object.entries(t.maxResources).sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (!Number.isInteger(count) || count < 0)
      throw new Error(`tenant ${t.slug}: max ${resource} must be a non-negative integer, got ${count}`);
    // Extended resources can only be limited on requests (Kubernetes has no overcommit for them).
    hard[`requests.${resource}`] = String(count);
  }
  return hard;
}

/** KubeRay's operator reaches a RayJob's head on the dashboard port (8265) to submit and poll the job. */
function operatorIngress(s: KubernetesSettings): V1NetworkPolicyIngressRule[] {
  if (!s.rayOperatorNamespaces.length) return [];
  return [
    {
      _from: [
        {
          namespaceSelector: {
            matchExpressions: [
              { key: 'kubernetes.io/metadata.name', operator: 'In', values: [...s.rayOperatorNamespaces] },
            ],
          },
        },
      ],
      ports: [{ protocol: 'TCP', port: 8265 }],
    },
  ];
}

function egressRules(t: KubeTenant): V1NetworkPolicyEgressRule[] {
  if (t.egressAllowlist === null) return [{}]; // one empty rule = all egress allowed
  const rules: V1NetworkPolicyEgressRule[] = [
    { to: [{ podSelector: {} }] },
    {
      to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
      ports: [
        { protocol: 'UDP', port: 53 },
        { protocol: 'TCP', port: 53 },
      ],
    },
  ];
  if (t.egressAllowlist.length > 0)
    rules.push({ to: t.egressAllowlist.map((cidr) => ({ ipBlock: { cidr: checkedCidr(t, cidr) } })) });
  return rules;
}

function checkedCidr(t: KubeTenant, cidr: string): string {
  const [address, bits, extra] = cidr.split('/');
  const family = isIP(address ?? '');
  const max = family === 4 ? 32 : 128;
  if (!family || extra !== undefined || !/^\d{1,3}$/.test(bits ?? '') || Number(bits) > max) {
    throw new Error(`tenant ${t.slug}: egress allowlist entry "${cidr}" is not a CIDR like 10.0.0.0/8`);
  }
  return cidr;
}
