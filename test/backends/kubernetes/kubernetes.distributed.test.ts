// Distributed training and disruptions with FAIRWAY_BACKEND=kubernetes, against the test API
// server as strict as a real one: a multi-pod job's pods find each other through cluster DNS;
// an eviction, a drain, a pod deleted from outside or a lost node requeue the job (DISRUPTED, then
// RUNNING again, charged only for the time it held GPUs), while its own exit code fails it or is
// retried; a policy's grace becomes the pods' grace and the charge runs until they are gone; a
// slow Job controller does not fail a readmission; exact placement survives a spreading scheduler.
import { afterEach, describe, expect, it } from 'vitest';
import { Job, JobEvent } from '../../../src/persistence/jobs/entities.js';
import { UsageRecord } from '../../../src/persistence/metering/entities.js';
import { TENANT_FILTER } from '../../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../../helpers/database.js';
import { startKubeApiServer } from '../../helpers/kube-api-server/index.js';
import { eventually, gpuNode, type KubeTestApp, startKubeApp } from '../../helpers/kube-app.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id state } }`;
const JOB = `query($id: ID!) { node(id: $id) { ... on Job { id state exitReason disruptionCount events(first: 50) { edges { node { type reason message } } } } } }`;
const IMAGE = 'nvcr.io/nvidia/pytorch:24.05-py3';
const NS = 'fairway-aurora-research';
// The test kubelet ends a pod after 300 ms unless told otherwise: these pods run until stopped.
const RUNS_ON = { name: 'FAIRWAY_TEST_RUN_MS', value: '600000' };

let t: KubeTestApp | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

const decode = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1]!;
const podsOf = (k: KubeTestApp, jobId: string) =>
  k.kube.objects('Pod', NS).filter((p) => p.metadata.labels?.['fairway.dev/job-id'] === jobId);
const runningPods = (k: KubeTestApp, jobId: string) =>
  podsOf(k, jobId).filter((p) => p.status?.phase === 'Running' && !p.metadata.deletionTimestamp);

async function submit(k: KubeTestApp, input: Record<string, unknown>) {
  const res = await k.gql(k.token('aurora-research', 'MEMBER'), SUBMIT, {
    in: { name: 'train', podSets: [{ gpusPerPod: 1 }], ...input },
  });
  expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
  return res.data!.submitJob.id as string;
}

async function jobOf(k: KubeTestApp, id: string) {
  const res = await k.gql(k.token('aurora-research', 'TENANT_ADMIN'), JOB, { id });
  return res.data!.node as {
    state: string;
    exitReason: string | null;
    disruptionCount: number;
    events: { edges: { node: { type: string; reason: string | null; message: string | null } }[] };
  };
}

const until = (k: KubeTestApp, id: string, state: string, timeoutMs = 15_000) =>
  eventually(async () => (await jobOf(k, id)).state === state, `${state}`, timeoutMs);

function systemEm(k: KubeTestApp) {
  const em = k.app.orm.em.fork({ clear: true });
  em.setFilterParams(TENANT_FILTER, { all: true });
  return em;
}

describe('a torchrun-style job finds its peers', () => {
  it('2 pods × 8 GPUs: MASTER_ADDR resolves to pod 0 through the Service, NODE_RANKs 0..1, WORLD_SIZE 16', async () => {
    t = await startKubeApp();
    const id = await submit(t, {
      podSets: [{ count: 2, gpusPerPod: 8, flavors: ['h100-80g'] }],
      container: { image: IMAGE, command: ['torchrun', 'train.py'], env: [RUNS_ON] },
    });
    const jobId = decode(id);
    await until(t, id, 'RUNNING');
    const pods = runningPods(t, jobId);
    expect(pods).toHaveLength(2);
    const envOf = (pod: any) =>
      Object.fromEntries(
        pod.spec.containers[0].env.map((e: any) => [
          e.name,
          e.value ?? pod.metadata.annotations?.['batch.kubernetes.io/job-completion-index'],
        ]),
      );
    const envs = pods.map(envOf);
    expect(envs.map((e) => e.NODE_RANK).sort()).toEqual(['0', '1']);
    expect(new Set(envs.map((e) => e.MASTER_ADDR)).size).toBe(1);
    expect(new Set(envs.map((e) => e.WORLD_SIZE))).toEqual(new Set(['16']));
    const rank0 = pods.find((p) => envOf(p).NODE_RANK === '0')!;
    // From inside the namespace, MASTER_ADDR is pod 0's address.
    expect(t.kube.resolve(envs[0]!.MASTER_ADDR, NS)).toBe(rank0.status.podIP);
    expect(rank0.status.podIP).toBeTruthy();
    // Each pod on the node Fairway placed it on, one per node.
    expect(new Set(pods.map((p) => p.spec.nodeName)).size).toBe(2);
    expect(t.kube.invalid).toEqual([]);
    await t.gql(
      t.token('aurora-research', 'TENANT_ADMIN'),
      `mutation($id: ID!) { cancelJob(id: $id) { state } }`,
      {
        id,
      },
    );
    await eventually(() => !t!.kube.get('Service', NS, `fw-${jobId}`), 'the Service removed with the job');
  });
});

describeEachDialect('disruptions requeue, failures fail', (dialect) => {
  it('evict, drain, delete from outside, a lost node: PENDING, then RUNNING again, each with a DISRUPTED event', async () => {
    const nodes = [1, 2, 3, 4].map((i) => gpuNode(`gpu-h100-${i}`));
    t = await startKubeApp({ dialect, nodes });
    const id = await submit(t, {
      podSets: [{ count: 1, gpusPerPod: 8, flavors: ['h100-80g'] }],
      container: { image: IMAGE, env: [RUNS_ON] },
      checkpoint: { intervalSeconds: 60 },
    });
    const jobId = decode(id);
    const disruptions: [string, (pod: any) => void][] = [
      ['EvictionByEvictionAPI', (pod) => t!.kube.evict(NS, pod.metadata.name)],
      ['EvictionByEvictionAPI', (pod) => t!.kube.drain(pod.spec.nodeName)],
      ['DeletedFromOutside', (pod) => t!.kube.remove('Pod', NS, pod.metadata.name)],
      ['DeletionByPodGC', (pod) => t!.kube.remove('Node', undefined, pod.spec.nodeName)],
    ];
    for (const [i, [cause, disrupt]] of disruptions.entries()) {
      await until(t, id, 'RUNNING');
      const [pod] = await eventually(
        () => runningPods(t!, jobId).length === 1 && runningPods(t!, jobId),
        'its pod',
      );
      disrupt(pod);
      await eventually(async () => (await jobOf(t!, id)).disruptionCount === i + 1, `disruption ${i + 1}`);
      const events = (await jobOf(t!, id)).events.edges.map((e) => e.node);
      expect(events.filter((e) => e.type === 'DISRUPTED')).toHaveLength(i + 1);
      expect(events.filter((e) => e.type === 'DISRUPTED').at(-1)!.message).toContain(cause);
    }
    await until(t, id, 'RUNNING');
    const job = await systemEm(t).findOneOrFail(Job, { id: jobId });
    expect(job.state).toBe('RUNNING');
    expect(job.preemptionCount).toBe(0);
    // Charged once for each held interval: the rows never overlap, and each disruption closed one.
    const rows = await systemEm(t).find(UsageRecord, { job: jobId }, { orderBy: { startedAt: 'asc' } });
    expect(rows.filter((r) => r.closedBy === 'disrupted').length).toBe(disruptions.length);
    for (let k = 1; k < rows.length; k++)
      expect(rows[k]!.startedAt.getTime()).toBeGreaterThanOrEqual(rows[k - 1]!.endedAt.getTime());
    expect(t.kube.invalid).toEqual([]);
  });

  it('exit 1 fails the job; with maxRetries 2 the Job controller runs it three times before it fails', async () => {
    t = await startKubeApp({ dialect });
    const failing = (over: Record<string, unknown> = {}) =>
      submit(t!, {
        container: {
          image: IMAGE,
          env: [
            { name: 'FAIRWAY_TEST_RUN_MS', value: '200' },
            { name: 'FAIRWAY_TEST_OUTCOME', value: 'fail' },
          ],
        },
        ...over,
      });
    const once = await failing();
    await until(t, once, 'FAILED');
    expect((await jobOf(t, once)).exitReason).toMatch(/exit(ed with)? code 1/);
    const retried = await failing({ maxRetries: 2 });
    await until(t, retried, 'FAILED');
    const pods = podsOf(t, decode(retried));
    expect(pods.filter((p) => p.status?.phase === 'Failed')).toHaveLength(3);
    expect((await jobOf(t, retried)).disruptionCount).toBe(0);
  });
});

describe('grace, metering and readmission', () => {
  it('a 300 s policy grace: the pods get it, and the preempted run is charged until the cluster says they are gone', async () => {
    const nodes = [1, 2, 3, 4].map((i) => gpuNode(`gpu-h100-${i}`));
    t = await startKubeApp({ nodes });
    // Borealis's queue is governed by the built-in elastic policy: its preempted pods get 300 s.
    const admin = t.token(null, 'PLATFORM_ADMIN');
    const policy = await t.gql(
      admin,
      `mutation { setIsolationPolicy(input: { name: "elastic", preemptible: ANY, reclaimGraceSeconds: 300, minRunBeforeReclaimSeconds: 0, lend: { min: 0.5, base: 1, max: 1 }, idle: { action: NOTIFY, utilizationBelow: 0.1, idleForSeconds: 1800, notRunningForSeconds: 900 } }) { name reclaimGraceSeconds } }`,
    );
    expect(policy.errors, JSON.stringify(policy.errors)).toBeUndefined();
    const borealis = t.token('borealis-inference', 'MEMBER');
    const wide = await t.gql(borealis, SUBMIT, {
      in: {
        name: 'wide',
        podSets: [{ count: 4, gpusPerPod: 8, flavors: ['h100-80g'] }],
        // Each pod takes 1.5 s to stop after SIGTERM: far less than its 300 s.
        container: { image: IMAGE, env: [RUNS_ON, { name: 'FAIRWAY_TEST_SIGTERM_MS', value: '1500' }] },
      },
    });
    expect(wide.errors, JSON.stringify(wide.errors)).toBeUndefined();
    const wideId = decode(wide.data!.submitJob.id);
    await eventually(
      async () => (await systemEm(t!).findOneOrFail(Job, { id: wideId })).state === 'RUNNING',
      'wide RUNNING',
    );
    const pods = t.kube.objects('Pod', 'fairway-borealis-inference');
    expect(pods.length).toBe(4);
    for (const pod of pods) expect(pod.spec.terminationGracePeriodSeconds).toBe(300);
    // Aurora claims its nominal back: the borrower is preempted, its notice says the grace.
    const claim = await submit(t, {
      name: 'claim',
      podSets: [{ count: 2, gpusPerPod: 8, flavors: ['h100-80g'] }],
      container: { image: IMAGE, env: [RUNS_ON] },
    });
    await until(t, claim, 'RUNNING', 20_000);
    const victim = await systemEm(t).findOneOrFail(Job, { id: wideId });
    const preemptedAt = victim.stoppingSince ?? null;
    const events = await systemEm(t).find(JobEvent, { job: wideId, type: 'PREEMPTED' });
    expect(events[0]!.message).toMatch(/its pods get 300 s to stop/);
    // The pods stopped 1.5 s after SIGTERM: the stopping run is charged that long, not 300 s.
    await eventually(
      async () => (await systemEm(t!).findOneOrFail(Job, { id: wideId })).stoppingSince === null,
      'the stopping run closed',
    );
    const grace = await systemEm(t).find(UsageRecord, { job: wideId, closedBy: 'grace' });
    expect(grace.length).toBeGreaterThan(0);
    const seconds = Math.max(...grace.map((r) => (r.endedAt.getTime() - r.startedAt.getTime()) / 1000));
    expect(preemptedAt === null || grace.every((r) => r.startedAt.getTime() >= preemptedAt)).toBe(true);
    expect(seconds).toBeGreaterThanOrEqual(1.4);
    expect(seconds).toBeLessThan(60);
  });

  it('a slow Job controller (startTime cleared 3 s after the pods are gone): the readmission waits and succeeds', async () => {
    const kube = await startKubeApiServer({ kubelet: { startDelayMs: 20 }, jobControllerDelayMs: 3000 });
    t = await startKubeApp({ kube, nodes: [1, 2].map((i) => gpuNode(`gpu-h100-${i}`)) });
    const id = await submit(t, {
      podSets: [{ gpusPerPod: 8, flavors: ['h100-80g'] }],
      container: { image: IMAGE, env: [RUNS_ON] },
    });
    const jobId = decode(id);
    await until(t, id, 'RUNNING');
    const [pod] = runningPods(t, jobId);
    t.kube.evict(NS, pod.metadata.name);
    await eventually(async () => (await jobOf(t!, id)).disruptionCount === 1, 'the disruption');
    await until(t, id, 'RUNNING', 20_000);
    expect((await jobOf(t, id)).exitReason).toBeNull();
    expect(t.kube.writes.filter((w) => w.kind === 'Job' && w.status === 422)).toEqual([]);
  });

  it('a scheduler that spreads (LeastAllocated): pods still land where Fairway placed them', async () => {
    const kube = await startKubeApiServer({ kubelet: { startDelayMs: 20 }, scoring: 'least-allocated' });
    t = await startKubeApp({ kube, nodes: [1, 2].map((i) => gpuNode(`gpu-h100-${i}`)) });
    // Four 4-GPU pods: Fairway packs them two per node; a spreading scheduler alone would too, so
    // first a 4-GPU job on node 1 makes LeastAllocated prefer node 2 for the next pods.
    const ids = [];
    for (let i = 0; i < 4; i++)
      ids.push(
        await submit(t, {
          name: `p${i}`,
          podSets: [{ gpusPerPod: 4, flavors: ['h100-80g'] }],
          container: { image: IMAGE, env: [RUNS_ON] },
        }),
      );
    for (const id of ids) await until(t, id, 'RUNNING');
    const placements = await systemEm(t).find(Job, { id: { $in: ids.map(decode) } });
    for (const job of placements) {
      const planned = job.admission!.podSets[0]!.placements.find((p) => p.pods > 0)!.node;
      const [pod] = runningPods(t, job.id);
      expect(pod.spec.nodeName).toBe(planned);
    }
    const events = await Promise.all(ids.map((id) => jobOf(t!, id)));
    for (const e of events)
      expect(e.events.edges.map((x) => x.node.type)).not.toContain('ADMITTED_NOT_RUNNING');
  });
});
