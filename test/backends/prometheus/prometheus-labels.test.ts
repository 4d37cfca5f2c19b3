// Which labels name a DCGM series' pod, and what a source that gives no readings is. A real HTTP
// server stands in for Prometheus and answers as Prometheus would for the series an exporter
// exposes: scraped through a ServiceMonitor (honorLabels false) the workload pod is in
// exported_namespace / exported_pod and namespace / pod name the exporter's own pod; scraped
// directly the workload pod is in namespace / pod. Each setting of `podLabels` reads the
// convention it names, 'auto' reads either; no series for running GPU jobs is an outage, said once.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { BackendEvent } from '../../../src/backends/port.js';
import {
  DEFAULT_PROMETHEUS_PROBES,
  type PodLabelConvention,
  type PrometheusProbeSettings,
  PrometheusProbes,
  podOfName,
  readPods,
} from '../../../src/backends/prometheus/probes.js';

const JOB = '0190f0a0-0000-7000-8000-000000000001';
const POD = `fw-${JOB}-0-0-bcdfg`;
const NS = 'fairway-aurora';
const EXPORTER = { namespace: 'gpu-operator', pod: 'nvidia-dcgm-exporter-7x2lq' };

type Raw = { labels: Record<string, string>; gpu: string; memory: string };
/** The workload pod's series as a ServiceMonitor scrape labels them, or as a direct scrape does. */
const exportedSeries = (gpu = '80'): Raw[] => [
  { labels: { exported_namespace: NS, exported_pod: POD, ...EXPORTER, gpu: '0' }, gpu, memory: '0.5' },
];
const plainSeries = (gpu = '80'): Raw[] => [
  { labels: { namespace: NS, pod: POD, gpu: '0' }, gpu, memory: '0.5' },
];

/**
 * Answers the queries the probes send the way PromQL would for these series: each
 * `<agg> by (A, B) (METRIC{L=~"re"})` form keeps the series whose L matches, labelled A and B only
 * (a series without them drops out), and forms joined with `or` add up; a query with no such form
 * returns the series with all their labels.
 */
async function dcgmPrometheus(raw: () => Raw[]) {
  const state = { queries: [] as string[], down: false };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    const query = url.searchParams.get('query') ?? '';
    state.queries.push(query);
    if (state.down) return void res.writeHead(503).end('unavailable');
    const memory = query.includes('FB_USED');
    const forms = new Map<string, [string, string, string, RegExp]>();
    for (const m of query.matchAll(/by \((\w+), (\w+)\) \(DCGM_\w+\{(\w+)=~"([^"]*)"\}\)/g))
      forms.set(m.slice(1).join('|'), [m[1]!, m[2]!, m[3]!, new RegExp(`^${m[4]}$`)]);
    const result: { metric: Record<string, string>; value: [number, string] }[] = [];
    for (const s of raw()) {
      const value: [number, string] = [Date.now() / 1000, memory ? s.memory : s.gpu];
      if (forms.size === 0) result.push({ metric: s.labels, value });
      for (const [a, b, label, re] of forms.values()) {
        const [va, vb, vl] = [s.labels[a], s.labels[b], s.labels[label]];
        if (va && vb && vl && re.test(vl)) result.push({ metric: { [a]: va, [b]: vb }, value });
      }
    }
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result } }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    state,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

let prometheus: Awaited<ReturnType<typeof dcgmPrometheus>> | null = null;
afterEach(async () => {
  await prometheus?.close();
  prometheus = null;
});

function probes(
  url: string,
  settings: Partial<PrometheusProbeSettings>,
  options: { running?: string[]; now?: () => number } = {},
) {
  const events: BackendEvent[] = [];
  const logs: string[] = [];
  const source = new PrometheusProbes(
    { ...DEFAULT_PROMETHEUS_PROBES, outageGraceMs: 0, ...settings, prometheusUrl: url },
    {
      namespacePrefix: 'fairway-',
      // The backend's rule: a pod named after a running job, in that job's tenant's namespace.
      owner: (namespace, pod) =>
        podOfName(pod)?.jobId === JOB && namespace === NS ? { jobId: JOB, gpus: 1 } : null,
      emit: (e) => events.push(e),
      now: options.now ?? Date.now,
      log: (m) => logs.push(m),
      runningGpuJobs: () => options.running ?? [JOB],
    },
  );
  return { source, events, logs };
}

describe('DCGM pod label conventions', () => {
  const scrapes = { 'ServiceMonitor-scraped': exportedSeries, 'directly scraped': plainSeries };
  const cases: [keyof typeof scrapes, PodLabelConvention, boolean][] = [
    ['ServiceMonitor-scraped', 'exported', true],
    ['ServiceMonitor-scraped', 'auto', true],
    ['ServiceMonitor-scraped', 'plain', false],
    ['directly scraped', 'plain', true],
    ['directly scraped', 'auto', true],
    ['directly scraped', 'exported', false],
  ];
  it.each(cases)(
    '%s series read with podLabels %s: the job is reported: %s',
    async (scrape, podLabels, reports) => {
      prometheus = await dcgmPrometheus(scrapes[scrape]);
      const { source, events } = probes(prometheus.url, { podLabels });
      expect(await source.poll()).toBe(reports ? 1 : 0);
      expect(events).toEqual(
        reports
          ? [
              {
                type: 'utilization',
                jobId: JOB,
                at: expect.any(Number),
                gpuUtilization: 0.8,
                memoryUtilization: 0.5,
              },
            ]
          : [],
      );
      const [gpuQuery] = prometheus.state.queries;
      expect(gpuQuery!.includes('exported_namespace')).toBe(podLabels !== 'plain');
      expect(gpuQuery!.includes('{namespace=~')).toBe(podLabels !== 'exported');
    },
  );

  it('explicit label names are read as they are', async () => {
    prometheus = await dcgmPrometheus(() => [
      { labels: { k8s_namespace: NS, k8s_pod: POD }, gpu: '30', memory: '0.1' },
    ]);
    const { source, events } = probes(prometheus.url, {
      namespaceLabel: 'k8s_namespace',
      podLabel: 'k8s_pod',
    });
    expect(await source.poll()).toBe(1);
    expect(events[0]).toMatchObject({ gpuUtilization: expect.closeTo(0.3, 9), memoryUtilization: 0.1 });
    expect(prometheus.state.queries[0]).toBe(
      'avg by (k8s_namespace, k8s_pod) (DCGM_FI_DEV_GPU_UTIL{k8s_namespace=~"fairway-.*"})',
    );
  });

  it("auto prefers exported_* where a series has both: namespace / pod then name the exporter's pod", async () => {
    // A query of the raw series (no aggregation), so each keeps both pairs of labels.
    prometheus = await dcgmPrometheus(() => [
      {
        labels: { exported_namespace: NS, exported_pod: POD, namespace: 'fairway-ops', pod: 'dcgm-0' },
        gpu: '70',
        memory: '0.2',
      },
    ]);
    const settings = {
      ...DEFAULT_PROMETHEUS_PROBES,
      prometheusUrl: prometheus.url,
      gpuQuery: 'DCGM_FI_DEV_GPU_UTIL',
      memoryQuery: 'DCGM_FI_DEV_FB_USED',
    };
    expect(await readPods(settings, 'fairway-')).toEqual([
      { namespace: NS, pod: POD, gpu: expect.closeTo(0.7, 9), memory: 0.2 },
    ]);
    expect(prometheus.state.queries).toEqual(['DCGM_FI_DEV_GPU_UTIL', 'DCGM_FI_DEV_FB_USED']);
  });
});

describe('a probe source that gives no readings', () => {
  it('no series for the running GPU jobs is an outage: said once when it begins and once when it ends', async () => {
    let series = exportedSeries;
    prometheus = await dcgmPrometheus(() => series());
    // Read as a direct scrape, while the exporter is scraped through a ServiceMonitor.
    const { source, events, logs } = probes(prometheus.url, { podLabels: 'plain' });
    for (let i = 0; i < 3; i++) expect(await source.poll()).toBe(0);
    expect(logs).toEqual([
      expect.stringMatching(
        /^GPU probes: outage begins: Prometheus answered no series for any of the 1 running GPU job\(s\) \(pods read by the labels namespace\/pod: see probes.podLabels\)/,
      ),
    ]);
    expect(source.health()).toMatchObject({ outage: true, outages: 1, since: expect.any(Number) });
    expect(source.health().problem).toMatch(/no series/);

    // The ServiceMonitor is changed to honorLabels: true, so the pod is in namespace / pod again.
    series = plainSeries;
    expect(await source.poll()).toBe(1);
    expect(await source.poll()).toBe(1);
    expect(events).toHaveLength(2);
    expect(logs).toHaveLength(2);
    expect(logs[1]).toMatch(/^GPU probes: outage ended after \d+ s/);
    expect(source.health()).toMatchObject({ outage: false, problem: null, since: null, outages: 1 });

    // Prometheus itself failing is an outage too, counted as another one.
    prometheus.state.down = true;
    await source.poll();
    await source.poll();
    expect(logs).toHaveLength(3);
    expect(logs[2]).toMatch(
      /outage begins: cannot read GPU probes from Prometheus \(Prometheus answered 503/,
    );
    expect(source.health()).toMatchObject({ outage: true, outages: 2 });
  });

  it('no running GPU jobs, or only jobs within outageGraceMs, is no outage', async () => {
    prometheus = await dcgmPrometheus(() => []);
    const idle = probes(prometheus.url, {}, { running: [] });
    await idle.source.poll();
    expect(idle.logs).toEqual([]);
    expect(idle.source.health().outage).toBe(false);

    let now = 1_000_000;
    const young = probes(prometheus.url, { outageGraceMs: 60_000 }, { now: () => now });
    await young.source.poll();
    now += 59_000;
    await young.source.poll();
    expect(young.logs).toEqual([]);
    now += 1000;
    await young.source.poll();
    expect(young.logs).toEqual([expect.stringMatching(/outage begins/)]);
    expect(young.source.health()).toMatchObject({ outage: true, since: now, lastPollAt: now });
  });
});
