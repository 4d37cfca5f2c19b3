// Faults between the gateway and Kubernetes: watches that expire or are cut, an API server that
// is down, a network that black-holes, a gateway stopped mid-run or mid-burst. Each test shows
// that nothing acknowledged is lost (every accepted submit ends SUCCEEDED), nothing is done twice
// (one accepted create per Kubernetes Job, one STARTED/SUCCEEDED per job) and that the gateway
// recovers by itself (no test calls anything but the fault and its end).
import { afterEach, describe, expect, it } from 'vitest';
import { startKubeApiServer } from '../helpers/kube-api-server/index.js';
import { eventually, type KubeTestApp, startKubeApp } from '../helpers/kube-app.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id state } }`;
const JOB = `query($id: ID!) { node(id: $id) { ... on Job { id state exitReason events(first: 50) { edges { node { type } } } } } }`;
const IMAGE = 'nvcr.io/nvidia/pytorch:24.05-py3';
const MEMBER = ['aurora-research', 'MEMBER'] as const;
const ADMIN = ['aurora-research', 'TENANT_ADMIN'] as const;

let t: KubeTestApp | null = null;
let proxy: TcpProxy | null = null;
afterEach(async () => {
  // The proxy first: requests stuck on its held connections fail, so the gateway can close.
  await proxy?.close();
  await t?.close();
  t = proxy = null;
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** The database id in a Relay global id (`Job:<uuid>` in base64). */
const jobIdOf = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1]!;
const kubeName = (globalId: string) => `fw-${jobIdOf(globalId)}-0`;

/** Submits one 1-GPU job whose pod runs `runMs` on the test kubelet; the id if the graph acknowledged it. */
async function submit(k: KubeTestApp, runMs: number, name = 'train'): Promise<string | null> {
  const res = await k
    .gql(k.token(...MEMBER), SUBMIT, {
      in: {
        name,
        podSets: [{ gpusPerPod: 1 }],
        expectedDurationSeconds: 600,
        container: {
          image: IMAGE,
          command: ['python', 'train.py'],
          env: [{ name: 'FAIRWAY_TEST_RUN_MS', value: String(runMs) }],
        },
      },
    })
    .catch(() => null);
  const id = res?.data?.submitJob?.id as string | undefined;
  return res && !res.errors && id ? id : null;
}

async function submitMany(k: KubeTestApp, count: number, runMs: (i: number) => number): Promise<string[]> {
  const ids = await Promise.all(Array.from({ length: count }, (_, i) => submit(k, runMs(i), `burst-${i}`)));
  expect(
    ids.every((id) => id !== null),
    'every submit acknowledged',
  ).toBe(true);
  return ids as string[];
}

async function jobOf(k: KubeTestApp, id: string) {
  const res = await k.gql(k.token(...ADMIN), JOB, { id });
  const node = res.data?.node as
    | { state: string; exitReason: string | null; events: { edges: { node: { type: string } }[] } }
    | undefined;
  return node
    ? { state: node.state, exitReason: node.exitReason, events: node.events.edges.map((e) => e.node.type) }
    : undefined;
}

async function waitAllSucceeded(k: KubeTestApp, ids: string[], timeoutMs = 12_000): Promise<void> {
  await eventually(
    async () => {
      for (const id of ids) if ((await jobOf(k, id))?.state !== 'SUCCEEDED') return false;
      return true;
    },
    `${ids.length} jobs SUCCEEDED`,
    timeoutMs,
  ).catch(async (error) => {
    const states = await Promise.all(
      ids.map(async (id) => `${kubeName(id)}: ${JSON.stringify(await jobOf(k, id))}`),
    );
    throw new Error(`${(error as Error).message}\n${states.join('\n')}`);
  });
}

/** Accepted writes to one Kubernetes Job, by verb (a refused create, 409 or 503, changed nothing). */
function jobWrites(k: KubeTestApp, name: string): string[] {
  return k.kube.writes
    .filter((w) => w.kind === 'Job' && w.name === name && w.status < 300)
    .map((w) => w.verb);
}

/** Nothing done twice: one accepted create per Job, no delete, one pod ever, one of each lifecycle event. */
async function expectExactlyOnce(k: KubeTestApp, ids: string[]): Promise<void> {
  for (const id of ids) {
    const name = kubeName(id);
    expect(jobWrites(k, name), name).toEqual(['create']);
    const job = await jobOf(k, id);
    for (const type of ['SUBMITTED', 'ADMITTED', 'SUCCEEDED'])
      expect(job?.events.filter((e) => e === type).length, `${type} events of ${name}`).toBe(1);
    expect(
      job?.events.filter((e) => e === 'STARTED').length,
      `STARTED events of ${name}`,
    ).toBeLessThanOrEqual(1);
    expect(
      job?.events.some((e) => e === 'FAILED' || e === 'PREEMPTED'),
      `${name}: ${job?.events.join(',')}`,
    ).toBe(false);
    // The Job's pods: the kubelet ran exactly one (backoffLimit 0, never replaced).
    const kubeJob = k.kube.get('Job', 'fairway-aurora-research', name);
    expect(kubeJob?.status?.succeeded, `${name} succeeded pods`).toBe(1);
    expect(kubeJob?.status?.failed ?? 0, `${name} failed pods`).toBe(0);
  }
  expect(k.kube.invalid).toEqual([]);
}

/**
 * A Job as Fairway makes them (a copy of `template`'s) for a job id the database does not have:
 * what a cancel or a finish leaves behind when no gateway watched. Its pod runs for a minute.
 */
function putOrphan(k: KubeTestApp, template: string, orphanId: string): string {
  const orphanName = `fw-${orphanId}-0`;
  const copy = structuredClone(k.kube.get('Job', 'fairway-aurora-research', template));
  const {
    name: _n,
    uid: _u,
    resourceVersion: _r,
    creationTimestamp: _c,
    generation: _g,
    managedFields: _m,
    ...metadata
  } = copy.metadata;
  // The API server generates the selector and its labels anew (a copied selector is refused, as on a real one).
  const generated = [
    'controller-uid',
    'batch.kubernetes.io/controller-uid',
    'job-name',
    'batch.kubernetes.io/job-name',
  ];
  const relabel = (labels: Record<string, string>) => ({
    ...Object.fromEntries(Object.entries(labels).filter(([k]) => !generated.includes(k))),
    'fairway.dev/job-id': orphanId,
  });
  const { selector: _s, ...spec } = copy.spec;
  const podSpec = copy.spec.template.spec;
  const env = (podSpec.containers[0].env as { name: string; value: string }[]).map((e) =>
    e.name === 'FAIRWAY_TEST_RUN_MS'
      ? { ...e, value: '60000' }
      : e.name === 'FAIRWAY_JOB_ID'
        ? { ...e, value: orphanId }
        : e,
  );
  k.kube.put({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { ...metadata, name: orphanName, labels: relabel(copy.metadata.labels) },
    spec: {
      ...spec,
      template: {
        metadata: { ...copy.spec.template.metadata, labels: relabel(copy.spec.template.metadata.labels) },
        spec: { ...podSpec, containers: [{ ...podSpec.containers[0], env }] },
      },
    },
  });
  return orphanName;
}

const kubeJobsExist = (k: KubeTestApp, ids: string[]) =>
  ids.every((id) => k.kube.get('Job', 'fairway-aurora-research', kubeName(id)));
const podsRunning = (k: KubeTestApp, ids: string[]) =>
  ids.every((id) =>
    k.kube
      .objects('Pod', 'fairway-aurora-research')
      .some((p) => p.metadata.name.startsWith(`${kubeName(id)}-`) && p.status?.phase === 'Running'),
  );

describe('Kubernetes backend under faults', () => {
  it('loses no event when every watch expires (410) mid-run, and creates each Job once', async () => {
    t = await startKubeApp();
    const ids = await submitMany(t, 6, (i) => 1200 + 200 * i);
    await eventually(
      () => kubeJobsExist(t!, ids) && podsRunning(t!, ids),
      'the Jobs created and their pods running',
    );
    t.kube.expireWatches();
    // Some finish while the informers relist; expire again while the others are still running.
    await sleep(500);
    t.kube.expireWatches();
    await waitAllSucceeded(t, ids);
    await expectExactlyOnce(t, ids);
  });

  it('loses no event when every watch connection is cut mid-run', async () => {
    t = await startKubeApp();
    const ids = await submitMany(t, 6, (i) => 1000 + 250 * i);
    await eventually(
      () => kubeJobsExist(t!, ids) && podsRunning(t!, ids),
      'the Jobs created and their pods running',
    );
    // Cut repeatedly, so some pods finish while no watch is open (only a relist or a resume sees them).
    for (let i = 0; i < 6; i++) {
      t.kube.dropWatches();
      await sleep(250);
    }
    await waitAllSucceeded(t, ids);
    await expectExactlyOnce(t, ids);
  });

  it('runs every job acknowledged during an API server outage once it answers again, exactly once', async () => {
    t = await startKubeApp();
    const before = await submitMany(t, 2, () => 1500);
    await eventually(() => kubeJobsExist(t!, before), 'the first Jobs');
    t.kube.setDown(true);
    // Acknowledged by the graph (the database is fine) while Kubernetes refuses everything.
    const during = await submitMany(t, 5, () => 500);
    await sleep(2000);
    expect(
      during.some((id) => kubeJobsExist(t!, [id])),
      'no Job can be created while the API server is down',
    ).toBe(false);
    t.kube.setDown(false);
    await waitAllSucceeded(t, [...before, ...during]);
    await expectExactlyOnce(t, [...before, ...during]);
  });

  it('stops, once the API server answers again, a job whose cancel was acknowledged during the outage', async () => {
    t = await startKubeApp();
    const [id] = await submitMany(t, 1, () => 60_000);
    await eventually(async () => (await jobOf(t!, id!))?.state === 'RUNNING', 'RUNNING');
    t.kube.setDown(true);
    const res = await t.gql(t.token(...ADMIN), `mutation($id: ID!) { cancelJob(id: $id) { state } }`, { id });
    expect(res.errors).toBeUndefined();
    expect(res.data?.cancelJob.state).toBe('CANCELLED');
    await sleep(2000);
    expect(
      t.kube.get('Job', 'fairway-aurora-research', kubeName(id!)),
      'still there while the API server is down',
    ).toBeDefined();
    t.kube.setDown(false);
    await eventually(
      () => !t!.kube.get('Job', 'fairway-aurora-research', kubeName(id!)),
      'the Job deleted',
      6000,
    );
    // Its pods stop over their grace, as on a real cluster, then are gone.
    await eventually(
      () =>
        t!.kube
          .objects('Pod', 'fairway-aurora-research')
          .every((p) => !p.metadata.name.startsWith(`${kubeName(id!)}-`)),
      'its pods gone',
      6000,
    );
    expect(jobWrites(t, kubeName(id!))).toEqual(['create', 'delete']);
    expect((await jobOf(t, id!))?.state).toBe('CANCELLED');
  });

  it('runs every job acknowledged while the network to the API server black-holes, exactly once', async () => {
    const kube = await startKubeApiServer({ kubelet: { startDelayMs: 20, defaultRunMs: 300 } });
    proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(kube.url).port) });
    t = await startKubeApp({ kube, apiServerUrl: `http://127.0.0.1:${proxy.port}` });
    const first = await submitMany(t, 3, () => 1500);
    await eventually(() => kubeJobsExist(t!, first), 'the first Jobs');
    await proxy.setMode('black-hole');
    const during = await submitMany(t, 5, () => 500);
    await sleep(2000);
    await proxy.setMode('pass');
    const after = await submitMany(t, 2, () => 500);
    const all = [...first, ...during, ...after];
    await waitAllSucceeded(t, all);
    await expectExactlyOnce(t, all);
  });

  it('recovers when the black-holed connections are lost for good (a NAT or firewall forgot them)', async () => {
    const kube = await startKubeApiServer({ kubelet: { startDelayMs: 20, defaultRunMs: 300 } });
    proxy = await startTcpProxy({ host: '127.0.0.1', port: Number(new URL(kube.url).port) });
    t = await startKubeApp({ kube, apiServerUrl: `http://127.0.0.1:${proxy.port}` });
    const first = await submitMany(t, 3, () => 1500);
    await eventually(() => kubeJobsExist(t!, first), 'the first Jobs');
    await proxy.setMode('black-hole');
    const during = await submitMany(t, 3, () => 500);
    await sleep(2000);
    // Held connections (the watches, requests in flight) never answer again; new ones pass.
    await proxy.setMode('pass', { abandonHeld: true });
    const after = await submitMany(t, 2, () => 500);
    const all = [...first, ...during, ...after];
    await waitAllSucceeded(t, all, 10_000);
    await expectExactlyOnce(t, all);
  });

  it('adopts a Job that finished while the gateway was stopped, without creating it again', async () => {
    t = await startKubeApp();
    const [id] = await submitMany(t, 1, () => 800);
    await eventually(() => podsRunning(t!, [id!]), 'the pod running');
    await t.stopApp();
    await eventually(
      () => t!.kube.get('Job', 'fairway-aurora-research', kubeName(id!))?.status?.succeeded === 1,
      'the Job Complete in the cluster',
    );
    await t.restartApp();
    await waitAllSucceeded(t, [id!]);
    await expectExactlyOnce(t, [id!]);
  });

  it('deletes, on restart, a running Job of Fairway’s for a job the database does not have', async () => {
    t = await startKubeApp();
    const [id] = await submitMany(t, 1, () => 30_000);
    await eventually(() => podsRunning(t!, [id!]), 'the pod running');
    await t.stopApp();
    const orphanName = putOrphan(t, kubeName(id!), '00000000-0000-4000-8000-00000000dead');
    await eventually(
      () =>
        t!.kube
          .objects('Pod', 'fairway-aurora-research')
          .some((p) => p.metadata.name.startsWith(`${orphanName}-`)),
      'the orphan’s pod',
    );
    await t.restartApp();
    await eventually(
      () => !t!.kube.get('Job', 'fairway-aurora-research', orphanName),
      'the orphan Job deleted',
    );
    await eventually(
      () =>
        !t!.kube
          .objects('Pod', 'fairway-aurora-research')
          .some((p) => p.metadata.name.startsWith(`${orphanName}-`)),
      'the orphan’s pods deleted',
    );
    // The live job's Job is kept as it was: adopted, not touched.
    expect(jobWrites(t, kubeName(id!))).toEqual(['create']);
    expect((await jobOf(t, id!))?.state).toBe('RUNNING');
    expect(t.kube.invalid).toEqual([]);
  });

  it('finishes the restart reconciliation when the API server fails right as the gateway takes over', async () => {
    t = await startKubeApp();
    const [id] = await submitMany(t, 1, () => 5000);
    await eventually(async () => (await jobOf(t!, id!))?.state === 'RUNNING', 'RUNNING');
    await t.stopApp();
    const orphanName = putOrphan(t, kubeName(id!), '00000000-0000-4000-8000-00000000beef');
    const writesBefore = t.kube.writes.length;
    const restarted = t.restartApp();
    // The new gateway has its caches (it writes the tenants' namespaces next): now the API fails.
    while (!t.kube.writes.slice(writesBefore).some((w) => w.verb === 'apply')) await sleep(1);
    t.kube.setDown(true);
    await sleep(1500);
    t.kube.setDown(false);
    await restarted;
    await eventually(
      () => !t!.kube.get('Job', 'fairway-aurora-research', orphanName),
      'the orphan Job deleted',
      6000,
    );
    await waitAllSucceeded(t, [id!], 8000);
    await expectExactlyOnce(t, [id!]);
  });

  it('keeps a running job running across two restarts, never starting it twice', async () => {
    t = await startKubeApp();
    const [id] = await submitMany(t, 1, () => 4000);
    await eventually(async () => (await jobOf(t!, id!))?.state === 'RUNNING', 'RUNNING');
    const podUid = () =>
      t!.kube
        .objects('Pod', 'fairway-aurora-research')
        .find((p) => p.metadata.name.startsWith(`${kubeName(id!)}-`))?.metadata.uid as string | undefined;
    const uid = podUid();
    for (let i = 0; i < 2; i++) {
      await t.stopApp();
      await sleep(200);
      await t.restartApp();
      await sleep(300);
      expect((await jobOf(t, id!))?.state).toBe('RUNNING');
      expect(podUid(), 'the same pod').toBe(uid);
    }
    await waitAllSucceeded(t, [id!]);
    await expectExactlyOnce(t, [id!]);
  });

  it('runs every job acknowledged right before the gateway stops, exactly once after it restarts', async () => {
    t = await startKubeApp();
    const ids = await submitMany(t, 8, () => 500);
    await t.stopApp();
    await t.restartApp();
    const more = await submitMany(t, 2, () => 300);
    await waitAllSucceeded(t, [...ids, ...more]);
    await expectExactlyOnce(t, [...ids, ...more]);
  });
});
