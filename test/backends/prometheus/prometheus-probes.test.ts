// The Kubernetes backend's runtime probes: a real HTTP server speaking Prometheus'
// /api/v1/query answers DCGM exporter figures per namespace and pod; the leader polls it, maps the
// pods to jobs by their names within the job tenant's namespace, and stores the samples. A server
// that is down or answers garbage changes nothing and is asked again at the next poll; a pod named
// after a job but in another tenant's namespace is never that job's.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { BackendEvent } from '../../../src/backends/port.js';
import {
  DEFAULT_PROMETHEUS_PROBES,
  expandQuery,
  podLabelPairs,
  podOfName,
  readPods,
  utilizationReports,
} from '../../../src/backends/prometheus/probes.js';
import { CRDS } from '../../helpers/kube-api-server/crd-fixtures.js';
import { startKubeApiServer } from '../../helpers/kube-api-server/index.js';
import { eventually, gpuNode, type KubeTestApp, startKubeApp } from '../../helpers/kube-app.js';

type Mode = 'ok' | 'down' | 'garbage' | 'not-json' | 'matrix';

/** A Prometheus stand-in: GPU utilization (percent) for the GPU query, the memory share for the memory
 * query.
 */
async function fakePrometheus(
  series: () => { namespace?: string; pod?: string; gpu: string; memory: string }[],
  port = 0,
) {
  const state = { mode: 'ok' as Mode, queries: [] as string[] };
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    if (url.pathname !== '/api/v1/query') return void res.writeHead(404).end();
    const query = url.searchParams.get('query') ?? '';
    state.queries.push(query);
    if (state.mode === 'down') return void res.writeHead(503).end('unavailable');
    if (state.mode === 'not-json')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end('<html>proxy error</html>');
    if (state.mode === 'garbage')
      return void res.writeHead(200, { 'content-type': 'application/json' }).end(
        JSON.stringify({
          status: 'success',
          data: { resultType: 'vector', result: [{ metric: 'x', value: 'y' }] },
        }),
      );
    if (state.mode === 'matrix')
      return void res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ status: 'success', data: { resultType: 'matrix', result: [] } }));
    const memory = query.includes('FB_USED');
    const result = series().map((s) => ({
      metric: { ...(s.namespace ? { namespace: s.namespace } : {}), ...(s.pod ? { pod: s.pod } : {}) },
      value: [Date.now() / 1000, memory ? s.memory : s.gpu],
    }));
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ status: 'success', data: { resultType: 'vector', result } }));
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    port: (server.address() as AddressInfo).port,
    state,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('Prometheus probe source', () => {
  it('reads pods from the two queries over HTTP, skips series without labels or a number, and maps only owned pods', async () => {
    const prometheus = await fakePrometheus(() => [
      {
        namespace: 'fairway-a',
        pod: 'fw-0190f0a0-0000-7000-8000-000000000001-0-0-bcdfg',
        gpu: '80',
        memory: '0.5',
      },
      {
        namespace: 'fairway-a',
        pod: 'fw-0190f0a0-0000-7000-8000-000000000001-1-bcdfh',
        gpu: '40',
        memory: '0.25',
      },
      { namespace: 'fairway-a', gpu: '99', memory: '0.9' },
      { namespace: 'fairway-a', pod: 'notebook-7', gpu: 'NaN', memory: '0.1' },
    ]);
    try {
      const settings = { ...DEFAULT_PROMETHEUS_PROBES, prometheusUrl: prometheus.url };
      const pods = await readPods(settings, 'fairway-');
      // 'auto' asks for both label conventions in one query each.
      const pairs = podLabelPairs(DEFAULT_PROMETHEUS_PROBES);
      expect(prometheus.state.queries).toEqual([
        expandQuery(DEFAULT_PROMETHEUS_PROBES.gpuQuery, pairs, 'fairway-'),
        expandQuery(DEFAULT_PROMETHEUS_PROBES.memoryQuery, pairs, 'fairway-'),
      ]);
      expect(prometheus.state.queries[0]).toBe(
        '(avg by (exported_namespace, exported_pod) (DCGM_FI_DEV_GPU_UTIL{exported_namespace=~"fairway-.*"})) or (avg by (namespace, pod) (DCGM_FI_DEV_GPU_UTIL{namespace=~"fairway-.*"}))',
      );
      expect(pods.map((p) => [p.pod, p.gpu, p.memory])).toEqual([
        ['fw-0190f0a0-0000-7000-8000-000000000001-0-0-bcdfg', 0.8, 0.5],
        ['fw-0190f0a0-0000-7000-8000-000000000001-1-bcdfh', 0.4, 0.25],
        ['notebook-7', null, 0.1],
      ]);
      // Weighted by the pods' GPUs: pod set 0 holds 3, pod set 1 holds 1.
      const owner = (namespace: string, pod: string) => {
        const named = podOfName(pod);
        return named && namespace === 'fairway-a'
          ? { jobId: named.jobId, gpus: named.podSet === 0 ? 3 : 1 }
          : null;
      };
      const [report, ...rest] = utilizationReports(pods, owner, 42);
      expect(rest).toEqual([]);
      expect(report).toEqual({
        type: 'utilization',
        jobId: '0190f0a0-0000-7000-8000-000000000001',
        at: 42,
        gpuUtilization: expect.closeTo(0.7, 9),
        memoryUtilization: expect.closeTo(0.4375, 9),
      });
      for (const mode of ['down', 'garbage', 'not-json', 'matrix'] as const) {
        prometheus.state.mode = mode;
        await expect(readPods(settings, 'fairway-')).rejects.toThrow(/Prometheus answered/);
      }
      expect(podOfName('fw-not-a-uuid-0-abc')).toBeNull();
      expect(podOfName('fw-0190f0a0-0000-7000-8000-000000000001')).toBeNull();
    } finally {
      await prometheus.close();
    }
  });
});

describe('Kubernetes backend with a Prometheus probe source', () => {
  let t: KubeTestApp | null = null;
  afterEach(async () => {
    await t?.close();
    t = null;
  });

  it("stores the DCGM figures of a running job, never maps another tenant's namespace to it, and survives a source that is down or answers garbage", async () => {
    let auroraPod = 'none';
    const prometheus = await fakePrometheus(() => [
      { namespace: 'fairway-aurora-research', pod: auroraPod, gpu: '85', memory: '0.4' },
      // The same pod name in another tenant's namespace (a forged pod, or a name collision): never aurora's
      // job.
      { namespace: 'fairway-borealis-inference', pod: auroraPod, gpu: '5', memory: '0.9' },
      { namespace: 'fairway-aurora-research', pod: 'notebook-0', gpu: '50', memory: '0.5' },
    ]);
    try {
      t = await startKubeApp({
        settings: { probes: { prometheusUrl: prometheus.url } },
        governance: { probes: { intervalMs: 200, flushMs: 20, pollMs: 50 } },
      });
      const member = t.token('aurora-research', 'MEMBER');
      const events: BackendEvent[] = [];
      t.app.backend.onEvent((e) => e.type === 'utilization' && events.push(e));
      const res = await t.gql(member, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
        in: {
          name: 'probed',
          workloadType: 'TRAINING',
          latencySensitive: true,
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: 3600,
          container: {
            image: 'nvcr.io/nvidia/pytorch:24.05-py3',
            env: [{ name: 'FAIRWAY_TEST_RUN_MS', value: '30000' }],
          },
        },
      });
      expect(res.errors).toBeUndefined();
      const id = res.data!.submitJob.id as string;
      const jobId = Buffer.from(id, 'base64').toString().split(':')[1]!;
      const JOB = `query($id: ID!) { node(id: $id) { ... on Job { state utilization { samples lastGpu lastMemory } probes { gpuUtilization memoryUtilization } } } }`;
      await eventually(
        async () => (await t!.gql(member, JOB, { id })).data?.node?.state === 'RUNNING',
        'RUNNING',
      );
      const pod = t.kube.objects('Pod').find((p) => p.metadata.labels?.['fairway.dev/job-id'] === jobId)!;
      expect(pod.metadata.annotations).toMatchObject({
        'fairway.dev/workload-type': 'TRAINING',
        'fairway.dev/latency-sensitive': 'true',
      });
      auroraPod = pod.metadata.name as string;
      const utilization = await eventually(
        async () => (await t!.gql(member, JOB, { id })).data?.node?.utilization ?? false,
        'a stored sample',
      );
      expect(utilization).toMatchObject({
        lastGpu: expect.closeTo(0.85, 9),
        lastMemory: expect.closeTo(0.4, 9),
      });
      expect(utilization.samples).toBeGreaterThanOrEqual(1);
      // Every report the backend made for the job is aurora's pod alone: 0.85 and 0.4, never the borealis
      // series'.
      expect(events.length).toBeGreaterThan(0);
      expect(
        events.every(
          (e) =>
            e.type === 'utilization' &&
            e.jobId === jobId &&
            Math.abs(e.gpuUtilization - 0.85) < 1e-9 &&
            Math.abs(e.memoryUtilization! - 0.4) < 1e-9,
        ),
      ).toBe(true);

      // Down, then garbage: polls go on, nothing is reported, nothing crashes; back up, reports resume.
      for (const mode of ['down', 'garbage', 'not-json', 'matrix'] as const) {
        prometheus.state.mode = mode;
        const asked = prometheus.state.queries.length;
        await eventually(() => prometheus.state.queries.length > asked + 2, `polls while ${mode}`);
        const heard = events.length;
        await eventually(() => prometheus.state.queries.length > asked + 6, `more polls while ${mode}`);
        expect(events.length).toBe(heard);
      }
      // Not listening at all (connection refused): still nothing, no crash; listening again, reports resume.
      await prometheus.close();
      const quiet = events.length;
      await new Promise((r) => setTimeout(r, 300));
      expect(events.length).toBe(quiet);
      const back = await fakePrometheus(
        () => [{ namespace: 'fairway-aurora-research', pod: auroraPod, gpu: '60', memory: '0.3' }],
        prometheus.port,
      );
      try {
        await eventually(
          () => events.some((e) => e.type === 'utilization' && Math.abs(e.gpuUtilization - 0.6) < 1e-9),
          'reports again',
        );
      } finally {
        await back.close();
      }
      expect(t.errors).toEqual([]);
      expect(
        (await t.gql(t.token('borealis-inference', 'TENANT_ADMIN'), JOB, { id })).errors?.[0]?.extensions
          ?.code,
      ).toBe('NOT_FOUND');
    } finally {
      await prometheus.close().catch(() => undefined);
    }
  });

  it('maps the pods of a custom workload (a JobSet: its controller names them) by their labels, each weighted by its GPUs', async () => {
    const names = { master: 'none', worker: 'none' };
    const prometheus = await fakePrometheus(() => [
      { namespace: 'fairway-aurora-research', pod: names.master, gpu: '90', memory: '0.5' },
      { namespace: 'fairway-aurora-research', pod: names.worker, gpu: '30', memory: '0.2' },
      { namespace: 'fairway-borealis-inference', pod: names.worker, gpu: '0', memory: '0' },
    ]);
    try {
      const kube = await startKubeApiServer({ kubelet: { startDelayMs: 20, defaultRunMs: 300 }, crds: CRDS });
      t = await startKubeApp({
        kube,
        nodes: [1, 2].map((i) => gpuNode(`gpu-h100-${i}`)),
        settings: { probes: { prometheusUrl: prometheus.url } },
        governance: { probes: { intervalMs: 200, flushMs: 20, pollMs: 50 } },
      });
      const member = t.token('aurora-research', 'MEMBER');
      const events: BackendEvent[] = [];
      t.app.backend.onEvent((e) => e.type === 'utilization' && events.push(e));
      const res = await t.gql(member, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
        in: {
          name: 'probed-jobset',
          workloadKind: 'JOBSET',
          podSets: [
            { name: 'master', count: 1, gpusPerPod: 8, flavors: ['h100-80g'] },
            { name: 'worker', count: 1, gpusPerPod: 4, flavors: ['h100-80g'] },
          ],
          container: {
            image: 'nvcr.io/nvidia/pytorch:24.05-py3',
            command: ['python', 'train.py'],
            env: [{ name: 'FAIRWAY_TEST_RUN_MS', value: '30000' }],
          },
        },
      });
      expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
      const jobId = Buffer.from(res.data!.submitJob.id, 'base64').toString().split(':')[1]!;
      const pods = await eventually(() => {
        const running = t!.kube
          .objects('Pod', 'fairway-aurora-research')
          .filter(
            (p) => p.metadata.labels?.['fairway.dev/job-id'] === jobId && p.status?.phase === 'Running',
          );
        return running.length === 2 && running;
      }, 'both pods running');
      for (const pod of pods) {
        // Named by the JobSet controller, not as a batch Job's pod: only the labels tell whose it is.
        expect(podOfName(pod.metadata.name)).toBeNull();
        names[pod.metadata.labels['fairway.dev/pod-set'] as 'master' | 'worker'] = pod.metadata.name;
      }
      const report = await eventually(() => events.find((e) => e.type === 'utilization'), 'a report');
      // (8 GPUs at 90% + 4 at 30%) / 12; memory (8 x 0.5 + 4 x 0.2) / 12. Borealis' series count nowhere.
      expect(report).toMatchObject({
        jobId,
        gpuUtilization: expect.closeTo(0.7, 9),
        memoryUtilization: expect.closeTo(0.4, 9),
      });
      expect(t.errors).toEqual([]);
    } finally {
      await prometheus.close();
    }
  });
});
