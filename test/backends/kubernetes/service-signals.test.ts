// A service's load read where the cluster keeps it: from each serving pod's metrics endpoint (a real
// HTTP server speaking the Prometheus text format; counters read as differences between scrapes, a
// restarted counter not read backwards, a pod that does not answer left out) and from Prometheus' query
// API (the configured queries with the service's namespace, Service and window filled in).
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  DEFAULT_SERVICE_SIGNALS,
  histogramQuantile,
  ServiceSignals,
} from '../../../src/backends/kubernetes/service-signals.js';

let server: Server;
let base = '';
/** What each pod's endpoint serves now (by pod name); Prometheus' answers by query. */
const pods = new Map<string, { requests: number; inFlight: number; buckets: [string, number][] } | 'down'>();
const asked: string[] = [];

function exposition(m: { requests: number; inFlight: number; buckets: [string, number][] }): string {
  return [
    '# TYPE http_requests_total counter',
    `http_requests_total{code="200"} ${m.requests * 0.9}`,
    `http_requests_total{code="500"} ${m.requests * 0.1}`,
    '# TYPE http_requests_in_flight gauge',
    `http_requests_in_flight ${m.inFlight}`,
    '# TYPE http_request_duration_seconds histogram',
    ...m.buckets.map(([le, n]) => `http_request_duration_seconds_bucket{le="${le}"} ${n}`),
    `http_request_duration_seconds_count ${m.buckets.at(-1)![1]}`,
    'http_request_duration_seconds_sum 1',
    '',
  ].join('\n');
}

beforeAll(async () => {
  server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname === '/api/v1/query') {
      const q = url.searchParams.get('query') ?? '';
      asked.push(q);
      const value = q.includes('rate(http_requests_total')
        ? '12.5'
        : q.includes('in_flight')
          ? '7'
          : q.includes('histogram_quantile')
            ? '180'
            : null;
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          status: 'success',
          data: { resultType: 'vector', result: value === null ? [] : [{ metric: {}, value: [0, value] }] },
        }),
      );
      return;
    }
    const m = pods.get(url.searchParams.get('pod') ?? '');
    if (!m || m === 'down') {
      res.statusCode = 503;
      res.end();
      return;
    }
    res.end(exposition(m));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

const query = (names: string[], at: number) => ({
  namespace: 'fairway-aurora',
  service: 'fw-svc',
  port: 8080,
  pods: names.map((name) => ({ namespace: 'fairway-aurora', name, ip: '10.0.0.1' })),
  windowMs: 15_000,
  at,
});

describe('histogramQuantile', () => {
  it('interpolates within the bucket holding the rank, as Prometheus does', () => {
    const b = new Map([
      [0.1, 50],
      [0.2, 90],
      [0.5, 100],
      [Number.POSITIVE_INFINITY, 100],
    ]);
    // rank 95 of 100 lies in (0.2, 0.5], half-way: 0.35.
    expect(histogramQuantile(0.95, b)).toBeCloseTo(0.35, 10);
    expect(histogramQuantile(0.5, b)).toBeCloseTo(0.1, 10);
    expect(histogramQuantile(0.95, new Map())).toBeNull();
  });
});

describe('from the pods’ metrics endpoints', () => {
  const make = () =>
    new ServiceSignals(
      { ...DEFAULT_SERVICE_SIGNALS, source: 'endpoint', endpointUrl: `${base}/metrics?pod={pod}` },
      null,
    );

  it('reads rate, in flight and p95 from two scrapes; a restarted counter and a pod down are left out', async () => {
    const s = make();
    pods.set('a', {
      requests: 1000,
      inFlight: 3,
      buckets: [
        ['0.1', 500],
        ['0.2', 900],
        ['0.5', 1000],
        ['+Inf', 1000],
      ],
    });
    pods.set('b', {
      requests: 400,
      inFlight: 2,
      buckets: [
        ['0.1', 300],
        ['0.2', 400],
        ['0.5', 400],
        ['+Inf', 400],
      ],
    });
    const first = await s.read(query(['a', 'b'], 1_000_000));
    // A first scrape has no difference yet: no rate, but the gauge is read.
    expect(first).toMatchObject({ rps: 0, requests: 0, inFlight: 5, p95Ms: null });
    pods.set('a', {
      requests: 1300,
      inFlight: 4,
      buckets: [
        ['0.1', 600],
        ['0.2', 1100],
        ['0.5', 1300],
        ['+Inf', 1300],
      ],
    });
    pods.set('b', {
      requests: 100,
      inFlight: 1,
      buckets: [
        ['0.1', 80],
        ['0.2', 100],
        ['0.5', 100],
        ['+Inf', 100],
      ],
    });
    const second = await s.read(query(['a', 'b'], 1_015_000));
    // a served 300 in 15 s; b restarted (its counter went back) and counts nothing this time.
    expect(second!.requests).toBe(300);
    expect(second!.rps).toBeCloseTo(20, 6);
    expect(second!.inFlight).toBe(5);
    // a's 300 (cumulative): 100 ≤ 0.1 s, 200 ≤ 0.2 s, 300 ≤ 0.5 s: rank 285 → 0.2 + 0.3 × 85/100 = 0.455 s.
    expect(second!.p95Ms).toBeCloseTo(455, 6);
    pods.set('b', 'down');
    pods.set('a', {
      requests: 1450,
      inFlight: 2,
      buckets: [
        ['0.1', 700],
        ['0.2', 1250],
        ['0.5', 1450],
        ['+Inf', 1450],
      ],
    });
    const third = await s.read(query(['a', 'b'], 1_030_000));
    expect(third).toMatchObject({ requests: 150, inFlight: 2 });
    pods.set('a', 'down');
    expect(await s.read(query(['a', 'b'], 1_045_000))).toBeNull();
  });
});

describe('from Prometheus', () => {
  it('sends the configured queries with the service filled in and reads one value each', async () => {
    const s = new ServiceSignals({ ...DEFAULT_SERVICE_SIGNALS, source: 'prometheus' }, base);
    asked.length = 0;
    const reading = await s.read(query(['fw-svc-r1-abc', 'fw-svc-r1-def'], 2_000_000));
    expect(reading).toEqual({ rps: 12.5, p95Ms: 180, inFlight: 7, gpuUtilization: null, requests: 188 });
    expect(asked).toContain(
      'sum(rate(http_requests_total{namespace="fairway-aurora",service="fw-svc"}[15s]))',
    );
    expect(asked.some((q) => q.includes('exported_pod=~"fw-svc-r1-abc|fw-svc-r1-def"'))).toBe(true);
  });

  it('without a Prometheus URL, or with every query empty, there is no reading', async () => {
    expect(
      await new ServiceSignals({ ...DEFAULT_SERVICE_SIGNALS, source: 'prometheus' }, null).read(
        query(['a'], 1),
      ),
    ).toBeNull();
    const none = new ServiceSignals({ ...DEFAULT_SERVICE_SIGNALS, source: 'none' }, base);
    expect(none.enabled).toBe(false);
    expect(await none.read(query(['a'], 1))).toBeNull();
  });
});
