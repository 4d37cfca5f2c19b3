// Workload kinds end to end with FAIRWAY_BACKEND=kubernetes: a job submitted as a JobSet, a
// PyTorchJob, a RayJob or a RayCluster becomes that custom object (validated by the test API server
// against its CRD), its controller's pods run where Fairway placed them, a preemption suspends it and
// the readmission resumes it, and its status comes back as the job's state; a cluster that does not
// serve the CRD refuses the kind at submit with nothing written, as bad pod sets are refused.
import { afterEach, describe, expect, it } from 'vitest';
import { CRDS, RESTRICTED_PYTORCH_INIT } from '../../helpers/kube-api-server/crd-fixtures.js';
import { startKubeApiServer } from '../../helpers/kube-api-server/index.js';
import { eventually, gpuNode, type KubeTestApp, startKubeApp } from '../../helpers/kube-app.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id state workloadKind } }`;
const JOB = `query($id: ID!) { node(id: $id) { ... on Job { state exitReason workloadKind events(first: 50) { edges { node { type } } } } } }`;
const NS = 'fairway-aurora-research';
const IMAGE = 'nvcr.io/nvidia/pytorch:24.05-py3';
const runFor = (ms: number, outcome?: 'fail') => [
  { name: 'FAIRWAY_TEST_RUN_MS', value: String(ms) },
  ...(outcome ? [{ name: 'FAIRWAY_TEST_OUTCOME', value: outcome }] : []),
];

let t: KubeTestApp | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

const decode = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1]!;

async function startWithCrds(crds: string | false = CRDS) {
  const kube = await startKubeApiServer({
    kubelet: { startDelayMs: 20, defaultRunMs: 300 },
    ...(crds ? { crds } : {}),
    // The Training Operator's init container as a restricted namespace needs it (its template file).
    pytorchInitContainerTemplate: RESTRICTED_PYTORCH_INIT,
  });
  return startKubeApp({ kube, nodes: [1, 2, 3, 4].map((i) => gpuNode(`gpu-h100-${i}`)) });
}

async function submit(k: KubeTestApp, input: Record<string, unknown>, who = 'aurora-research') {
  return k.gql(k.token(who, 'MEMBER'), SUBMIT, { in: { name: 'w', ...input } });
}

async function stateOf(k: KubeTestApp, id: string, who = 'aurora-research') {
  const res = await k.gql(k.token(who, 'TENANT_ADMIN'), JOB, { id });
  return res.data!.node as { state: string; exitReason: string | null; workloadKind: string };
}

const until = (k: KubeTestApp, id: string, state: string, timeoutMs = 20_000) =>
  eventually(async () => (await stateOf(k, id)).state === state, state, timeoutMs);

const KINDS = [
  {
    kind: 'JOBSET',
    crdKind: 'JobSet',
    podSets: [{ name: 'workers', count: 2, gpusPerPod: 8, flavors: ['h100-80g'] }],
  },
  {
    kind: 'PYTORCH_JOB',
    crdKind: 'PyTorchJob',
    podSets: [
      { name: 'master', count: 1, gpusPerPod: 8, flavors: ['h100-80g'] },
      { name: 'worker', count: 1, gpusPerPod: 8, flavors: ['h100-80g'] },
    ],
  },
  {
    kind: 'RAY_JOB',
    crdKind: 'RayJob',
    podSets: [
      { name: 'head', count: 1, gpusPerPod: 0 },
      { name: 'gpu', count: 2, gpusPerPod: 8, flavors: ['h100-80g'] },
    ],
  },
] as const;

describe('workload kinds', () => {
  for (const { kind, crdKind, podSets } of KINDS) {
    it(`${kind}: the ${crdKind} is made and valid, its pods run where Fairway placed them, SUCCEEDED; a failing one FAILED`, async () => {
      t = await startWithCrds();
      const ok = await submit(t, {
        workloadKind: kind,
        podSets,
        container: { image: IMAGE, command: ['python', 'train.py'], env: runFor(1500) },
      });
      expect(ok.errors, JSON.stringify(ok.errors)).toBeUndefined();
      expect(ok.data!.submitJob.workloadKind).toBe(kind);
      const id = ok.data!.submitJob.id as string;
      const jobId = decode(id);
      const ofJob = () =>
        t!.kube.objects(crdKind, NS).filter((o) => o.metadata.labels?.['fairway.dev/job-id'] === jobId);
      const [object] = await eventually(() => ofJob().length > 0 && ofJob(), `the ${crdKind}`);
      expect(object).toBeTruthy();
      await until(t, id, 'RUNNING');
      const pods = t.kube
        .objects('Pod', NS)
        .filter((p) => p.metadata.labels?.['fairway.dev/job-id'] === jobId && p.status?.phase === 'Running');
      const gpuPods = pods.filter((p) => p.spec.containers[0].resources?.limits?.['nvidia.com/gpu']);
      // Every GPU pod on its own node, as Fairway placed them (8 GPUs per pod, 8 per node).
      expect(new Set(gpuPods.map((p) => p.spec.nodeName)).size).toBe(gpuPods.length);
      await until(t, id, 'SUCCEEDED');
      const bad = await submit(t, {
        name: 'fails',
        workloadKind: kind,
        podSets,
        container: { image: IMAGE, command: ['python', 'train.py'], env: runFor(300, 'fail') },
      });
      expect(bad.errors, JSON.stringify(bad.errors)).toBeUndefined();
      await until(t, bad.data!.submitJob.id, 'FAILED');
      expect((await stateOf(t, bad.data!.submitJob.id)).exitReason).toBeTruthy();
      expect(t.kube.invalid).toEqual([]);
    });
  }

  // Borealis borrows the 32 GPUs (its 16 and Aurora's idle 16) as four 8-GPU pods of each kind.
  const WIDE = [
    { kind: 'JOBSET', crdKind: 'JobSet', podSets: [{ count: 4, gpusPerPod: 8, flavors: ['h100-80g'] }] },
    {
      kind: 'PYTORCH_JOB',
      crdKind: 'PyTorchJob',
      podSets: [
        { name: 'master', count: 1, gpusPerPod: 8, flavors: ['h100-80g'] },
        { name: 'worker', count: 3, gpusPerPod: 8, flavors: ['h100-80g'] },
      ],
    },
    {
      kind: 'RAY_JOB',
      crdKind: 'RayJob',
      podSets: [
        { name: 'head', count: 1, gpusPerPod: 0 },
        { name: 'gpu', count: 4, gpusPerPod: 8, flavors: ['h100-80g'] },
      ],
    },
    {
      kind: 'RAY_CLUSTER',
      crdKind: 'RayCluster',
      podSets: [
        { name: 'head', count: 1, gpusPerPod: 0 },
        { name: 'gpu', count: 4, gpusPerPod: 8, flavors: ['h100-80g'] },
      ],
    },
  ] as const;
  const suspended = (o: { spec?: Record<string, any> } | undefined) =>
    o?.spec?.suspend ?? o?.spec?.runPolicy?.suspend ?? false;

  for (const { kind, crdKind, podSets } of WIDE) {
    it(`${kind}: a preemption suspends the ${crdKind} (its GPU pods gone), the readmission resumes it`, async () => {
      t = await startWithCrds();
      const BOREALIS = 'fairway-borealis-inference';
      const wide = await submit(
        t,
        {
          workloadKind: kind,
          podSets,
          container: {
            image: 'registry.borealis.example/train:1',
            ...(kind === 'RAY_CLUSTER' ? {} : { command: ['python', 'serve.py'] }),
            env: runFor(600_000),
          },
        },
        'borealis-inference',
      );
      expect(wide.errors, JSON.stringify(wide.errors)).toBeUndefined();
      const wideId = decode(wide.data!.submitJob.id);
      const object = () =>
        t!.kube.objects(crdKind, BOREALIS).find((o) => o.metadata.labels?.['fairway.dev/job-id'] === wideId);
      const runningGpuPods = () =>
        t!.kube
          .objects('Pod', BOREALIS)
          .filter(
            (p) =>
              p.status?.phase === 'Running' && p.spec.containers[0].resources?.limits?.['nvidia.com/gpu'],
          ).length;
      await eventually(
        () => object() && !suspended(object()) && runningGpuPods() === 4,
        `the ${crdKind} running`,
      );
      const claim = await submit(t, {
        podSets: [{ count: 2, gpusPerPod: 8, flavors: ['h100-80g'] }],
        container: { image: IMAGE, env: runFor(1500) },
      });
      expect(claim.errors, JSON.stringify(claim.errors)).toBeUndefined();
      await eventually(() => suspended(object()), `the ${crdKind} suspended`);
      await eventually(() => runningGpuPods() === 0, `the ${crdKind}'s GPU pods gone`);
      await eventually(
        async () => (await stateOf(t!, wide.data!.submitJob.id, 'borealis-inference')).state === 'PENDING',
        'PENDING',
      );
      await until(t, claim.data!.submitJob.id, 'SUCCEEDED');
      // Aurora's job ended: the borrower is admitted again and its object resumed, the same one.
      const uid = object()?.metadata.uid;
      await eventually(
        () => !suspended(object()) && runningGpuPods() === 4,
        `the ${crdKind} resumed and running`,
        30_000,
      );
      expect(object()?.metadata.uid).toBe(uid);
      // Its pods run; the informer's STARTED report follows.
      await eventually(
        async () => (await stateOf(t!, wide.data!.submitJob.id, 'borealis-inference')).state === 'RUNNING',
        'RUNNING again',
      );
      expect(t.kube.invalid).toEqual([]);
    });
  }

  it('RAY_CLUSTER: an open-ended Ray cluster runs until cancelled, and the cancel deletes it', async () => {
    t = await startWithCrds();
    const res = await submit(t, {
      workloadKind: 'RAY_CLUSTER',
      podSets: [
        { name: 'head', count: 1, gpusPerPod: 0 },
        { name: 'gpu', count: 2, gpusPerPod: 8, flavors: ['h100-80g'] },
      ],
      container: { image: IMAGE },
    });
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    const id = res.data!.submitJob.id as string;
    const jobId = decode(id);
    const cluster = () =>
      t!.kube.objects('RayCluster', NS).find((o) => o.metadata.labels?.['fairway.dev/job-id'] === jobId);
    await until(t, id, 'RUNNING');
    expect(cluster()?.status?.state).toBe('ready');
    // Still running well past any run time: nothing ends it but a cancel.
    await new Promise((r) => setTimeout(r, 1000));
    expect((await stateOf(t, id)).state).toBe('RUNNING');
    const cancel = await t.gql(
      t.token('aurora-research', 'TENANT_ADMIN'),
      `mutation($id: ID!) { cancelJob(id: $id) { state } }`,
      { id },
    );
    expect(cancel.errors, JSON.stringify(cancel.errors)).toBeUndefined();
    await eventually(() => !cluster(), 'the RayCluster deleted');
  });

  it('a cluster that does not serve the CRD refuses the kind at submit, naming it; nothing is written', async () => {
    t = await startWithCrds(false);
    const before = t.kube.writes.length;
    const res = await submit(t, {
      workloadKind: 'JOBSET',
      podSets: [{ count: 2, gpusPerPod: 8, flavors: ['h100-80g'] }],
      container: { image: IMAGE },
    });
    expect(res.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(res.errors?.[0]?.message).toMatch(/JobSet/);
    const jobs = await t.gql(
      t.token('aurora-research', 'TENANT_ADMIN'),
      `{ tenant(slug: "aurora-research") { jobs(first: 5) { edges { node { id } } } } }`,
    );
    expect(jobs.data!.tenant.jobs.edges).toEqual([]);
    expect(t.kube.writes.length).toBe(before);
  });

  it('bad pod sets for a kind are refused with BAD_USER_INPUT, nothing written', async () => {
    t = await startWithCrds();
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['PYTORCH_JOB', { podSets: [{ name: 'trainer', count: 2, gpusPerPod: 8 }] }, /master/],
      [
        'RAY_JOB',
        {
          podSets: [
            { name: 'head', count: 1 },
            { name: 'gpu', count: 1, gpusPerPod: 8 },
          ],
        },
        /command|entrypoint/,
      ],
      ['RAY_CLUSTER', { podSets: [{ name: 'head', count: 2 }] }, /head/],
      // A Ray head with GPUs it cannot get: 16 on one pod where every node has 8.
      [
        'RAY_CLUSTER',
        {
          podSets: [
            { name: 'head', count: 1, gpusPerPod: 16, flavors: ['h100-80g'] },
            { name: 'gpu', count: 1, gpusPerPod: 8, flavors: ['h100-80g'] },
          ],
        },
        /head.*larger than any/,
      ],
    ];
    for (const [kind, input, message] of cases) {
      const res = await submit(t, { workloadKind: kind, container: { image: IMAGE }, ...input });
      expect(res.errors?.[0]?.extensions?.code, kind).toBe('BAD_USER_INPUT');
      expect(res.errors?.[0]?.message, kind).toMatch(message);
    }
    const jobs = await t.gql(
      t.token('aurora-research', 'TENANT_ADMIN'),
      `{ tenant(slug: "aurora-research") { jobs(first: 5) { edges { node { id } } } } }`,
    );
    expect(jobs.data!.tenant.jobs.edges).toEqual([]);
  });
});
