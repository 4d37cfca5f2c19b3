// Settings of the Kubernetes backend: how Fairway names, labels and places what it creates,
// and which node resources feed which Fairway flavor. Parsed from a partial object (a YAML or
// JSON file) over the defaults; unknown keys are refused so a typo does not pass silently.
import { z } from 'zod';
import {
  DEFAULT_PROMETHEUS_PROBES,
  type PrometheusProbeSettings,
  prometheusProbesSchema,
} from '../prometheus/index.js';
import {
  DEFAULT_SERVICE_SIGNALS,
  type ServiceSignalSettings,
  serviceSignalsSchema,
} from './service-signals.js';

export interface FlavorMapping {
  /** Fairway flavor name (a Flavor row). */
  flavor: string;
  /** Extended resource the flavor's pods request: 'nvidia.com/gpu', 'nvidia.com/mig-1g.10gb',
   * 'nvidia.com/gpu.shared'.
   */
  resource: string;
  /** Only nodes whose GPU product label equals this feed the flavor (omit: any product). */
  gpuProduct?: string;
  /** Only nodes of this pool (pool label value) feed the flavor (omit: any pool). */
  pool?: string;
  /** Resource units per physical GPU on a node (7 for a 1g MIG profile on an A100, 4 for 4 time-slices).
   * Default 1.
   */
  unitsPerGpu?: number;
}

export interface KubernetesSettings {
  /** namespace = prefix + tenant slug. */
  namespacePrefix: string;
  gpuProductLabel: string;
  /** Nodes without this label are in pool 'default'. */
  poolLabel: string;
  /** First matching mapping wins per node. */
  flavors: FlavorMapping[];
  /**
   * Each pod is created behind a scheduling gate and released to the very node Fairway placed it on
   * (a hostname nodeSelector added to the gated pod, as Kueue's topology-aware scheduling does), so
   * kube-scheduler only binds what Fairway decided, whatever it would score. false: pods are only
   * held to the pool (or to the admitted nodes with pinToNodes) and kube-scheduler picks the node.
   */
  exactPlacement: boolean;
  /** Without exactPlacement: pods get required node affinity to the admitted nodes' hostnames. */
  pinToNodes: boolean;
  /**
   * Namespaces of workload operators that must reach a tenant's pods: KubeRay submits a RayJob
   * through the head's dashboard (TCP 8265) and polls it there. Only that port, only from them.
   */
  rayOperatorNamespaces: string[];
  /** Pod terminationGracePeriodSeconds. */
  preemptionGraceSeconds: number;
  /** Queues whose preempted jobs are deleted instead of suspended. */
  deleteOnPreemptQueues: string[];
  bestEffortPriorityClass: string;
  /** Job ttlSecondsAfterFinished. */
  finishedJobTtlSeconds: number;
  /** Admitted but pods not all running for this long → a 'not-running' event. */
  notRunningAfterMs: number;
  /** LimitRange default requests/limits of a container (Kubernetes quantities). */
  containerDefaults: { cpu: string; memory: string };
  /** One API call's limit before it is retried (a connection that never answers). */
  requestTimeoutMs: number;
  /** Watches are started again this often (from where they were), so a silently dead one is replaced. */
  watchRestartMs: number;
  /**
   * Each tenant's namespace, quota, limits, network policy and service account (and the best-effort
   * PriorityClass) are compared with the cluster this often, at a tenant sync, and what was edited or
   * deleted outside Fairway is applied again; 0: at every tenant sync.
   */
  tenantRepairMs: number;
  /** Runtime probes read from Prometheus (DCGM exporter metrics); off while `probes.prometheusUrl` is null. */
  probes: PrometheusProbeSettings;
  /** Where inference services' load (requests per second, p95 latency, in flight, GPU utilization) is read. */
  serviceSignals: ServiceSignalSettings;
}

export const DEFAULT_KUBERNETES_SETTINGS: KubernetesSettings = Object.freeze({
  namespacePrefix: 'fairway-',
  gpuProductLabel: 'nvidia.com/gpu.product',
  poolLabel: 'fairway.dev/pool',
  flavors: [],
  exactPlacement: true,
  pinToNodes: false,
  rayOperatorNamespaces: ['ray-system'],
  preemptionGraceSeconds: 30,
  deleteOnPreemptQueues: [],
  bestEffortPriorityClass: 'fairway-best-effort',
  finishedJobTtlSeconds: 86400,
  notRunningAfterMs: 600000,
  containerDefaults: { cpu: '1', memory: '2Gi' },
  requestTimeoutMs: 10_000,
  watchRestartMs: 300_000,
  tenantRepairMs: 60_000,
  probes: DEFAULT_PROMETHEUS_PROBES,
  serviceSignals: DEFAULT_SERVICE_SIGNALS,
}) as KubernetesSettings;

// Shapes Kubernetes itself enforces, checked here so a bad setting fails at start-up, not at the first Job.
const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const QUALIFIED_NAME =
  /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/;
const QUANTITY = /^[+]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$/;

const labelKey = z.string().regex(QUALIFIED_NAME, 'must be a label key like "example.com/name"');
const quantity = z.string().regex(QUANTITY, 'must be a Kubernetes quantity like "500m", "2" or "4Gi"');

const flavorMapping = z.strictObject({
  flavor: z.string().min(1),
  resource: labelKey,
  gpuProduct: z.string().min(1).optional(),
  pool: z.string().min(1).optional(),
  unitsPerGpu: z.number().int().min(1).optional(),
});

const settingsSchema = z.strictObject({
  namespacePrefix: z
    .string()
    .max(40, 'leaves too little of the 63-character namespace name for the tenant slug')
    .regex(
      /^([a-z0-9][-a-z0-9]*)?$/,
      'must be lowercase letters, digits and "-", starting with a letter or digit',
    ),
  gpuProductLabel: labelKey,
  poolLabel: labelKey,
  flavors: z.array(flavorMapping),
  exactPlacement: z.boolean(),
  pinToNodes: z.boolean(),
  rayOperatorNamespaces: z.array(z.string().regex(DNS_LABEL, 'must be a namespace name (a DNS label)')),
  preemptionGraceSeconds: z.number().int().min(0),
  deleteOnPreemptQueues: z.array(z.string().min(1)),
  bestEffortPriorityClass: z
    .string()
    .max(253)
    .regex(DNS_LABEL, 'must be a DNS label (lowercase letters, digits, "-")'),
  finishedJobTtlSeconds: z.number().int().min(0),
  notRunningAfterMs: z.number().int().min(1),
  containerDefaults: z.strictObject({ cpu: quantity, memory: quantity }),
  requestTimeoutMs: z.number().int().min(100).max(600_000),
  watchRestartMs: z.number().int().min(1000).max(3_600_000),
  tenantRepairMs: z.number().int().min(0).max(86_400_000),
  probes: prometheusProbesSchema,
  serviceSignals: serviceSignalsSchema,
});

/** zod-validated parse of a partial settings object (from a YAML/JSON file); throws a readable Error. */
export function parseKubernetesSettings(raw: unknown): KubernetesSettings {
  const given = raw ?? {};
  if (typeof given !== 'object' || Array.isArray(given))
    throw new Error('Kubernetes settings: expected an object of settings');
  const partial = given as Record<string, unknown>;
  const merged = {
    ...DEFAULT_KUBERNETES_SETTINGS,
    ...partial,
    // containerDefaults may be given in part: { memory: '4Gi' } keeps the default cpu.
    containerDefaults: {
      ...DEFAULT_KUBERNETES_SETTINGS.containerDefaults,
      ...(partial.containerDefaults as object | undefined),
    },
    // Likewise the probes: { prometheusUrl: … } keeps the default queries.
    probes: { ...DEFAULT_KUBERNETES_SETTINGS.probes, ...(partial.probes as object | undefined) },
    serviceSignals: mergedSignals(partial.serviceSignals),
  };
  const result = settingsSchema.safeParse(merged);
  if (!result.success) throw new Error(`Kubernetes settings are invalid:\n${z.prettifyError(result.error)}`);
  const settings = result.data as KubernetesSettings;
  const seen = new Set<string>();
  for (const m of settings.flavors) {
    const key = `${m.flavor}\u0000${m.resource}\u0000${m.gpuProduct ?? ''}\u0000${m.pool ?? ''}`;
    if (seen.has(key))
      throw new Error(
        `Kubernetes settings are invalid: flavor mapping for "${m.flavor}" (${m.resource}) is given twice`,
      );
    seen.add(key);
  }
  return settings;
}

/** Service signal settings given in part keep the defaults of the rest (queries and metric names one by one). */
function mergedSignals(given: unknown): unknown {
  if (given === undefined || given === null || typeof given !== 'object' || Array.isArray(given))
    return given ?? DEFAULT_SERVICE_SIGNALS;
  const g = given as Partial<Record<keyof ServiceSignalSettings, unknown>>;
  const sub = (key: 'queries' | 'endpointMetrics') =>
    g[key] && typeof g[key] === 'object' && !Array.isArray(g[key])
      ? { ...DEFAULT_SERVICE_SIGNALS[key], ...(g[key] as object) }
      : (g[key] ?? DEFAULT_SERVICE_SIGNALS[key]);
  return {
    ...DEFAULT_SERVICE_SIGNALS,
    ...g,
    queries: sub('queries'),
    endpointMetrics: sub('endpointMetrics'),
  };
}
