// Inference replicas on the local test cluster when things happen to them: a lender takes its GPUs back
// (the borrowing replicas' pods drain and go, the guaranteed ones serve on, the lender's job runs); the
// gateway restarts (every replica is adopted: the same pods, the same count, nothing started twice); a
// serving pod is evicted (its replica is requeued; the count is back, one pod per replica). A replica of
// several hosts is refused while the cluster does not serve LeaderWorkerSet, and runs as one after.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crdDirectory } from '../../helpers/crd-dir.js';
import { eventually, gpuNode, type KubeTestApp, startKubeApp } from '../../helpers/kube-app.js';
import { CREATE_SERVICE, chatService, type InFlightEndpoint, inFlightEndpoint } from './service-fixtures.js';

const NS = 'fairway-borealis-inference';
const READ = `query($id: ID!) { inferenceService(id: $id) {
  replicas { desired admitted ready }
  replicaJobs { id state priorityClass replicaSlot }
} }`;
const raw = (id: string) => Buffer.from(id, 'base64').toString().split(':')[1]!;

let metrics: InFlightEndpoint;

describe('inference replicas on Kubernetes, under faults', () => {
  let t: KubeTestApp;
  let bob: string;
  let max: string;
  let id = '';
  const read = async () => {
    const r = await t.gql(bob, READ, { id });
    if (!r.data) throw new Error(JSON.stringify(r.errors));
    return r.data.inferenceService;
  };
  const autoscale = () => t.app.scheduler.runLeaderTask('inference-autoscaler');
  const livePods = () =>
    t.kube
      .objects('Pod', NS)
      .filter(
        (p) => p.metadata.labels?.['fairway.dev/service-id'] === raw(id) && !p.metadata.deletionTimestamp,
      );
  const servingReplicas = async (n: number, what: string) =>
    eventually(
      async () => {
        const s = await read();
        return s.replicas.ready === n && livePods().length === n && s;
      },
      what,
      20_000,
    );

  beforeAll(async () => {
    metrics = await inFlightEndpoint(() => t.kube.objects('Pod'));
    t = await startKubeApp({
      nodes: [gpuNode('gpu-h100-1'), gpuNode('gpu-h100-2'), gpuNode('gpu-h100-3'), gpuNode('gpu-h100-4')],
      kubelet: { startDelayMs: 20, defaultRunMs: 3_600_000 },
      settings: {
        serviceSignals: { source: 'endpoint', endpointUrl: metrics.url },
      },
      inference: { intervalMs: 3_600_000 },
    });
    bob = t.token('borealis-inference', 'MEMBER');
    max = t.token('aurora-research', 'MEMBER');
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await metrics?.close();
  });

  it('a lender takes its GPUs back: the borrowing replicas’ pods drain and go, the guaranteed serve on', async () => {
    const created = await t.gql(bob, CREATE_SERVICE, {
      input: chatService({ minReplicas: 2, maxReplicas: 12 }),
    });
    expect(created.errors).toBeUndefined();
    id = created.data.createInferenceService.id;
    await servingReplicas(2, 'the minimum serving');
    await autoscale(); // the first scrape of each pod
    metrics.set(48); // 12 replicas: 24 GPUs of Borealis' nominal 16, 8 borrowed from Aurora's idle nominal
    await autoscale();
    await servingReplicas(12, 'twelve replicas serving');
    const guaranteed = (await read()).replicaJobs
      .filter((j: { priorityClass: string }) => j.priorityClass === 'inference-critical')
      .map((j: { id: string }) => raw(j.id));
    expect(guaranteed).toHaveLength(2);
    const guaranteedPods = livePods()
      .filter((p) => guaranteed.includes(p.metadata.labels['fairway.dev/job-id']))
      .map((p) => p.metadata.uid);

    const submit = await t.gql(
      max,
      `mutation { submitJob(input: { name: "big", podSets: [{ count: 2, gpusPerPod: 8, flavors: ["h100-80g"] }], expectedDurationSeconds: 36000 }) { id } }`,
    );
    expect(submit.errors).toBeUndefined();
    const jobId = submit.data.submitJob.id;
    await eventually(
      async () => {
        const r = await t.gql(max, `query($id: ID!) { node(id: $id) { ... on Job { state } } }`, {
          id: jobId,
        });
        return r.data?.node.state === 'RUNNING';
      },
      'the lender’s job running',
      30_000,
    );
    const s = await servingReplicas(8, 'eight replicas left serving');
    expect(s.replicaJobs.filter((j: { state: string }) => j.state === 'PENDING')).toHaveLength(4);
    // The guaranteed replicas kept their very pods.
    expect(livePods().filter((p) => guaranteedPods.includes(p.metadata.uid))).toHaveLength(2);
    const d = t.kube.get('Deployment', NS, `fw-${raw(id)}-r1`);
    expect(d.spec.replicas).toBe(8);
    // GPUs held by pods never exceed the cluster's 32.
    const held = t.kube
      .objects('Pod')
      .filter((p) => p.spec.nodeName && !['Succeeded', 'Failed'].includes(p.status?.phase))
      .reduce((n, p) => n + Number(p.spec.containers[0].resources?.limits?.['nvidia.com/gpu'] ?? 0), 0);
    expect(held).toBeLessThanOrEqual(32);
  }, 90_000);

  it('a gateway restart adopts every replica: the same pods, the same count, nothing started twice', async () => {
    const before = livePods()
      .map((p) => p.metadata.uid)
      .sort();
    const created = t.kube.writes.filter((w) => w.verb === 'create' && w.kind === 'Pod').length;
    await t.restartApp();
    await eventually(
      async () => (await read()).replicas.ready === 8,
      'eight serving after the restart',
      20_000,
    );
    await new Promise((r) => setTimeout(r, 500));
    expect(
      livePods()
        .map((p) => p.metadata.uid)
        .sort(),
    ).toEqual(before);
    expect(t.kube.writes.filter((w) => w.verb === 'create' && w.kind === 'Pod').length).toBe(created);
    expect(t.kube.get('Deployment', NS, `fw-${raw(id)}-r1`).spec.replicas).toBe(8);
  }, 60_000);

  it('an evicted pod’s replica is requeued; the service is back at its count, a pod per replica', async () => {
    const victim = livePods()[0];
    const jobOfVictim = victim.metadata.labels['fairway.dev/job-id'];
    t.kube.evict(NS, victim.metadata.name);
    // Requeued: it runs again on a pod of its own, or waits while an older pending replica of the same
    // service takes the freed GPUs; never on the evicted pod.
    await eventually(
      async () => {
        const job = (await read()).replicaJobs.find((j: { id: string }) => raw(j.id) === jobOfVictim);
        if (job?.state === 'PENDING') return true;
        return (
          job?.state === 'RUNNING' &&
          livePods().some((p) => p.metadata.labels['fairway.dev/job-id'] === jobOfVictim)
        );
      },
      'the evicted replica requeued',
      30_000,
    );
    expect(livePods().some((p) => p.metadata.uid === victim.metadata.uid)).toBe(false);
    await servingReplicas(8, 'eight serving again');
    const owners = livePods().map((p) => p.metadata.labels['fairway.dev/job-id']);
    expect(new Set(owners).size).toBe(owners.length);
  }, 60_000);
});

describe('a replica of several hosts on Kubernetes', () => {
  let t: KubeTestApp;
  beforeAll(async () => {
    t = await startKubeApp({
      nodes: [gpuNode('gpu-h100-1'), gpuNode('gpu-h100-2')],
      kubelet: { startDelayMs: 20, defaultRunMs: 3_600_000 },
      inference: { intervalMs: 3_600_000 },
    });
  }, 60_000);
  afterAll(() => t?.close());

  const input = {
    name: 'big-model',
    container: { image: 'registry.example/big:1' },
    port: 8080,
    replica: { count: 2, gpusPerPod: 4, flavors: ['h100-80g'] },
    minReplicas: 1,
    maxReplicas: 2,
    scaling: { signal: 'IN_FLIGHT', target: 4 },
  };

  it('is refused while the cluster does not serve LeaderWorkerSet, with nothing written', async () => {
    const bob = t.token('borealis-inference', 'MEMBER');
    const r = await t.gql(bob, CREATE_SERVICE, { input });
    expect(r.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(r.errors?.[0]?.message).toMatch(/LeaderWorkerSet/);
    const list = await t.gql(
      bob,
      `query { viewer { memberships { tenant { inferenceServices(first: 10) { edges { node { id } } } } } } }`,
    );
    expect(JSON.stringify(list.data)).not.toContain('"id"');
  });

  it('runs as a LeaderWorkerSet (valid against its CRD) once the cluster serves it: one group per replica', async () => {
    t.kube.installCrd(
      readFileSync(join(crdDirectory(), 'leaderworkerset.x-k8s.io_leaderworkersets.yaml'), 'utf8'),
    );
    const bob = t.token('borealis-inference', 'MEMBER');
    const r = await t.gql(bob, CREATE_SERVICE, { input });
    expect(r.errors).toBeUndefined();
    const id = raw(r.data.createInferenceService.id);
    const lws = await eventually(
      () => t.kube.get('LeaderWorkerSet', NS, `fw-${id}-r1`),
      'the LeaderWorkerSet',
      15_000,
    );
    expect(lws.spec.replicas).toBe(1);
    expect(lws.spec.leaderWorkerTemplate.size).toBe(2);
    expect(lws.spec.leaderWorkerTemplate.workerTemplate.spec.schedulingGates).toEqual([
      { name: 'fairway.dev/placement' },
    ]);
    expect(t.kube.invalid.filter((i) => i.kind === 'LeaderWorkerSet')).toEqual([]);
    expect(t.kube.get('Service', NS, `fw-${id}`)).toBeDefined();
  });
});
