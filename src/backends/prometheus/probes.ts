// Runtime probes of the Kubernetes backend: GPU utilization and GPU memory of running
// jobs' pods, read from Prometheus (the NVIDIA DCGM exporter's metrics) with two instant queries,
// mapped to Fairway jobs by the backend's pod naming and the tenant's namespace, and reported as
// 'utilization' events. Polled by the scheduling leader (a LeaderTask calls pollUtilization).
import { z } from 'zod';
import type { BackendEvent } from '../port.js';

export interface PrometheusProbeSettings {
  /** Prometheus' base URL (FAIRWAY_PROBES_PROMETHEUS_URL overrides it); null: no probes are read. */
  prometheusUrl: string | null;
  /**
   * Instant queries, one series per pod, labelled with the namespace and pod (the labels below).
   * `{namespacePrefix}` is replaced by the backend's namespace prefix (only Fairway's namespaces are asked for).
   */
  gpuQuery: string;
  /** GPU memory in use over GPU memory (0..1) per pod; '' to read none. */
  memoryQuery: string;
  /** Multiplies the GPU query's values into 0..1 (DCGM_FI_DEV_GPU_UTIL is in percent: 0.01). */
  gpuScale: number;
  namespaceLabel: string;
  podLabel: string;
  /** One query's limit. */
  timeoutMs: number;
}

const NS = 'namespace=~"{namespacePrefix}.*"';
export const DEFAULT_PROMETHEUS_PROBES: PrometheusProbeSettings = Object.freeze({
  prometheusUrl: null,
  gpuQuery: `avg by (namespace, pod) (DCGM_FI_DEV_GPU_UTIL{${NS}})`,
  memoryQuery: `sum by (namespace, pod) (DCGM_FI_DEV_FB_USED{${NS}}) / (sum by (namespace, pod) (DCGM_FI_DEV_FB_USED{${NS}}) + sum by (namespace, pod) (DCGM_FI_DEV_FB_FREE{${NS}}))`,
  gpuScale: 0.01,
  namespaceLabel: 'namespace',
  podLabel: 'pod',
  timeoutMs: 5000,
}) as PrometheusProbeSettings;

const labelName = z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, 'must be a Prometheus label name');
export const prometheusProbesSchema = z.strictObject({
  prometheusUrl: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).nullable(),
  gpuQuery: z.string().min(1).max(4000),
  memoryQuery: z.string().max(4000),
  gpuScale: z.number().positive(),
  namespaceLabel: labelName,
  podLabel: labelName,
  timeoutMs: z.number().int().min(100).max(120_000),
});

/** One pod's reading; null where the query said nothing of it. */
export interface PodReading {
  namespace: string;
  pod: string;
  gpu: number | null;
  memory: number | null;
}

/** Whose a pod is: the job, and how many GPUs the pod holds (its weight in the job's mean). */
export type PodOwner = { jobId: string; gpus: number } | null;

// The /api/v1/query answer (https://prometheus.io/docs/prometheus/latest/querying/api/#instant-queries).
const vectorAnswer = z.object({
  status: z.literal('success'),
  data: z.object({
    resultType: z.literal('vector'),
    result: z.array(
      z.object({ metric: z.record(z.string(), z.string()), value: z.tuple([z.number(), z.string()]) }),
    ),
  }),
});

export class PrometheusAnswerError extends Error {}

/**
 * Reads the two queries and returns one reading per pod. Throws when Prometheus does not answer or
 * answers something that is not a vector (the caller says so and asks again at the next poll);
 * series without the labels or with a value that is not a finite number are skipped.
 */
export async function readPods(
  settings: PrometheusProbeSettings & { prometheusUrl: string },
  namespacePrefix: string,
  fetchFn: typeof fetch = fetch,
): Promise<PodReading[]> {
  const query = async (template: string) => {
    const url = new URL(
      'api/v1/query',
      settings.prometheusUrl.endsWith('/') ? settings.prometheusUrl : `${settings.prometheusUrl}/`,
    );
    url.searchParams.set('query', template.replaceAll('{namespacePrefix}', namespacePrefix));
    const response = await fetchFn(url, {
      signal: AbortSignal.timeout(settings.timeoutMs),
      headers: { accept: 'application/json' },
    });
    const text = await response.text();
    if (!response.ok)
      throw new PrometheusAnswerError(`Prometheus answered ${response.status} to ${url.pathname}`);
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new PrometheusAnswerError('Prometheus answered something that is not JSON');
    }
    const parsed = vectorAnswer.safeParse(body);
    if (!parsed.success)
      throw new PrometheusAnswerError('Prometheus answered something that is not an instant vector');
    return parsed.data.data.result;
  };
  const [gpu, memory] = await Promise.all([
    query(settings.gpuQuery),
    settings.memoryQuery ? query(settings.memoryQuery) : Promise.resolve([]),
  ]);
  const pods = new Map<string, PodReading>();
  const take = (series: typeof gpu, field: 'gpu' | 'memory', scale: number) => {
    for (const s of series) {
      const namespace = s.metric[settings.namespaceLabel];
      const pod = s.metric[settings.podLabel];
      const value = Number(s.value[1]) * scale;
      if (!namespace || !pod || !Number.isFinite(value) || value < 0) continue;
      const key = `${namespace}/${pod}`;
      const reading = pods.get(key) ?? { namespace, pod, gpu: null, memory: null };
      reading[field] = Math.min(1, value);
      pods.set(key, reading);
    }
  };
  take(gpu, 'gpu', settings.gpuScale);
  take(memory, 'memory', 1);
  return [...pods.values()];
}

/**
 * Readings → one report per job: the GPU-weighted mean over its pods that have a GPU reading (memory
 * likewise over those with a memory reading). A pod no job owns (`owner` null: not Fairway's, not
 * running, or in another namespace than its job's tenant's) is ignored.
 */
export function utilizationReports(
  readings: readonly PodReading[],
  owner: (namespace: string, pod: string) => PodOwner,
  at: number,
): Extract<BackendEvent, { type: 'utilization' }>[] {
  const jobs = new Map<string, { gpu: number; gpuWeight: number; memory: number; memoryWeight: number }>();
  for (const r of readings) {
    const found = owner(r.namespace, r.pod);
    if (!found || !(found.gpus > 0)) continue;
    const acc = jobs.get(found.jobId) ?? { gpu: 0, gpuWeight: 0, memory: 0, memoryWeight: 0 };
    if (r.gpu !== null) {
      acc.gpu += r.gpu * found.gpus;
      acc.gpuWeight += found.gpus;
    }
    if (r.memory !== null) {
      acc.memory += r.memory * found.gpus;
      acc.memoryWeight += found.gpus;
    }
    jobs.set(found.jobId, acc);
  }
  const out: Extract<BackendEvent, { type: 'utilization' }>[] = [];
  for (const [jobId, acc] of jobs) {
    if (!acc.gpuWeight) continue;
    out.push({
      type: 'utilization',
      jobId,
      at,
      gpuUtilization: acc.gpu / acc.gpuWeight,
      ...(acc.memoryWeight ? { memoryUtilization: acc.memory / acc.memoryWeight } : {}),
    });
  }
  return out;
}

/**
 * The poller a Kubernetes backend keeps when a Prometheus URL is set: each `poll` reads the pods and
 * emits the jobs' reports; a failure is said once per streak (and when it ends), never thrown.
 */
export class PrometheusProbes {
  private failing: string | null = null;

  constructor(
    private readonly settings: PrometheusProbeSettings & { prometheusUrl: string },
    private readonly deps: {
      namespacePrefix: string;
      owner: (namespace: string, pod: string) => PodOwner;
      emit: (event: BackendEvent) => void;
      now: () => number;
      log: (message: string) => void;
      fetch?: typeof fetch;
    },
  ) {}

  async poll(): Promise<number> {
    let readings: PodReading[];
    try {
      readings = await readPods(this.settings, this.deps.namespacePrefix, this.deps.fetch);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (this.failing !== message)
        this.deps.log(`cannot read GPU probes from Prometheus (${message}); asking again at the next poll`);
      this.failing = message;
      return 0;
    }
    if (this.failing !== null) this.deps.log('reading GPU probes from Prometheus again');
    this.failing = null;
    const reports = utilizationReports(readings, this.deps.owner, this.deps.now());
    for (const report of reports) this.deps.emit(report);
    return reports.length;
  }
}

/** The pod of a Fairway Job (`fw-<jobId>-<podSetIndex>-…`, naming.ts kubeJobName): its job id and pod set; null for any other name. */
export function podOfName(pod: string): { jobId: string; podSet: number } | null {
  const m = /^fw-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-(\d{1,3})-[a-z0-9-]+$/.exec(
    pod,
  );
  return m ? { jobId: m[1]!, podSet: Number(m[2]) } : null;
}
