// An inference service scaled on Prometheus on the local test cluster, through the graph: Prometheus (a
// real HTTP server here) answers only queries about the service in its tenant's namespace, so the service
// scales only when the queries name that namespace. It starts at zero (minReplicas 0, scale to zero
// allowed), traffic wakes it, once idle past scaleToZeroAfterSeconds it goes back to zero (its Deployment
// kept at 0, no pod), and traffic wakes it again: while no replica runs, the queries still name the
// tenant's namespace, so the autoscaler sees the traffic and the pods come back.
// The clock: only Date is faked (timers stay real, time moves on by itself) so that the test can make a
// minute pass; the app takes its clock (the autoscaler's ctx.now) from Date.now.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { eventually, gpuNode, type KubeTestApp, startKubeApp } from '../../helpers/kube-app.js';
import { CREATE_SERVICE, chatService } from './service-fixtures.js';

const NS = 'fairway-borealis-inference';
const READ = `query($id: ID!) { inferenceService(id: $id) {
  replicas { desired admitted ready }
  lastDecision { desired signalValue ready reason coldStart }
} }`;

/** What the stub Prometheus answers about the service (nothing about anything else). */
const load = { inFlight: 0, rps: 0 };
/** The queries received, each with the service's pods at that moment. */
const received: { query: string; pods: number }[] = [];

describe('an inference service scaled on Prometheus, to zero and back', () => {
  let t: KubeTestApp;
  let bob: string;
  let id = '';
  const rawId = () => Buffer.from(id, 'base64').toString().split(':')[1]!;
  const podsOfService = () =>
    t ? t.kube.objects('Pod').filter((p) => p.metadata.labels?.['fairway.dev/service-id'] === rawId()) : [];
  const read = async () => {
    const r = await t.gql(bob, READ, { id });
    if (!r.data) throw new Error(JSON.stringify(r.errors));
    return r.data.inferenceService;
  };
  const autoscale = () => t.app.scheduler.runLeaderTask('inference-autoscaler');
  const deployment = () => t.kube.get('Deployment', NS, `fw-${rawId()}-r1`);
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://prometheus');
    const query = url.searchParams.get('query') ?? '';
    received.push({ query, pods: id ? podsOfService().length : 0 });
    const ours =
      id !== '' && query.includes(`namespace="${NS}"`) && query.includes(`service="fw-${rawId()}"`);
    const value = !ours
      ? undefined
      : query.includes('http_requests_in_flight')
        ? load.inFlight
        : query.includes('http_requests_total')
          ? load.rps
          : undefined;
    const result = value === undefined ? [] : [{ metric: {}, value: [Date.now() / 1000, String(value)] }];
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result } }));
  });

  beforeAll(async () => {
    // Before the app is built: it keeps Date.now as its clock.
    vi.useFakeTimers({ toFake: ['Date'], shouldAdvanceTime: true });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const { port } = server.address() as AddressInfo;
    t = await startKubeApp({
      nodes: [gpuNode('gpu-h100-1'), gpuNode('gpu-h100-2')],
      kubelet: { startDelayMs: 20, defaultRunMs: 3_600_000 },
      settings: { serviceSignals: { source: 'prometheus', prometheusUrl: `http://127.0.0.1:${port}` } },
      inference: { intervalMs: 3_600_000 },
    });
    bob = t.token('borealis-inference', 'MEMBER');
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await new Promise<void>((r) => server.close(() => r()));
    vi.useRealTimers();
  });

  it('starts at zero and the first traffic Prometheus sees in the tenant’s namespace wakes it', async () => {
    const created = await t.gql(bob, CREATE_SERVICE, {
      input: chatService({
        minReplicas: 0,
        maxReplicas: 4,
        scaling: {
          signal: 'IN_FLIGHT',
          target: 4,
          scaleDownStabilizationSeconds: 0,
          scaleToZeroAfterSeconds: 60,
        },
      }),
    });
    expect(created.errors).toBeUndefined();
    id = created.data.createInferenceService.id;
    expect((await read()).replicas.desired).toBe(0);
    load.inFlight = 2;
    load.rps = 1;
    await autoscale();
    const s = await read();
    expect(s.lastDecision).toMatchObject({ desired: 1, signalValue: 2, coldStart: true });
    await eventually(async () => (await read()).replicas.ready === 1, 'one replica serving', 15_000);
    expect(deployment().spec.replicas).toBe(1);
  });

  it('idle past scaleToZeroAfterSeconds, it goes to zero: its Deployment at 0, no pod', async () => {
    load.inFlight = 0;
    load.rps = 0;
    await autoscale(); // idle for less than a minute: one stays
    expect((await read()).replicas.desired).toBe(1);
    vi.setSystemTime(Date.now() + 61_000);
    await autoscale();
    const s = await read();
    expect(s.replicas.desired).toBe(0);
    expect(s.lastDecision.reason).toMatch(/scaled to 0/);
    await eventually(() => deployment()?.spec.replicas === 0, 'the Deployment at 0');
    await eventually(() => podsOfService().length === 0, 'the replica’s pod gone', 20_000);
    expect(t.kube.get('Service', NS, `fw-${rawId()}`)).toBeDefined();
  });

  it('at zero, traffic in the tenant’s namespace wakes it and it scales on to what the signal asks', async () => {
    const from = received.length;
    load.inFlight = 8;
    load.rps = 2;
    await autoscale();
    let s = await read();
    expect(s.lastDecision).toMatchObject({ desired: 1, signalValue: 8, coldStart: true });
    // Asked while the service had no pod, the queries named the tenant's namespace and the Service.
    const whileAtZero = received.slice(from).filter((q) => q.pods === 0);
    expect(whileAtZero.length).toBeGreaterThan(0);
    expect(whileAtZero.some((q) => q.query.includes(`namespace="${NS}",service="fw-${rawId()}"`))).toBe(true);
    expect(whileAtZero.some((q) => q.query.includes('namespace=""'))).toBe(false);
    // The rate is over the autoscaler's interval (an hour here), not since the epoch.
    const rates = whileAtZero.filter((q) => q.query.includes('http_requests_total'));
    expect(rates.length).toBeGreaterThan(0);
    for (const q of rates) expect(q.query).toContain('[3600s]');
    await eventually(async () => (await read()).replicas.ready === 1, 'one replica serving again', 15_000);
    await autoscale(); // 8 in flight, 4 a replica: 2
    s = await read();
    expect(s.lastDecision).toMatchObject({ desired: 2, signalValue: 8 });
    await eventually(async () => (await read()).replicas.ready === 2, 'two replicas serving', 15_000);
    expect(deployment().spec.replicas).toBe(2);
    expect(podsOfService().filter((p) => !p.metadata.deletionTimestamp)).toHaveLength(2);
    expect(t.errors).toEqual([]);
  });
});
