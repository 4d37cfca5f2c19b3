// Runtime probes of the Kubernetes backend: GPU utilization and GPU memory of running
// jobs' pods, read from Prometheus (the NVIDIA DCGM exporter's metrics) with two instant queries,
// mapped to Fairway jobs by the backend's pod naming and the tenant's namespace, and reported as
// 'utilization' events. Polled by the scheduling leader (a LeaderTask calls pollUtilization).
// Readings are what idle reclaim acts on, so a source that silently gives none is an outage.
import { z } from 'zod';
import type { BackendEvent } from '../port.js';

export interface PrometheusProbeSettings {
  /** Prometheus' base URL (FAIRWAY_PROBES_PROMETHEUS_URL overrides it); null: no probes are read. */
  prometheusUrl: string | null;
  /**
   * Instant queries, one series per pod, labelled with the namespace and pod. `{namespacePrefix}` is
   * replaced by the backend's namespace prefix (only Fairway's namespaces are asked for);
   * `{namespaceLabel}` and `{podLabel}` by the label names of each convention `podLabels` reads, the
   * forms joined with `or` (a query without them is sent as it is).
   */
  gpuQuery: string;
  /** GPU memory in use over GPU memory (0..1) per pod; '' to read none. */
  memoryQuery: string;
  /** Multiplies the GPU query's values into 0..1 (DCGM_FI_DEV_GPU_UTIL is in percent: 0.01). */
  gpuScale: number;
  /**
   * Which labels name a series' workload pod. 'exported': `exported_namespace` / `exported_pod`, as a
   * ServiceMonitor scrape of the DCGM exporter labels them (honorLabels false: `namespace` / `pod`
   * then name the exporter's own pod); 'plain': `namespace` / `pod` (a direct scrape, or honorLabels
   * true); 'auto' (default): both, the exported_* labels preferred where a series has both.
   */
  podLabels: PodLabelConvention;
  /** Explicit label names, over `podLabels`; null: by `podLabels`. When only one is set, the other is the plain one. */
  namespaceLabel: string | null;
  podLabel: string | null;
  /**
   * A running GPU job counts towards an outage (no series for any running GPU job) only once it has
   * been running this long: the exporter and Prometheus' scrape take a moment to show a new pod.
   */
  outageGraceMs: number;
  /** One query's limit. */
  timeoutMs: number;
}

export type PodLabelConvention = 'auto' | 'exported' | 'plain';

/** The label names of one convention: which label holds the namespace, which the pod. */
export interface PodLabelPair {
  namespace: string;
  pod: string;
}

const EXPORTED: PodLabelPair = { namespace: 'exported_namespace', pod: 'exported_pod' };
const PLAIN: PodLabelPair = { namespace: 'namespace', pod: 'pod' };

/** The conventions read, in order of preference. */
export function podLabelPairs(
  settings: Pick<PrometheusProbeSettings, 'podLabels' | 'namespaceLabel' | 'podLabel'>,
): PodLabelPair[] {
  if (settings.namespaceLabel !== null || settings.podLabel !== null)
    return [{ namespace: settings.namespaceLabel ?? PLAIN.namespace, pod: settings.podLabel ?? PLAIN.pod }];
  if (settings.podLabels === 'exported') return [EXPORTED];
  if (settings.podLabels === 'plain') return [PLAIN];
  return [EXPORTED, PLAIN];
}

/**
 * The query sent for a template: one form per convention, joined with `or`. The forms' series never
 * share a label set (each keeps only its own two labels), so `or` returns them all and one query
 * reads whichever convention the exporter's series follow.
 */
export function expandQuery(
  template: string,
  pairs: readonly PodLabelPair[],
  namespacePrefix: string,
): string {
  const withPrefix = template.replaceAll('{namespacePrefix}', namespacePrefix);
  if (!/\{(namespaceLabel|podLabel)\}/.test(withPrefix)) return withPrefix;
  const forms = pairs.map((p) =>
    withPrefix.replaceAll('{namespaceLabel}', p.namespace).replaceAll('{podLabel}', p.pod),
  );
  return forms.length === 1 ? forms[0]! : forms.map((f) => `(${f})`).join(' or ');
}

const BY = 'by ({namespaceLabel}, {podLabel})';
const NS = '{namespaceLabel}=~"{namespacePrefix}.*"';
export const DEFAULT_PROMETHEUS_PROBES: PrometheusProbeSettings = Object.freeze({
  prometheusUrl: null,
  gpuQuery: `avg ${BY} (DCGM_FI_DEV_GPU_UTIL{${NS}})`,
  memoryQuery: `sum ${BY} (DCGM_FI_DEV_FB_USED{${NS}}) / (sum ${BY} (DCGM_FI_DEV_FB_USED{${NS}}) + sum ${BY} (DCGM_FI_DEV_FB_FREE{${NS}}))`,
  gpuScale: 0.01,
  podLabels: 'auto',
  namespaceLabel: null,
  podLabel: null,
  outageGraceMs: 120_000,
  timeoutMs: 5000,
}) as PrometheusProbeSettings;

const labelName = z.string().regex(/^[a-zA-Z_][a-zA-Z0-9_]*$/, 'must be a Prometheus label name');
export const prometheusProbesSchema = z.strictObject({
  prometheusUrl: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).nullable(),
  gpuQuery: z.string().min(1).max(4000),
  memoryQuery: z.string().max(4000),
  gpuScale: z.number().positive(),
  podLabels: z.enum(['auto', 'exported', 'plain']),
  namespaceLabel: labelName.nullable(),
  podLabel: labelName.nullable(),
  outageGraceMs: z.number().int().min(0).max(3_600_000),
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
 * series without the labels or with a value that is not a finite number are skipped. A series is
 * read by the first convention (podLabelPairs) whose two labels it has, and a pod read by a
 * preferred convention keeps that reading over a later one's.
 */
export async function readPods(
  settings: PrometheusProbeSettings & { prometheusUrl: string },
  namespacePrefix: string,
  fetchFn: typeof fetch = fetch,
): Promise<PodReading[]> {
  const pairs = podLabelPairs(settings);
  const query = async (template: string) => {
    const url = new URL(
      'api/v1/query',
      settings.prometheusUrl.endsWith('/') ? settings.prometheusUrl : `${settings.prometheusUrl}/`,
    );
    url.searchParams.set('query', expandQuery(template, pairs, namespacePrefix));
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
  // Per pod and field, the convention its reading came from (index into pairs: lower is preferred).
  const rank = new Map<string, number>();
  const take = (series: typeof gpu, field: 'gpu' | 'memory', scale: number) => {
    for (const s of series) {
      const at = pairs.findIndex((p) => s.metric[p.namespace] && s.metric[p.pod]);
      if (at < 0) continue;
      const namespace = s.metric[pairs[at]!.namespace]!;
      const pod = s.metric[pairs[at]!.pod]!;
      const value = Number(s.value[1]) * scale;
      if (!Number.isFinite(value) || value < 0) continue;
      const key = `${namespace}/${pod}`;
      if ((rank.get(`${field}|${key}`) ?? at) < at) continue;
      rank.set(`${field}|${key}`, at);
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

/** Whether the probe source gives readings, for a metric and for operators (PrometheusProbes.health). */
export interface ProbeHealth {
  /** True while the source fails, or answers no series for any running GPU job past its grace. */
  outage: boolean;
  /** Why, while in an outage; null otherwise. */
  problem: string | null;
  /** When the current outage began (ms since the epoch); null when there is none. */
  since: number | null;
  /** Outages begun since the start (a counter). */
  outages: number;
  /** When the last poll ended; null before the first. */
  lastPollAt: number | null;
}

/**
 * The poller a Kubernetes backend keeps when a Prometheus URL is set: each `poll` reads the pods and
 * emits the jobs' reports. A source that fails, or that answers no series for any of the running
 * GPU jobs, is in an outage: idle reclaim then has nothing to act on, so the start and the end of
 * each outage are said once (never thrown) and `health()` tells it.
 */
export class PrometheusProbes {
  private state: ProbeHealth = { outage: false, problem: null, since: null, outages: 0, lastPollAt: null };
  /** Running GPU job → when this poller first saw it running (for outageGraceMs). */
  private readonly runningSince = new Map<string, number>();

  constructor(
    private readonly settings: PrometheusProbeSettings & { prometheusUrl: string },
    private readonly deps: {
      namespacePrefix: string;
      owner: (namespace: string, pod: string) => PodOwner;
      emit: (event: BackendEvent) => void;
      now: () => number;
      log: (message: string) => void;
      fetch?: typeof fetch;
      /** Ids of the running jobs that hold GPUs: their absence from every series is an outage. Absent: only failures are. */
      runningGpuJobs?: () => Iterable<string>;
    },
  ) {}

  health(): ProbeHealth {
    return { ...this.state };
  }

  async poll(): Promise<number> {
    const expected = this.expectedJobs();
    let readings: PodReading[];
    try {
      readings = await readPods(this.settings, this.deps.namespacePrefix, this.deps.fetch);
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      this.outage(`cannot read GPU probes from Prometheus (${message})`);
      return 0;
    }
    const reports = utilizationReports(readings, this.deps.owner, this.deps.now());
    for (const report of reports) this.deps.emit(report);
    if (expected > 0 && reports.length === 0) {
      const labels = podLabelPairs(this.settings)
        .map((p) => `${p.namespace}/${p.pod}`)
        .join(' or ');
      this.outage(
        `Prometheus answered no series for any of the ${expected} running GPU job(s) (pods read by the labels ${labels}: see probes.podLabels)`,
      );
    } else this.recovered();
    return reports.length;
  }

  /** How many running GPU jobs have run past the grace, so series are due for them. */
  private expectedJobs(): number {
    if (!this.deps.runningGpuJobs) return 0;
    const now = this.deps.now();
    const running = new Set(this.deps.runningGpuJobs());
    for (const id of this.runningSince.keys()) if (!running.has(id)) this.runningSince.delete(id);
    let due = 0;
    for (const id of running) {
      const since = this.runningSince.get(id) ?? now;
      this.runningSince.set(id, since);
      if (now - since >= this.settings.outageGraceMs) due++;
    }
    return due;
  }

  private outage(problem: string): void {
    const now = this.deps.now();
    if (!this.state.outage) {
      this.deps.log(`GPU probes: outage begins: ${problem}; idle reclaim has no readings until it ends`);
      this.state = { ...this.state, outage: true, since: now, outages: this.state.outages + 1 };
    }
    this.state = { ...this.state, problem, lastPollAt: now };
  }

  private recovered(): void {
    const now = this.deps.now();
    if (this.state.outage)
      this.deps.log(
        `GPU probes: outage ended after ${Math.round((now - (this.state.since ?? now)) / 1000)} s: reading probes from Prometheus again`,
      );
    this.state = { ...this.state, outage: false, problem: null, since: null, lastPollAt: now };
  }
}

/** The pod of a Fairway Job (`fw-<jobId>-<podSetIndex>-…`, naming.ts kubeJobName): its job id and pod set; null for any other name. */
export function podOfName(pod: string): { jobId: string; podSet: number } | null {
  const m = /^fw-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-(\d{1,3})-[a-z0-9-]+$/.exec(
    pod,
  );
  return m ? { jobId: m[1]!, podSet: Number(m[2]) } : null;
}
