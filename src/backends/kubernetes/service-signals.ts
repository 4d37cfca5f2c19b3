// An inference service's load on Kubernetes, for the autoscaler: requests per second, p95 latency,
// requests in flight and GPU utilization, read either from Prometheus (configurable instant queries)
// or from each serving pod's own metrics endpoint (Prometheus text format: a request counter, an
// in-flight gauge, a latency histogram, optionally a GPU utilization gauge). The endpoint's counters
// are read as differences from the previous scrape of the same pod, as Prometheus' rate() does.
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { z } from 'zod';

export interface ServiceSignalSettings {
  /** 'prometheus': the queries below; 'endpoint': each serving pod's metrics; 'none': no signal (replicas stay within bounds). */
  source: 'prometheus' | 'endpoint' | 'none';
  /** Prometheus' base URL; null: the probes' (probes.prometheusUrl). */
  prometheusUrl: string | null;
  /**
   * Instant queries, one value each; '' reads none. `{namespace}`, `{service}` (the Kubernetes Service's
   * name), `{pods}` (the serving pods' names as a regular expression) and `{window}` (the autoscaler's
   * interval, e.g. `15s`) are replaced.
   */
  queries: { rps: string; p95Ms: string; inFlight: string; gpuUtilization: string };
  /** The pod's metrics URL; `{podIP}`, `{port}` (the service's), `{pod}` and `{namespace}` are replaced. */
  endpointUrl: string;
  /** Metric names on the endpoint ('' reads none). The histogram is in seconds. */
  endpointMetrics: { requests: string; inFlight: string; latencySeconds: string; gpuUtilization: string };
  /** One query's or scrape's limit. */
  timeoutMs: number;
}

export const DEFAULT_SERVICE_SIGNALS: ServiceSignalSettings = {
  source: 'none',
  prometheusUrl: null,
  queries: {
    rps: 'sum(rate(http_requests_total{namespace="{namespace}",service="{service}"}[{window}]))',
    p95Ms:
      '1000 * histogram_quantile(0.95, sum by (le) (rate(http_request_duration_seconds_bucket{namespace="{namespace}",service="{service}"}[{window}])))',
    inFlight: 'sum(http_requests_in_flight{namespace="{namespace}",service="{service}"})',
    gpuUtilization:
      'avg(DCGM_FI_DEV_GPU_UTIL{exported_namespace="{namespace}",exported_pod=~"{pods}"}) / 100',
  },
  endpointUrl: 'http://{podIP}:{port}/metrics',
  endpointMetrics: {
    requests: 'http_requests_total',
    inFlight: 'http_requests_in_flight',
    latencySeconds: 'http_request_duration_seconds',
    gpuUtilization: '',
  },
  timeoutMs: 3000,
};

export const serviceSignalsSchema = z.strictObject({
  source: z.enum(['prometheus', 'endpoint', 'none']),
  prometheusUrl: z.string().url().nullable(),
  queries: z.strictObject({
    rps: z.string(),
    p95Ms: z.string(),
    inFlight: z.string(),
    gpuUtilization: z.string(),
  }),
  endpointUrl: z.string().min(1),
  endpointMetrics: z.strictObject({
    requests: z.string(),
    inFlight: z.string(),
    latencySeconds: z.string(),
    gpuUtilization: z.string(),
  }),
  timeoutMs: z.number().int().min(100).max(120_000),
});

export interface SignalPod {
  namespace: string;
  name: string;
  ip: string | undefined;
}

export interface SignalQuery {
  namespace: string;
  /** The Kubernetes Service's name. */
  service: string;
  port: number;
  pods: readonly SignalPod[];
  /** The span the reading covers, ending at `at` (ms): the queries' `{window}`, requests counted over it. */
  windowMs: number;
  at: number;
}

export interface SignalReading {
  rps: number;
  p95Ms: number | null;
  inFlight: number;
  gpuUtilization: number | null;
  requests: number;
}

type Parsed = {
  name: string;
  type: string;
  metrics: { value?: string; buckets?: Record<string, string>; count?: string }[];
}[];

/** The value below which 95% of the observations fall, from cumulative buckets (as histogram_quantile does). */
export function histogramQuantile(q: number, buckets: ReadonlyMap<number, number>): number | null {
  const bounds = [...buckets.keys()].sort((a, b) => a - b);
  const total = buckets.get(Number.POSITIVE_INFINITY) ?? (bounds.length ? buckets.get(bounds.at(-1)!)! : 0);
  if (!total || total <= 0) return null;
  const rank = q * total;
  let lowerBound = 0;
  let lowerCount = 0;
  for (const bound of bounds) {
    const count = buckets.get(bound)!;
    if (count >= rank) {
      if (bound === Number.POSITIVE_INFINITY) return lowerBound;
      if (count === lowerCount) return bound;
      return lowerBound + ((bound - lowerBound) * (rank - lowerCount)) / (count - lowerCount);
    }
    lowerBound = bound;
    lowerCount = count;
  }
  return lowerBound;
}

interface Scrape {
  at: number;
  requests: number;
  buckets: Map<number, number>;
}

export class ServiceSignals {
  /** The previous scrape of each pod (`namespace/service/pod`), for counter differences. */
  private readonly last = new Map<string, Scrape>();

  constructor(
    private readonly settings: ServiceSignalSettings,
    private readonly probesUrl: string | null,
    private readonly fetchFn: typeof fetch = fetch,
  ) {}

  get enabled(): boolean {
    return this.settings.source !== 'none';
  }

  /** The load now; null when the source gave nothing usable (the autoscaler then holds). */
  async read(query: SignalQuery): Promise<SignalReading | null> {
    if (this.settings.source === 'prometheus') return this.fromPrometheus(query);
    if (this.settings.source === 'endpoint') return this.fromEndpoints(query);
    return null;
  }

  private async fromPrometheus(query: SignalQuery): Promise<SignalReading | null> {
    const base = this.settings.prometheusUrl ?? this.probesUrl;
    if (!base) return null;
    const fill = (template: string) =>
      template
        .replaceAll('{namespace}', query.namespace)
        .replaceAll('{service}', query.service)
        .replaceAll(
          '{pods}',
          query.pods.map((p) => p.name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|') || '^$',
        )
        .replaceAll('{window}', `${Math.max(1, Math.round(query.windowMs / 1000))}s`);
    const one = async (template: string): Promise<number | null> => {
      if (!template) return null;
      const url = new URL('/api/v1/query', base);
      url.searchParams.set('query', fill(template));
      url.searchParams.set('time', String(query.at / 1000));
      const response = await this.fetchFn(url, { signal: AbortSignal.timeout(this.settings.timeoutMs) });
      if (!response.ok) throw new Error(`Prometheus answered ${response.status} to a service signal query`);
      const body = (await response.json()) as { data?: { result?: { value?: [number, string] }[] } };
      const raw = body.data?.result?.[0]?.value?.[1];
      const value = raw === undefined ? null : Number(raw);
      return value === null || !Number.isFinite(value) ? null : value;
    };
    const q = this.settings.queries;
    const [rps, p95Ms, inFlight, gpu] = await Promise.all([
      one(q.rps),
      one(q.p95Ms),
      one(q.inFlight),
      one(q.gpuUtilization),
    ]);
    if (rps === null && p95Ms === null && inFlight === null && gpu === null) return null;
    return {
      rps: rps ?? 0,
      p95Ms,
      inFlight: inFlight ?? 0,
      gpuUtilization: gpu,
      requests: Math.round((rps ?? 0) * (query.windowMs / 1000)),
    };
  }

  private async fromEndpoints(query: SignalQuery): Promise<SignalReading | null> {
    const m = this.settings.endpointMetrics;
    let requests = 0;
    let seconds = 0;
    let inFlight = 0;
    let gpuSum = 0;
    let gpuPods = 0;
    let read = 0;
    const buckets = new Map<number, number>();
    const seen = new Set<string>();
    await Promise.all(
      query.pods.map(async (pod) => {
        if (!pod.ip) return;
        const key = `${query.namespace}/${query.service}/${pod.name}`;
        seen.add(key);
        const url = this.settings.endpointUrl
          .replaceAll('{podIP}', pod.ip)
          .replaceAll('{port}', String(query.port))
          .replaceAll('{pod}', pod.name)
          .replaceAll('{namespace}', pod.namespace);
        let parsed: Parsed;
        try {
          const response = await this.fetchFn(url, { signal: AbortSignal.timeout(this.settings.timeoutMs) });
          if (!response.ok) return;
          parsed = parsePrometheusTextFormat(await response.text()) as Parsed;
        } catch {
          return; // a pod that does not answer is left out of this reading
        }
        read++;
        const family = (name: string) => (name ? parsed.find((f) => f.name === name) : undefined);
        const sum = (name: string) =>
          (family(name)?.metrics ?? []).reduce((s, x) => s + (Number(x.value) || 0), 0);
        const now: Scrape = { at: query.at, requests: sum(m.requests), buckets: new Map() };
        for (const series of family(m.latencySeconds)?.metrics ?? [])
          for (const [le, count] of Object.entries(series.buckets ?? {})) {
            const bound = le === '+Inf' ? Number.POSITIVE_INFINITY : Number(le);
            now.buckets.set(bound, (now.buckets.get(bound) ?? 0) + (Number(count) || 0));
          }
        inFlight += sum(m.inFlight);
        if (m.gpuUtilization && family(m.gpuUtilization)) {
          gpuSum += sum(m.gpuUtilization);
          gpuPods++;
        }
        const before = this.last.get(key);
        this.last.set(key, now);
        // A first scrape, or a counter that went back (the process restarted): no difference yet.
        if (!before || now.requests < before.requests) return;
        requests += now.requests - before.requests;
        seconds = Math.max(seconds, (now.at - before.at) / 1000);
        for (const [bound, count] of now.buckets)
          buckets.set(
            bound,
            (buckets.get(bound) ?? 0) + Math.max(0, count - (before.buckets.get(bound) ?? 0)),
          );
      }),
    );
    // Pods that no longer serve this service are forgotten.
    for (const key of [...this.last.keys()])
      if (key.startsWith(`${query.namespace}/${query.service}/`) && !seen.has(key)) this.last.delete(key);
    if (read === 0) return null;
    const p95 = histogramQuantile(0.95, buckets);
    return {
      rps: seconds > 0 ? requests / seconds : 0,
      p95Ms: p95 === null ? null : p95 * 1000,
      inFlight,
      gpuUtilization: gpuPods ? gpuSum / gpuPods : null,
      requests,
    };
  }
}
