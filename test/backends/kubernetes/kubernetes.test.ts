// FAIRWAY_BACKEND=kubernetes end to end against the test API server: every object Fairway
// writes is validated there with the Kubernetes OpenAPI schemas (kubernetes-models), and the
// server's Job controller, scheduler and kubelet run what Fairway creates.
import { afterEach, describe, expect, it } from 'vitest';
import { Tenant } from '../../../src/persistence/tenancy/entities.js';
import { describeEachDialect } from '../../helpers/database.js';
import { eventually, gpuNode, type KubeTestApp, startKubeApp } from '../../helpers/kube-app.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id state } }`;
const JOB = `query($id: ID!) { node(id: $id) { ... on Job { id state exitReason events(first: 50) { edges { node { type reason message } } } } } }`;

let t: KubeTestApp | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

const decode = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1]!;
const jobsOf = (k: KubeTestApp, jobId: string) =>
  k.kube.objects('Job').filter((j) => j.metadata.labels?.['fairway.dev/job-id'] === jobId);

async function submit(
  k: KubeTestApp,
  input: Record<string, unknown>,
  who: [string, 'TENANT_ADMIN' | 'MEMBER'] = ['aurora-research', 'MEMBER'],
) {
  const res = await k.gql(k.token(...who), SUBMIT, {
    in: { name: 'train', podSets: [{ gpusPerPod: 1 }], expectedDurationSeconds: 3600, ...input },
  });
  return res;
}

async function stateOf(
  k: KubeTestApp,
  id: string,
  who: [string, 'TENANT_ADMIN' | 'MEMBER'] = ['aurora-research', 'TENANT_ADMIN'],
) {
  const res = await k.gql(k.token(...who), JOB, { id });
  return res.data?.node as {
    state: string;
    exitReason: string | null;
    events: { edges: { node: { type: string; reason: string | null; message: string | null } }[] };
  };
}

const IMAGE = 'nvcr.io/nvidia/pytorch:24.05-py3';

describeEachDialect('Kubernetes backend, submit to SUCCEEDED', (dialect) => {
  it('turns a submitJob into a validated batch/v1 Job and brings it back as SUCCEEDED', async () => {
    t = await startKubeApp({ dialect });
    const res = await submit(t, {
      container: { image: IMAGE, command: ['python', 'train.py'], env: [{ name: 'EPOCHS', value: '3' }] },
    });
    expect(res.errors).toBeUndefined();
    const id = res.data!.submitJob.id as string;
    const jobId = decode(id);
    const [job] = await eventually(() => jobsOf(t!, jobId).length > 0 && jobsOf(t!, jobId), 'the Job object');
    expect(job.metadata.namespace).toBe('fairway-aurora-research');
    const pod = job.spec.template.spec;
    expect(pod.containers[0].image).toBe(IMAGE);
    expect(pod.containers[0].resources.limits['nvidia.com/gpu']).toBe('1');
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.containers[0].securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    await eventually(async () => (await stateOf(t!, id)).state === 'SUCCEEDED', 'SUCCEEDED');
    const events = (await stateOf(t!, id)).events.edges.map((e) => e.node.type);
    expect(events).toEqual(['SUBMITTED', 'ADMITTED', 'STARTED', 'SUCCEEDED']);
    expect(t.kube.invalid).toEqual([]);
    // Exactly one write for the job: its create.
    expect(
      t.kube.writes.filter((w) => w.kind === 'Job' && w.name === job.metadata.name).map((w) => w.verb),
    ).toEqual(['create']);
  });
});

describe('Kubernetes backend, end to end', () => {
  it('gives each tenant a namespace with its isolation objects, and the nodes become the scheduler’s nodes', async () => {
    t = await startKubeApp();
    const ns = t.kube.get('Namespace', undefined, 'fairway-aurora-research');
    expect(ns?.metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
    for (const kind of ['ResourceQuota', 'LimitRange', 'NetworkPolicy', 'ServiceAccount'])
      expect(t.kube.objects(kind, 'fairway-aurora-research').length, kind).toBeGreaterThan(0);
    // The quota is the most aurora's queue could hold: guaranteed isolation does not borrow, so its 16
    // nominal H100s.
    const quota = t.kube.objects('ResourceQuota', 'fairway-aurora-research')[0];
    expect(quota.spec.hard['requests.nvidia.com/gpu']).toBe('16');
    // 56 MIG slices of nominal, the whole MIG node (8 A100s × 7 slices): 56 MIG devices.
    expect(quota.spec.hard['requests.nvidia.com/mig-1g.10gb']).toBe('56');
    expect(t.kube.invalid).toEqual([]);
    const nodes = await t.gql(
      t.token(null, 'PLATFORM_ADMIN'),
      `{ nodePools { name nodes { name gpus unschedulable } } }`,
    );
    const names = (nodes.data!.nodePools as { nodes: { name: string }[] }[])
      .flatMap((p) => p.nodes.map((n) => n.name))
      .sort();
    expect(names).toEqual(['gpu-a100-mig-1', 'gpu-h100-1', 'gpu-h100-2']);
  });

  it('suspends a preempted Job and resumes the same Job on readmission', async () => {
    const nodes = [1, 2, 3, 4].map((i) => gpuNode(`gpu-h100-${i}`));
    t = await startKubeApp({ nodes });
    // Borealis (elastic) takes all 32 GPUs: its 16 and, borrowed, Aurora's idle 16.
    const wide = await submit(
      t,
      {
        name: 'wide',
        podSets: [{ count: 4, gpusPerPod: 8 }],
        container: {
          image: 'registry.borealis.example/train:1',
          env: [{ name: 'FAIRWAY_TEST_RUN_MS', value: '2500' }],
        },
      },
      ['borealis-inference', 'MEMBER'],
    );
    expect(wide.errors).toBeUndefined();
    const wideId = decode(wide.data!.submitJob.id);
    const [kubeJob] = await eventually(
      () => jobsOf(t!, wideId).length > 0 && jobsOf(t!, wideId),
      'the wide Job',
    );
    const wideState = () => stateOf(t!, wide.data!.submitJob.id, ['borealis-inference', 'TENANT_ADMIN']);
    await eventually(async () => (await wideState()).state === 'RUNNING', 'wide RUNNING');
    // Aurora (guaranteed) claims its nominal back: the borrower is preempted.
    const claim = await submit(t, {
      name: 'claim',
      podSets: [{ count: 2, gpusPerPod: 8, flavors: ['h100-80g'] }],
      container: { image: IMAGE },
    });
    expect(claim.errors).toBeUndefined();
    await eventually(
      () => t!.kube.get('Job', kubeJob.metadata.namespace, kubeJob.metadata.name)?.spec.suspend === true,
      'the wide Job suspended',
    );
    await eventually(
      () =>
        t!.kube
          .objects('Pod', kubeJob.metadata.namespace)
          .filter((p) => p.metadata.labels?.['fairway.dev/job-id'] === wideId).length === 0,
      'its pods gone',
    );
    // The claim runs (300 ms), then the wide job is admitted again and resumes: same Job, new admission.
    await eventually(async () => (await wideState()).state === 'SUCCEEDED', 'wide SUCCEEDED', 20_000);
    const types = (await wideState()).events.edges.map((e) => e.node.type);
    expect(types).toEqual([
      'SUBMITTED',
      'ADMITTED',
      'STARTED',
      'PREEMPTED',
      'ADMITTED',
      'STARTED',
      'SUCCEEDED',
    ]);
    const writes = t.kube.writes.filter((w) => w.kind === 'Job' && w.name === kubeJob.metadata.name);
    expect(writes.filter((w) => w.verb === 'create')).toHaveLength(1);
    expect(writes.every((w) => w.status < 300)).toBe(true);
    expect(t.kube.invalid).toEqual([]);
  });

  it('follows the nodes: an added node admits, a cordoned one takes nothing new, a removed one leaves', async () => {
    t = await startKubeApp({ nodes: [gpuNode('gpu-h100-1')] });
    const admin = t.token(null, 'PLATFORM_ADMIN');
    const nodeNames = async () => {
      const res = await t!.gql(admin, `{ nodePools { nodes { name unschedulable } } }`);
      return (res.data!.nodePools as { nodes: { name: string; unschedulable: boolean }[] }[]).flatMap(
        (p) => p.nodes,
      );
    };
    // Two pods of 8: one node cannot hold it.
    const gang = await submit(t, {
      name: 'gang',
      podSets: [{ count: 2, gpusPerPod: 8 }],
      container: { image: IMAGE },
    });
    const gangId = decode(gang.data!.submitJob.id);
    await new Promise((r) => setTimeout(r, 300));
    expect(jobsOf(t, gangId)).toHaveLength(0);
    t.kube.put(gpuNode('gpu-h100-2'));
    await eventually(() => jobsOf(t!, gangId).length > 0, 'the gang admitted once a node joined');
    await eventually(
      async () => (await stateOf(t!, gang.data!.submitJob.id)).state === 'SUCCEEDED',
      'gang SUCCEEDED',
    );

    // Cordon both: nothing new is admitted; uncordon one: it runs.
    t.kube.put(gpuNode('gpu-h100-1', { unschedulable: true }));
    t.kube.put(gpuNode('gpu-h100-2', { unschedulable: true }));
    await eventually(
      async () => (await nodeNames()).every((n) => n.unschedulable),
      'both unschedulable in the graph',
    );
    const one = await submit(t, { name: 'one', container: { image: IMAGE } });
    const oneId = decode(one.data!.submitJob.id);
    await new Promise((r) => setTimeout(r, 300));
    expect(jobsOf(t, oneId)).toHaveLength(0);
    expect((await stateOf(t, one.data!.submitJob.id)).state).toBe('PENDING');
    t.kube.put(gpuNode('gpu-h100-2'));
    await eventually(
      async () => (await stateOf(t!, one.data!.submitJob.id)).state === 'SUCCEEDED',
      'one SUCCEEDED after uncordon',
    );
    expect(jobsOf(t, oneId)[0].spec.template.spec.nodeSelector?.['fairway.dev/pool']).toBe('shared');

    t.kube.remove('Node', undefined, 'gpu-h100-1');
    await eventually(
      async () => (await nodeNames()).map((n) => n.name).join() === 'gpu-h100-2',
      'the removed node gone from the graph',
    );
    expect(t.kube.invalid).toEqual([]);
  });

  it('refuses a forbidden image, volume or privileged spec before anything is made', async () => {
    t = await startKubeApp();
    const before = t.kube.writes.length;
    const refused = [
      { container: { image: 'docker.io/someone/miner:latest' } },
      { container: { image: IMAGE, securityContext: { privileged: true } } },
      { container: { image: IMAGE, securityContext: { allowPrivilegeEscalation: true } } },
      { container: { image: IMAGE, securityContext: { addCapabilities: ['SYS_ADMIN'] } } },
      { container: { image: IMAGE, securityContext: { runAsUser: 0 } } },
      {
        container: {
          image: IMAGE,
          datasets: [{ location: 'pvc://someone-elses-claim/data', mountPath: '/data' }],
        },
      },
      {
        container: {
          image: IMAGE,
          datasets: [{ location: 'hostpath:///var/run/docker.sock', mountPath: '/sock' }],
        },
      },
    ];
    for (const input of refused) {
      const res = await submit(t, input);
      expect(res.errors?.[0]?.extensions?.code, JSON.stringify(input)).toBe('BAD_USER_INPUT');
    }
    const jobs = await t.gql(
      t.token('aurora-research', 'TENANT_ADMIN'),
      `query($s: ID!) { tenant(id: $s) { jobs(first: 5) { totalCount } } }`,
      { s: Buffer.from(`Tenant:${'x'}`).toString('base64') },
    );
    void jobs;
    await new Promise((r) => setTimeout(r, 200));
    expect(t.kube.writes.slice(before)).toEqual([]);
    expect(t.kube.objects('Job')).toEqual([]);
  });

  it('reports OOMKilled and image pull failures as FAILED with the reason, and frees the GPUs', async () => {
    t = await startKubeApp();
    const oom = await submit(t, {
      name: 'oom',
      container: { image: IMAGE, env: [{ name: 'FAIRWAY_TEST_OUTCOME', value: 'oom' }] },
    });
    const pull = await submit(t, { name: 'pull', container: { image: 'nvcr.io/nvidia/does-not-exist:1' } });
    await eventually(
      async () => (await stateOf(t!, oom.data!.submitJob.id)).state === 'FAILED',
      'oom FAILED',
    );
    expect((await stateOf(t, oom.data!.submitJob.id)).exitReason).toMatch(/^OOMKilled/);
    await eventually(
      async () => (await stateOf(t!, pull.data!.submitJob.id)).state === 'FAILED',
      'pull FAILED',
    );
    expect((await stateOf(t, pull.data!.submitJob.id)).exitReason).toMatch(/ImagePull|ErrImagePull/);
    // The Job that could not pull is suspended: its pods no longer hold GPUs.
    const [pulled] = jobsOf(t, decode(pull.data!.submitJob.id));
    await eventually(
      () => t!.kube.get('Job', pulled.metadata.namespace, pulled.metadata.name)?.spec.suspend === true,
      'the failed Job suspended',
    );
  });

  it('reports an admitted job whose pods cannot run (GPUs taken outside Fairway) as ADMITTED_NOT_RUNNING, naming no other tenant', async () => {
    const kube = await (await import('../../helpers/kube-api-server/index.js')).startKubeApiServer({
      kubelet: { startDelayMs: 20, defaultRunMs: 300 },
    });
    t = await startKubeApp({ kube, nodes: [gpuNode('gpu-h100-1')] });
    const admin = t.token(null, 'PLATFORM_ADMIN');
    const tenants = await t.gql(admin, `{ tenants(first: 10) { edges { node { id slug } } } }`);
    const borealis = decode(
      (tenants.data!.tenants.edges as { node: { id: string; slug: string } }[]).find(
        (e) => e.node.slug === 'borealis-inference',
      )!.node.id,
    );
    // A node an operator reserved for Borealis: the Kubernetes scheduler's message names its taint, whose
    // value is Borealis's id.
    kube.put(
      gpuNode('gpu-reserved-1', {
        taints: [{ key: 'example.com/reserved-for', value: borealis, effect: 'NoSchedule' }],
      }),
    );
    // Someone ran a pod on the shared node's 8 GPUs without Fairway: Fairway admits, Kubernetes cannot place.
    t.kube.put({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'squatter', namespace: 'default' },
      spec: {
        nodeName: 'gpu-h100-1',
        containers: [{ name: 'c', image: 'busybox:1.36', resources: { limits: { 'nvidia.com/gpu': '8' } } }],
      },
    });
    const res = await submit(t, {
      name: 'blocked',
      podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
      container: { image: IMAGE },
    });
    const id = res.data!.submitJob.id as string;
    await eventually(
      async () => (await stateOf(t!, id)).events.edges.some((e) => e.node.type === 'ADMITTED_NOT_RUNNING'),
      'ADMITTED_NOT_RUNNING',
      15_000,
    );
    const event = (await stateOf(t, id)).events.edges.find(
      (e) => e.node.type === 'ADMITTED_NOT_RUNNING',
    )!.node;
    expect(event.reason).toBe('AdmittedNotRunning');
    expect(event.message).toMatch(/Insufficient nvidia.com\/gpu/);
    expect(event.message).toContain('untolerated taint {example.com/reserved-for}');
    expect(event.message).not.toContain(borealis);
    expect((await stateOf(t, id)).state).toBe('ADMITTED');
  });

  it('removes what it made for a tenant that is archived', async () => {
    t = await startKubeApp();
    expect(t.kube.get('Namespace', undefined, 'fairway-borealis-inference')).toBeDefined();
    const admin = t.token(null, 'PLATFORM_ADMIN');
    const tenants = await t.gql(admin, `{ tenants(first: 10) { edges { node { id slug } } } }`);
    const borealis = (tenants.data!.tenants.edges as { node: { id: string; slug: string } }[]).find(
      (e) => e.node.slug === 'borealis-inference',
    )!.node;
    const res = await t.gql(
      admin,
      `mutation($in: UpdateTenantInput!) { updateTenant(input: $in) { id status } }`,
      { in: { id: borealis.id, status: 'ARCHIVED' } },
    );
    expect(res.errors).toBeUndefined();
    await t.sync();
    await eventually(
      () => t!.kube.get('Namespace', undefined, 'fairway-borealis-inference') === undefined,
      'the namespace removed',
    );
    expect(t.kube.objects('ResourceQuota', 'fairway-borealis-inference')).toEqual([]);
    expect(t.kube.get('Namespace', undefined, 'fairway-aurora-research')).toBeDefined();
  });

  it('runs a tenant’s jobs on nodes tainted for it, and no one else’s', async () => {
    const kube = await (await import('../../helpers/kube-api-server/index.js')).startKubeApiServer({
      kubelet: { startDelayMs: 20, defaultRunMs: 300 },
    });
    t = await startKubeApp({ kube, nodes: [] });
    const admin = t.token(null, 'PLATFORM_ADMIN');
    const tenants = await t.gql(admin, `{ tenants(first: 10) { edges { node { id slug } } } }`);
    const aurora = decode(
      (tenants.data!.tenants.edges as { node: { id: string; slug: string } }[]).find(
        (e) => e.node.slug === 'aurora-research',
      )!.node.id,
    );
    kube.put(
      gpuNode('gpu-aurora-1', {
        pool: 'aurora-dedicated',
        taints: [{ key: 'fairway.dev/dedicated', value: aurora, effect: 'NoSchedule' }],
      }),
    );
    await eventually(async () => {
      const pools = await t!.gql(admin, `{ nodePools { name dedicated nodes { name } } }`);
      return (pools.data!.nodePools as { name: string; dedicated: boolean }[]).some(
        (p) => p.name === 'aurora-dedicated' && p.dedicated,
      );
    }, 'the tainted pool dedicated to aurora');
    const other = await submit(
      t,
      {
        name: 'not yours',
        podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
        container: { image: 'registry.borealis.example/x:1' },
      },
      ['borealis-inference', 'MEMBER'],
    );
    const mine = await submit(t, {
      name: 'mine',
      podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
      container: { image: IMAGE },
    });
    await eventually(
      async () => (await stateOf(t!, mine.data!.submitJob.id)).state === 'SUCCEEDED',
      'aurora’s job SUCCEEDED on its node',
    );
    expect((await stateOf(t, other.data!.submitJob.id, ['borealis-inference', 'TENANT_ADMIN'])).state).toBe(
      'PENDING',
    );
    expect(jobsOf(t, decode(other.data!.submitJob.id))).toEqual([]);
    expect(t.kube.invalid).toEqual([]);
  });

  it('deletes instead of suspending a preempted job of a queue whose policy says so, and creates it again on readmission', async () => {
    t = await startKubeApp({
      nodes: [1, 2, 3, 4].map((i) => gpuNode(`gpu-h100-${i}`)),
      settings: { deleteOnPreemptQueues: ['borealis-serving'] },
    });
    const wide = await submit(
      t,
      {
        name: 'wide',
        podSets: [{ count: 4, gpusPerPod: 8 }],
        container: {
          image: 'registry.borealis.example/train:1',
          env: [{ name: 'FAIRWAY_TEST_RUN_MS', value: '2000' }],
        },
      },
      ['borealis-inference', 'MEMBER'],
    );
    const wideId = decode(wide.data!.submitJob.id);
    const wideState = () => stateOf(t!, wide.data!.submitJob.id, ['borealis-inference', 'TENANT_ADMIN']);
    await eventually(async () => (await wideState()).state === 'RUNNING', 'wide RUNNING');
    const [first] = jobsOf(t, wideId);
    await submit(t, {
      name: 'claim',
      podSets: [{ count: 2, gpusPerPod: 8, flavors: ['h100-80g'] }],
      container: { image: IMAGE },
    });
    await eventually(
      () =>
        t!.kube.writes.some((w) => w.kind === 'Job' && w.name === first.metadata.name && w.verb === 'delete'),
      'the preempted Job deleted',
    );
    await eventually(
      async () => (await wideState()).state === 'SUCCEEDED',
      'wide SUCCEEDED after readmission',
      20_000,
    );
    const verbs = t.kube.writes
      .filter((w) => w.kind === 'Job' && w.name === first.metadata.name)
      .map((w) => w.verb);
    expect(verbs).toEqual(['create', 'delete', 'create']);
    expect(verbs).not.toContain('patch');
    expect(t.kube.invalid).toEqual([]);
  });

  it('fails a job the cluster can never run, with the reason, and goes on starting the others', async () => {
    t = await startKubeApp();
    // Half a GPU where the device plugin only hands out whole ones: no Job can express it.
    const half = await submit(t, {
      name: 'half',
      podSets: [{ gpusPerPod: 0.5, flavors: ['h100-80g'] }],
      container: { image: IMAGE },
    });
    const whole = await submit(t, {
      name: 'whole',
      podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
      container: { image: IMAGE },
    });
    await eventually(
      async () => (await stateOf(t!, half.data!.submitJob.id)).state === 'FAILED',
      'the half-GPU job FAILED',
    );
    expect((await stateOf(t, half.data!.submitJob.id)).exitReason).toMatch(
      /cannot run on this Kubernetes cluster: .*not a whole number/,
    );
    expect(jobsOf(t, decode(half.data!.submitJob.id))).toEqual([]);
    await eventually(
      async () => (await stateOf(t!, whole.data!.submitJob.id)).state === 'SUCCEEDED',
      'the next job still runs',
    );
  });

  it('fails the jobs of a tenant whose namespace objects cannot be made, and keeps the other tenants running', async () => {
    t = await startKubeApp();
    // Written past the graph's validation (as an old row might be): no NetworkPolicy can be built from it.
    const em = t.app.orm.em.fork();
    const borealis = await em.findOneOrFail(Tenant, { slug: 'borealis-inference' }, { filters: false });
    borealis.egressAllowlist = ['not-a-cidr'];
    await em.flush();
    await t.sync();
    const theirs = await submit(
      t,
      { name: 'theirs', container: { image: 'registry.borealis.example/x:1' } },
      ['borealis-inference', 'MEMBER'],
    );
    const ours = await submit(t, { name: 'ours', container: { image: IMAGE } });
    await eventually(
      async () =>
        (await stateOf(t!, theirs.data!.submitJob.id, ['borealis-inference', 'TENANT_ADMIN'])).state ===
        'FAILED',
      'borealis’s job FAILED',
    );
    expect(
      (await stateOf(t, theirs.data!.submitJob.id, ['borealis-inference', 'TENANT_ADMIN'])).exitReason,
    ).toMatch(/namespace objects cannot be made/);
    await eventually(
      async () => (await stateOf(t!, ours.data!.submitJob.id)).state === 'SUCCEEDED',
      'aurora’s job SUCCEEDED',
    );
  });
});
