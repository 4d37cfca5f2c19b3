/**
 * The test Kubernetes API server, driven by @kubernetes/client-node itself: if these pass, the
 * backend's client code talks to it the way it would talk to a real cluster.
 */

import {
  ApiException,
  BatchV1Api,
  CoreV1Api,
  KubeConfig,
  type KubernetesObject,
  KubernetesObjectApi,
  makeInformer,
  PatchStrategy,
  type V1Job,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type KubeApiServer, startKubeApiServer } from '../../helpers/kube-api-server/index.js';

const NS = 'fairway-acme';
const SELECTOR = 'app.kubernetes.io/managed-by=fairway';

let server: KubeApiServer;
let kc: KubeConfig;
let api: KubernetesObjectApi;
let batch: BatchV1Api;
let core: CoreV1Api;
const stoppers: (() => void)[] = [];

async function waitFor<T>(what: string, probe: () => T | undefined | false, timeoutMs = 3000): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function job(
  name: string,
  opts: {
    annotations?: Record<string, string>;
    gpu?: number | string;
    image?: string;
    suspend?: boolean;
    pods?: number;
  } = {},
): V1Job & KubernetesObject {
  const pods = opts.pods ?? 1;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: NS, labels: { 'app.kubernetes.io/managed-by': 'fairway' } },
    spec: {
      parallelism: pods,
      completions: pods,
      ...(pods > 1 ? { completionMode: 'Indexed' } : {}),
      backoffLimit: 0,
      suspend: opts.suspend ?? false,
      template: {
        metadata: {
          labels: { 'app.kubernetes.io/managed-by': 'fairway' },
          annotations: opts.annotations ?? {},
        },
        spec: {
          restartPolicy: 'Never',
          tolerations: [{ key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' }],
          containers: [
            {
              name: 'main',
              image: opts.image ?? 'busybox:1.36',
              resources: {
                limits: {
                  cpu: '1',
                  memory: '1Gi',
                  ...(opts.gpu !== undefined ? { 'nvidia.com/gpu': opts.gpu as string } : {}),
                },
              },
            },
          ],
        },
      },
    },
  };
}

function node(name: string, gpus: number, extra: { unschedulable?: boolean } = {}) {
  const resources = { cpu: '32', memory: '256Gi', 'nvidia.com/gpu': String(gpus), pods: '110' };
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: { name, labels: { 'kubernetes.io/hostname': name } },
    spec: {
      taints: [{ key: 'nvidia.com/gpu', value: 'present', effect: 'NoSchedule' }],
      ...(extra.unschedulable ? { unschedulable: true } : {}),
    },
    status: { capacity: resources, allocatable: resources, conditions: [{ type: 'Ready', status: 'True' }] },
  };
}

function jobCondition(name: string, type: string) {
  const found = server.get('Job', NS, name);
  return found?.status?.conditions?.find((c: any) => c.type === type && c.status === 'True');
}

const podsOf = (jobName: string): any[] =>
  server.objects('Pod', NS).filter((p) => p.metadata.labels['job-name'] === jobName);

async function apiError(promise: Promise<unknown>): Promise<{ code: number; body: any }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof ApiException) return { code: error.code, body: JSON.parse(error.body as string) };
    throw error;
  }
  throw new Error('expected the request to fail');
}

beforeEach(async () => {
  server = await startKubeApiServer({ kubelet: { startDelayMs: 10 } });
  kc = new KubeConfig();
  kc.loadFromString(server.kubeconfigYaml);
  api = KubernetesObjectApi.makeApiClient(kc);
  batch = kc.makeApiClient(BatchV1Api);
  core = kc.makeApiClient(CoreV1Api);
  await api.create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  server.put(node('gpu-1', 4));
});

afterEach(async () => {
  stoppers.splice(0).forEach((stop) => stop());
  expect(server.invalid).toEqual([]);
  expect(server.controllerProblems).toEqual([]);
  await server.close();
});

describe('test Kubernetes API server', () => {
  it('creates, refuses a second create with 409 AlreadyExists, reads, lists and deletes', async () => {
    const created = await api.create(job('j1'));
    expect(created.metadata?.uid).toBeTruthy();
    const again = await apiError(api.create(job('j1')));
    expect(again.code).toBe(409);
    expect(again.body).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'AlreadyExists',
      code: 409,
    });
    const read = await api.read({
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: { name: 'j1', namespace: NS },
    });
    expect(read.metadata?.resourceVersion).toBeTruthy();
    const list = await batch.listNamespacedJob({ namespace: NS, labelSelector: SELECTOR });
    expect(list.items.map((j) => j.metadata?.name)).toEqual(['j1']);
    expect(list.metadata?.resourceVersion).toBeTruthy();
    await api.delete(
      { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j1', namespace: NS } },
      undefined,
      undefined,
      undefined,
      undefined,
      'Background',
    );
    expect(server.get('Job', NS, 'j1')).toBeUndefined();
    await waitFor('pods deleted with their job', () => podsOf('j1').length === 0);
    const missing = await apiError(
      api.read({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j1', namespace: NS } }),
    );
    expect(missing.body).toMatchObject({ reason: 'NotFound', code: 404 });
    expect(server.writes.map((w) => [w.verb, w.kind, w.status])).toEqual([
      ['create', 'Namespace', 201],
      ['create', 'Job', 201],
      ['create', 'Job', 409],
      ['delete', 'Job', 200],
    ]);
  });

  it('server-side apply creates then updates one object; a stale PUT is a 409 Conflict', async () => {
    const apply = (obj: KubernetesObject) =>
      api.patch(obj, undefined, undefined, 'fairway', true, PatchStrategy.ServerSideApply);
    const first = await apply(job('j2', { suspend: true }));
    const second = await apply(job('j2', { suspend: true }));
    expect(second.metadata?.uid).toBe(first.metadata?.uid);
    expect(server.objects('Job', NS)).toHaveLength(1);
    const resumed = job('j2');
    resumed.metadata!.labels!.extra = 'x';
    await apply(resumed);
    expect(server.get('Job', NS, 'j2')).toMatchObject({
      spec: { suspend: false },
      metadata: { labels: { extra: 'x' } },
    });
    await apply(job('j2')); // the manager no longer sets the label: it goes
    expect(server.get('Job', NS, 'j2').metadata.labels.extra).toBeUndefined();
    const noManager = await apiError(
      api.patch(job('j2'), undefined, undefined, undefined, undefined, PatchStrategy.ServerSideApply),
    );
    expect(noManager.code).toBe(422);
    const stale = {
      ...job('j2'),
      metadata: { ...job('j2').metadata, resourceVersion: first.metadata!.resourceVersion },
    };
    expect((await apiError(api.replace(stale))).body).toMatchObject({ reason: 'Conflict', code: 409 });
  });

  it('refuses an invalid Job or an unknown field with 422 Invalid and stores nothing', async () => {
    const bad = await apiError(api.create(job('j3', { gpu: 'lots' })));
    expect(bad.code).toBe(422);
    expect(bad.body).toMatchObject({
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'Invalid',
      code: 422,
    });
    expect(bad.body.message).toContain('nvidia.com~1gpu');
    expect(server.get('Job', NS, 'j3')).toBeUndefined();
    expect(server.invalid.map((i) => i.name)).toEqual(['j3']);
    // client-node's serializer drops fields its models do not know, so the typo goes over plain fetch.
    const typo: any = job('j4');
    typo.spec.template.spec.container = [];
    const response = await fetch(
      `${server.url}/apis/batch/v1/namespaces/${NS}/jobs/j4?fieldManager=fairway&force=true`,
      {
        method: 'PATCH',
        headers: { Authorization: 'Bearer test-token', 'Content-Type': 'application/apply-patch+yaml' },
        body: JSON.stringify(typo),
      },
    );
    expect(response.status).toBe(422);
    expect(((await response.json()) as { message: string }).message).toContain(
      'unknown field(s): spec.template.spec.container',
    );
    expect(server.get('Job', NS, 'j4')).toBeUndefined();
    expect(() =>
      server.put({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'n' }, spec: { unschedulable: 'yes' } }),
    ).toThrow(/unschedulable/);
    server.invalid.splice(0); // seen; afterEach checks nothing else was invalid
  });

  it('feeds an informer ADDED/MODIFIED/DELETED and, after the watch expires, a relist that loses nothing', async () => {
    let lists = 0;
    const informer = makeInformer(
      kc,
      '/apis/batch/v1/jobs',
      () => (lists++, batch.listJobForAllNamespaces({ labelSelector: SELECTOR })),
      SELECTOR,
    );
    const seen: string[] = [];
    informer.on('add', (j) => seen.push(`add ${j.metadata?.name}`));
    informer.on('update', (j) =>
      seen.push(`update ${j.metadata?.name} ${j.metadata?.annotations?.step ?? ''}`),
    );
    informer.on('delete', (j) => seen.push(`delete ${j.metadata?.name}`));
    informer.on('error', (e) => seen.push(`error ${String(e)}`));
    await informer.start();
    stoppers.push(() => void informer.stop());
    await api.create(job('j5', { suspend: true }));
    // No label: not seen. (Its template has none either: a Job without labels takes its template's.)
    const other = job('other', { suspend: true });
    other.metadata = { name: 'other', namespace: NS };
    delete other.spec!.template.metadata!.labels;
    await api.create(other);
    await waitFor('add', () => seen.includes('add j5'));
    await api.patch(
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'j5', namespace: NS, annotations: { step: 'one' } },
      },
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
    await waitFor('update one', () => seen.includes('update j5 one'));
    await waitFor('watch open', () => server.openWatches === 1);

    server.expireWatches();
    await api.patch(
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'j5', namespace: NS, annotations: { step: 'two' } },
      },
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
    await waitFor('update two after the expiry', () => seen.includes('update j5 two'));
    await waitFor('relisted and watching again', () => lists === 2 && server.openWatches === 1);
    await api.patch(
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'j5', namespace: NS, annotations: { step: 'three' } },
      },
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
    await waitFor('update three on the new watch', () => seen.includes('update j5 three'));
    await api.delete({ apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'j5', namespace: NS } });
    await waitFor('delete', () => seen.includes('delete j5'));
    expect(seen.filter((s) => s.startsWith('error') || s.includes('other'))).toEqual([]);
  });

  it('after a cut watch (client-node reports an error and stops), a restarted informer resumes without a relist and misses nothing', async () => {
    let lists = 0;
    const informer = makeInformer(
      kc,
      '/apis/batch/v1/jobs',
      () => (lists++, batch.listJobForAllNamespaces({ labelSelector: SELECTOR })),
      SELECTOR,
    );
    const seen: string[] = [];
    const errors: unknown[] = [];
    informer.on('add', (j) => seen.push(`add ${j.metadata?.name}`));
    informer.on('error', (e) => errors.push(e));
    await informer.start();
    stoppers.push(() => void informer.stop());
    await waitFor('watch open', () => server.openWatches === 1);
    server.dropWatches();
    await waitFor('error reported', () => errors.length === 1);
    await api.create(job('during-cut', { suspend: true }));
    await informer.start();
    await waitFor('the change made during the cut', () => seen.includes('add during-cut'));
    expect(lists).toBe(1);
  });

  it('filters a watch by label (a label removed reads as DELETED) and ends it after timeoutSeconds', async () => {
    const rv = (await batch.listNamespacedJob({ namespace: NS })).metadata!.resourceVersion!;
    const response = await fetch(
      `${server.url}/apis/batch/v1/namespaces/${NS}/jobs?watch=true&timeoutSeconds=1&resourceVersion=${rv}&labelSelector=${encodeURIComponent(SELECTOR)}`,
      {
        headers: { Authorization: 'Bearer test-token' },
      },
    );
    // A second label: a Job left without any would take its template's again (SetDefaults_Job).
    const j11 = job('j11', { suspend: true });
    j11.metadata!.labels!.team = 'ml';
    await api.create(j11);
    await api.patch(
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'j11', namespace: NS, labels: { 'app.kubernetes.io/managed-by': null } },
      } as any,
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
    await api.patch(
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'j11', namespace: NS, annotations: { unseen: 'yes' } },
      },
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
    const events = (await response.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.map((e) => [e.type, e.object.kind, e.object.metadata.name])).toEqual([
      ['ADDED', 'Job', 'j11'],
      ['MODIFIED', 'Job', 'j11'],
      ['DELETED', 'Job', 'j11'],
    ]);
  });

  it("keeps a started Job's pod template immutable, but lets a suspended one change its scheduling directives", async () => {
    const apply = (obj: KubernetesObject) =>
      api.patch(obj, undefined, undefined, 'fairway', true, PatchStrategy.ServerSideApply);
    await apply(job('j13', { gpu: 1 }));
    await waitFor('started', () => server.get('Job', NS, 'j13')?.status?.startTime);
    const refused = await apiError(
      apply(job('j13', { gpu: 1, annotations: { 'fairway.dev/admission-at': '2' } })),
    );
    expect(refused.body).toMatchObject({ code: 422, reason: 'Invalid' });
    expect(refused.body.message).toContain('spec.template: Invalid value: field is immutable');
    await apply(job('j13', { gpu: 1, suspend: true }));
    await waitFor(
      'suspended and reset',
      () => jobCondition('j13', 'Suspended') && !server.get('Job', NS, 'j13').status.startTime,
    );
    await apply(job('j13', { gpu: 1, suspend: true, annotations: { 'fairway.dev/admission-at': '2' } }));
    expect((await apiError(apply(job('j13', { gpu: 2, suspend: true })))).body.message).toContain(
      'only labels, annotations',
    );
    server.invalid.splice(0); // both refusals seen
  });

  it("refuses pods a ResourceQuota cannot hold and keeps the quota's usage", async () => {
    server.put({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'fairway-quota', namespace: NS },
      spec: { hard: { 'requests.nvidia.com/gpu': '3' } },
    });
    await api.create(job('j14', { gpu: 1, pods: 4 }));
    await waitFor('3 of 4 pods', () => podsOf('j14').length === 3 && server.controllerProblems.length === 1);
    expect(server.controllerProblems[0]).toContain('exceeded quota: fairway-quota');
    await waitFor(
      'usage',
      () =>
        server.get('ResourceQuota', NS, 'fairway-quota')?.status?.used?.['requests.nvidia.com/gpu'] === '3',
    );
    server.controllerProblems.splice(0);
  });

  it('deleting a Job without a propagation policy orphans its pods, as batch/v1 does', async () => {
    await api.create(job('j12', { gpu: 1 }));
    await waitFor('pod', () => podsOf('j12').length === 1);
    await batch.deleteNamespacedJob({ name: 'j12', namespace: NS });
    const [orphan] = podsOf('j12');
    expect(orphan.metadata.ownerReferences).toBeUndefined();
  });

  it('answers a watch from a resourceVersion older than its history with 410 Expired', async () => {
    const small = await startKubeApiServer({ watchHistory: 2, kubelet: false });
    try {
      const rv = small.objects('Namespace')[0].metadata.resourceVersion;
      for (const name of ['a', 'b', 'c'])
        small.put({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
      const response = await fetch(`${small.url}/api/v1/namespaces?watch=true&resourceVersion=${rv}`, {
        headers: { Authorization: 'Bearer test-token' },
      });
      const lines = (await response.text())
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l));
      expect(lines).toEqual([
        { type: 'ERROR', object: expect.objectContaining({ kind: 'Status', code: 410, reason: 'Expired' }) },
      ]);
    } finally {
      await small.close();
    }
  });

  it('runs a Job: pods go Running, then the Job is Complete', async () => {
    const phases = new Set<string>();
    const informer = makeInformer(
      kc,
      '/api/v1/pods',
      () => core.listPodForAllNamespaces({ labelSelector: SELECTOR }),
      SELECTOR,
    );
    informer.on('update', (p: V1Pod) => phases.add(`${p.metadata?.name} ${p.status?.phase}`));
    await informer.start();
    stoppers.push(() => void informer.stop());
    await api.create(job('j6', { annotations: { 'fairway.dev/test-run-ms': '50' }, gpu: 1, pods: 2 }));
    await waitFor('Complete', () => jobCondition('j6', 'Complete'));
    const pods = podsOf('j6');
    expect(pods).toHaveLength(2);
    expect(pods.map((p) => p.metadata.labels['batch.kubernetes.io/job-completion-index']).sort()).toEqual([
      '0',
      '1',
    ]);
    expect(pods.every((p) => p.status.phase === 'Succeeded' && p.spec.nodeName === 'gpu-1')).toBe(true);
    for (const p of pods) expect(phases).toContain(`${p.metadata.name} Running`);
    expect(server.get('Job', NS, 'j6').status).toMatchObject({ succeeded: 2, ready: 0 });
  });

  it('suspending a Job deletes its pods and sets Suspended', async () => {
    await api.create(job('j7', { gpu: 1 }));
    await waitFor('running', () => podsOf('j7').some((p) => p.status.phase === 'Running'));
    await api.patch(
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'j7', namespace: NS },
        spec: { suspend: true },
      },
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
    await waitFor('Suspended', () => jobCondition('j7', 'Suspended'));
    await waitFor('pods gone', () => podsOf('j7').length === 0);
    expect(jobCondition('j7', 'Failed')).toBeUndefined();
  });

  it('leaves a pod that fits no node Pending and Unschedulable, with the reasons', async () => {
    server.put(node('cordoned', 8, { unschedulable: true }));
    await api.create(job('j8', { gpu: 6 }));
    const pod = await waitFor('unschedulable', () =>
      podsOf('j8').find((p) => p.status.conditions?.some((c: any) => c.reason === 'Unschedulable')),
    );
    expect(pod.status.phase).toBe('Pending');
    expect(pod.spec.nodeName).toBeUndefined();
    const message = pod.status.conditions.find((c: any) => c.type === 'PodScheduled').message;
    expect(message).toBe(
      '0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) were unschedulable.',
    );
    server.put(node('cordoned', 8)); // uncordon: now it fits
    await waitFor('scheduled', () => podsOf('j8')[0]?.spec.nodeName === 'cordoned');
  });

  it('ends an OOM-killed pod Failed with OOMKilled, and the Job Failed', async () => {
    await api.create(
      job('j9', { annotations: { 'fairway.dev/test-run-ms': '20', 'fairway.dev/test-outcome': 'oom' } }),
    );
    const failed = await waitFor('Failed', () => jobCondition('j9', 'Failed'));
    expect(failed.reason).toBe('BackoffLimitExceeded');
    const [pod] = podsOf('j9');
    expect(pod.status.phase).toBe('Failed');
    expect(pod.status.containerStatuses[0].state.terminated).toMatchObject({
      reason: 'OOMKilled',
      exitCode: 137,
    });
  });

  it('fails a Job whose pod exits non-zero, whose deadline passes, or whose running pod is deleted from outside', async () => {
    await api.create(
      job('j15', { annotations: { 'fairway.dev/test-run-ms': '10', 'fairway.dev/test-outcome': 'fail' } }),
    );
    const deadline = job('j16');
    deadline.spec!.activeDeadlineSeconds = 1;
    await api.create(deadline);
    await api.create(job('j17'));
    const running = await waitFor('j17 running', () =>
      podsOf('j17').find((p) => p.status.phase === 'Running'),
    );
    await core.deleteNamespacedPod({ name: running.metadata.name, namespace: NS });
    expect((await waitFor('j15 Failed', () => jobCondition('j15', 'Failed'))).reason).toBe(
      'BackoffLimitExceeded',
    );
    expect(podsOf('j15')[0].status.containerStatuses[0].state.terminated).toMatchObject({
      reason: 'Error',
      exitCode: 1,
    });
    expect((await waitFor('j17 Failed', () => jobCondition('j17', 'Failed'))).reason).toBe(
      'BackoffLimitExceeded',
    );
    expect((await waitFor('j16 Failed', () => jobCondition('j16', 'Failed'))).reason).toBe(
      'DeadlineExceeded',
    );
    await waitFor('j16 pods deleted', () => podsOf('j16').length === 0);
  });

  it('deletes a namespace with everything in it', async () => {
    await api.create(job('j18', { gpu: 1 }));
    await waitFor('pod', () => podsOf('j18').length === 1);
    await core.deleteNamespace({ name: NS });
    // Terminating until its running pod has stopped (gracefully), then gone with everything in it.
    expect(server.objects('Job')).toEqual([]);
    await waitFor('the namespace gone', () => !server.get('Namespace', undefined, NS));
    expect(server.objects('Pod')).toEqual([]);
  });

  it('keeps a pod whose image does not exist Pending in ImagePullBackOff', async () => {
    await api.create(job('j10', { image: 'registry.example/does-not-exist:1' }));
    const pod = await waitFor('back-off', () =>
      podsOf('j10').find(
        (p) => p.status.containerStatuses?.[0]?.state.waiting?.reason === 'ImagePullBackOff',
      ),
    );
    expect(pod.status.phase).toBe('Pending');
  });

  it('answers 503 while down, and the node informer reports the error', async () => {
    const informer = makeInformer(kc, '/api/v1/nodes', () => core.listNode({}));
    const names: string[] = [];
    const errors: unknown[] = [];
    informer.on('add', (n) => names.push(n.metadata!.name!));
    informer.on('error', (e) => errors.push(e));
    await informer.start();
    stoppers.push(() => void informer.stop());
    expect(names).toEqual(['gpu-1']);
    server.setDown(true);
    expect((await apiError(core.listNode({}))).body).toMatchObject({
      code: 503,
      reason: 'ServiceUnavailable',
    });
    await waitFor('the informer hears of the outage', () => errors.length > 0);
    server.setDown(false);
    expect((await core.listNode({})).items).toHaveLength(1);
  });
});
