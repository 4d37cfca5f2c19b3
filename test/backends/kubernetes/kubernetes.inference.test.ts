// Inference services on the local test cluster, through the graph: a revision runs as a Deployment whose
// count is Fairway's (one pod per admitted replica job, each released to the replica's own node), behind
// a ClusterIP Service; the autoscaler reads requests in flight from each serving pod's metrics endpoint
// (a real HTTP server here) and readiness from the pods; a HorizontalPodAutoscaler aimed at the
// Deployment is removed (it would fight Fairway's count); a replica scaled away drains for its grace
// while the others serve on; an image change rolls to a new revision's Deployment without ever running
// more than the count plus maxSurge.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, gpuNode, type KubeTestApp, startKubeApp } from '../../helpers/kube-app.js';
import { CREATE_SERVICE, chatService, type InFlightEndpoint, inFlightEndpoint } from './service-fixtures.js';

const NS = 'fairway-borealis-inference';
const UPDATE = `mutation($id: ID!, $input: UpdateInferenceServiceInput!) { updateInferenceService(id: $id, input: $input) { revision } }`;
const READ = `query($id: ID!) { inferenceService(id: $id) {
  revision replicas { desired admitted ready }
  replicaJobs { id state replicaSlot }
  lastDecision { desired signalValue ready reason }
} }`;

let metrics: InFlightEndpoint;

describe('inference services on Kubernetes', () => {
  let t: KubeTestApp;
  let bob: string;
  let id = '';
  const rawId = () => Buffer.from(id, 'base64').toString().split(':')[1]!;
  const read = async () => {
    const r = await t.gql(bob, READ, { id });
    if (!r.data) throw new Error(JSON.stringify(r.errors));
    return r.data.inferenceService;
  };
  const autoscale = () => t.app.scheduler.runLeaderTask('inference-autoscaler');
  const deployment = (revision: number) => t.kube.get('Deployment', NS, `fw-${rawId()}-r${revision}`);
  const podsOf = (revision: number) =>
    t.kube
      .objects('Pod')
      .filter(
        (p) =>
          p.metadata.labels?.['fairway.dev/service-id'] === rawId() &&
          p.metadata.labels?.['fairway.dev/service-revision'] === String(revision),
      );
  const load = (total: number) => {
    metrics.set(total);
  };

  beforeAll(async () => {
    metrics = await inFlightEndpoint(() => t.kube.objects('Pod'));
    t = await startKubeApp({
      nodes: [gpuNode('gpu-h100-1'), gpuNode('gpu-h100-2')],
      kubelet: { startDelayMs: 20, defaultRunMs: 3_600_000 },
      settings: {
        serviceSignals: {
          source: 'endpoint',
          endpointUrl: metrics.url,
        },
      },
      inference: { intervalMs: 3_600_000 },
    });
    bob = t.token('borealis-inference', 'MEMBER');
  }, 60_000);
  afterAll(async () => {
    await t?.close();
    await metrics?.close();
  });

  it('runs the minimum as a Deployment of gated pods, each given to one replica on its own node, behind a Service', async () => {
    const created = await t.gql(bob, CREATE_SERVICE, { input: chatService({ maxSurge: 1 }) });
    expect(created.errors).toBeUndefined();
    id = created.data.createInferenceService.id;
    const d = await eventually(() => deployment(1), 'the Deployment');
    expect(d.spec.replicas).toBe(1);
    expect(t.kube.get('Service', 'fairway-borealis-inference', `fw-${rawId()}`)).toBeDefined();
    await eventually(async () => (await read()).replicas.ready === 1, 'one replica serving');
    const s = await read();
    const [pod] = podsOf(1);
    expect(pod.metadata.labels['fairway.dev/job-id']).toBe(
      Buffer.from(s.replicaJobs[0].id, 'base64').toString().split(':')[1],
    );
    expect(pod.spec.nodeSelector['kubernetes.io/hostname']).toBe(pod.spec.nodeName);
    expect(pod.spec.schedulingGates ?? []).toEqual([]);
  });

  it('a replica’s log is its pod’s, read through its job', async () => {
    const s = await read();
    const [pod] = podsOf(1);
    t.kube.writeLog(NS, pod.metadata.name, 'serving on :8080\n');
    await eventually(async () => {
      const r = await t.gql(
        bob,
        `query($id: ID!) { node(id: $id) { ... on Job { logs { lines { text } } } } }`,
        {
          id: s.replicaJobs[0].id,
        },
      );
      return r.data?.node.logs.lines.some((l: { text: string }) => l.text.includes('serving on :8080'));
    }, 'the replica’s log line');
  });

  it('scales on the requests in flight its pods report: one pod per admitted replica, each its own job’s', async () => {
    load(0);
    await autoscale(); // the first scrape of each pod
    load(14);
    await autoscale();
    let s = await read();
    expect(s.lastDecision.signalValue).toBe(14);
    expect(s.replicas.desired).toBe(4);
    await eventually(async () => (await read()).replicas.ready === 4, 'four replicas serving', 15_000);
    expect(deployment(1).spec.replicas).toBe(4);
    s = await read();
    const jobIds = s.replicaJobs.map(
      (j: { id: string }) => Buffer.from(j.id, 'base64').toString().split(':')[1],
    );
    const pods = podsOf(1).filter((p) => !p.metadata.deletionTimestamp);
    expect(pods.map((p) => p.metadata.labels['fairway.dev/job-id']).sort()).toEqual([...jobIds].sort());
  });

  it('removes a HorizontalPodAutoscaler aimed at the Deployment: the count stays Fairway’s', async () => {
    t.kube.put({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name: 'team-hpa', namespace: 'fairway-borealis-inference' },
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: `fw-${rawId()}-r1` },
        minReplicas: 6,
        maxReplicas: 6,
      },
    });
    load(15);
    await autoscale(); // 15 in flight, 4 a replica: still 4
    await eventually(
      () => !t.kube.get('HorizontalPodAutoscaler', 'fairway-borealis-inference', 'team-hpa'),
      'the HPA removed',
    );
    await eventually(() => deployment(1).spec.replicas === 4, 'the count back to 4');
    expect((await read()).replicas.desired).toBe(4);
  });

  it('a replica scaled away drains (its pod terminating for its grace) while the others serve on', async () => {
    const before = await read();
    load(7);
    await autoscale(); // 7 in flight: 2 replicas
    const s = await read();
    expect(s.replicas.desired).toBe(2);
    const gone = before.replicaJobs
      .filter((j: { id: string }) => !s.replicaJobs.some((k: { id: string }) => k.id === j.id))
      .map((j: { id: string }) => Buffer.from(j.id, 'base64').toString().split(':')[1]);
    expect(gone).toHaveLength(2);
    await eventually(() => deployment(1).spec.replicas === 2, 'the count down to 2');
    // The pods of the replicas that stay were not touched.
    const kept = s.replicaJobs.map(
      (j: { id: string }) => Buffer.from(j.id, 'base64').toString().split(':')[1],
    );
    await eventually(() => {
      const live = podsOf(1).filter((p) => !p.metadata.deletionTimestamp);
      return live.length === 2 && live.every((p) => kept.includes(p.metadata.labels['fairway.dev/job-id']));
    }, 'only the kept replicas’ pods live');
    await eventually(() => podsOf(1).length === 2, 'the drained pods gone', 20_000);
  });

  it('an image change rolls to a new revision’s Deployment, never more than the count plus maxSurge', async () => {
    let most = 0;
    const sampler = setInterval(() => {
      const holding = [1, 2].flatMap(podsOf).filter((p) => p.spec.nodeName).length;
      most = Math.max(most, holding);
    }, 10);
    const r = await t.gql(bob, UPDATE, { id, input: { container: { image: 'registry.example/chat:2' } } });
    expect(r.errors).toBeUndefined();
    for (let i = 0; i < 10; i++) {
      await new Promise((res) => setTimeout(res, 300));
      await autoscale();
      if (podsOf(1).length === 0 && (await read()).replicas.ready === 2) break;
    }
    clearInterval(sampler);
    await eventually(async () => (await read()).replicas.ready === 2, 'two replicas of revision 2', 20_000);
    expect(podsOf(2).every((p) => p.spec.containers[0].image === 'registry.example/chat:2')).toBe(true);
    await eventually(() => !deployment(1), 'the old revision’s Deployment removed', 20_000);
    // Terminating pods hold their GPUs too, so they count: 2 replicas + 1 surge.
    expect(most).toBeLessThanOrEqual(3);
    expect(t.errors).toEqual([]);
  });
});
