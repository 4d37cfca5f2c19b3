/**
 * The test Kubernetes API server is as strict as a real one (2/2): disruptions, the Job
 * controller's backoffLimit / podFailurePolicy / suspension, Indexed pods and cluster DNS, watch
 * bookmarks, scheduler scoring and gates, server-side apply field ownership.
 */

import {
  type BatchV1Api,
  type CoreV1Api,
  type KubernetesObject,
  type KubernetesObjectApi,
  PatchStrategy,
} from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  apiError,
  condition,
  job,
  NS,
  node,
  pod,
  podSpec,
  startTestCluster,
  waitFor,
} from '../../helpers/kube-api-server/fixtures.js';
import type { KubeApiServer, KubeApiServerOptions } from '../../helpers/kube-api-server/index.js';

let server: KubeApiServer;
let api: KubernetesObjectApi;
let batch: BatchV1Api;
let core: CoreV1Api;

const podsOf = (jobName: string): any[] =>
  server.objects('Pod', NS).filter((p) => p.metadata.labels?.['job-name'] === jobName);
const eventsAbout = (name: string) => server.objects('Event').filter((e) => e.involvedObject.name === name);

async function start(options: KubeApiServerOptions = {}): Promise<void> {
  ({ server, api, batch, core } = await startTestCluster(options));
}

/** Another server with other options, for one test. */
async function restart(options: KubeApiServerOptions): Promise<void> {
  await server.close();
  await start(options);
}

beforeEach(() => start());

afterEach(async () => {
  expect(server.invalid).toEqual([]);
  expect(server.controllerProblems).toEqual([]);
  await server.close();
});

describe('disruptions', () => {
  it('evicts through the Eviction API, drains a node, and marks pods of a deleted node', async () => {
    server.put(node('gpu-2', 4));
    await core.createNamespacedPod({ namespace: NS, body: pod('a') as any });
    await core.createNamespacedPod({
      namespace: NS,
      body: { ...pod('b'), spec: { ...podSpec({ gpu: 1 }), nodeName: 'gpu-2' } } as any,
    });
    await waitFor('running', () => server.objects('Pod', NS).every((p) => p.status.phase === 'Running'));
    const rv = server.get('Pod', NS, 'a').metadata.resourceVersion;
    const seen = fetch(
      `${server.url}/api/v1/namespaces/${NS}/pods?watch=true&timeoutSeconds=1&resourceVersion=${rv}`,
      {
        headers: { Authorization: 'Bearer test-token' },
      },
    ).then((r) => r.text());
    await core.createNamespacedPodEviction({
      name: 'a',
      namespace: NS,
      body: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'a', namespace: NS } },
    });
    await waitFor('a gone', () => !server.get('Pod', NS, 'a'));
    server.remove('Node', undefined, 'gpu-2');
    await waitFor('b gone', () => !server.get('Pod', NS, 'b'));
    const deleted = new Map<string, any>();
    for (const line of (await seen).trim().split('\n')) {
      const e = JSON.parse(line);
      if (e.type === 'DELETED') deleted.set(e.object.metadata.name, e.object);
    }
    expect(condition(deleted.get('a'), 'DisruptionTarget')).toMatchObject({
      reason: 'EvictionByEvictionAPI',
      message: 'Eviction API: evicting',
    });
    expect(deleted.get('b').status.phase).toBe('Failed');
    expect(condition(deleted.get('b'), 'DisruptionTarget')).toMatchObject({
      reason: 'DeletionByPodGC',
      message: 'PodGC: node no longer exists',
    });

    await core.createNamespacedPod({ namespace: NS, body: pod('c') as any });
    await waitFor('c running', () => server.get('Pod', NS, 'c')?.status.phase === 'Running');
    expect(server.drain('gpu-1')).toEqual([`${NS}/c`]);
    expect(server.get('Node', undefined, 'gpu-1').spec.unschedulable).toBe(true);
    expect(condition(server.get('Pod', NS, 'c'), 'DisruptionTarget')?.reason).toBe('EvictionByEvictionAPI');
    await waitFor('c gone', () => !server.get('Pod', NS, 'c'));
  });

  it('has the kubelet evict a pod under node pressure: Failed, Evicted, TerminationByKubelet; it stays', async () => {
    await core.createNamespacedPod({ namespace: NS, body: pod('hog') as any });
    await waitFor('running', () => server.get('Pod', NS, 'hog')?.status.phase === 'Running');
    server.kubeletEvict(NS, 'hog');
    const evicted = server.get('Pod', NS, 'hog');
    expect(evicted.status).toMatchObject({ phase: 'Failed', reason: 'Evicted' });
    expect(evicted.status.message).toMatch(/^The node was low on resource: memory\./);
    expect(condition(evicted, 'DisruptionTarget')).toMatchObject({ reason: 'TerminationByKubelet' });
    expect(evicted.status.containerStatuses[0].state.terminated.exitCode).toBe(137);
    expect(eventsAbout('hog').find((e) => e.reason === 'Evicted')).toMatchObject({
      type: 'Warning',
      source: { component: 'kubelet', host: 'gpu-1' },
    });
    await new Promise((r) => setTimeout(r, 50));
    expect(server.get('Pod', NS, 'hog').status.phase).toBe('Failed');
  });

  it('preempts a lower-priority pod for a higher-priority one that fits nowhere, when preemption is on', async () => {
    await restart({ preemption: true });
    server.put({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: 'high' },
      value: 1000,
    });
    await core.createNamespacedPod({ namespace: NS, body: pod('low', {}, podSpec({ gpu: 4 })) as any });
    await waitFor('low running', () => server.get('Pod', NS, 'low')?.status.phase === 'Running');
    const urgent = { ...podSpec({ gpu: 2 }), priorityClassName: 'high' };
    await core.createNamespacedPod({ namespace: NS, body: pod('urgent', {}, urgent) as any });
    await waitFor('urgent on gpu-1', () => server.get('Pod', NS, 'urgent')?.spec.nodeName === 'gpu-1');
    expect(server.get('Pod', NS, 'low')).toBeUndefined();
    const preempted = eventsAbout('low').find((e) => e.reason === 'Preempted');
    expect(preempted?.message).toBe(
      `Preempted by pod ${server.get('Pod', NS, 'urgent').metadata.uid} on node gpu-1`,
    );
  });
});

describe('the Job controller', () => {
  it('replaces failed pods until backoffLimit, then fails the Job with BackoffLimitExceeded', async () => {
    await batch.createNamespacedJob({
      namespace: NS,
      body: job('flaky', {
        annotations: { 'fairway.dev/test-run-ms': '5', 'fairway.dev/test-outcome': 'fail' },
        extra: { backoffLimit: 2 },
      }),
    });
    const failed = await waitFor('Failed', () => condition(server.get('Job', NS, 'flaky'), 'Failed'));
    expect(failed.reason).toBe('BackoffLimitExceeded');
    const status = server.get('Job', NS, 'flaky').status;
    expect(status).toMatchObject({ failed: 3 });
    expect(condition(server.get('Job', NS, 'flaky'), 'FailureTarget')?.reason).toBe('BackoffLimitExceeded');
    expect(podsOf('flaky')).toHaveLength(3);
  });

  it('follows podFailurePolicy: FailJob on an exit code, Ignore a disruption (and replace the pod)', async () => {
    const policy = (rules: any[]) => ({ backoffLimit: 0, podFailurePolicy: { rules } });
    await batch.createNamespacedJob({
      namespace: NS,
      body: job('strict', {
        annotations: { 'fairway.dev/test-run-ms': '5', 'fairway.dev/test-outcome': 'fail' },
        extra: policy([
          { action: 'FailJob', onExitCodes: { containerName: 'main', operator: 'In', values: [1, 2] } },
        ]),
      }),
    });
    await batch.createNamespacedJob({
      namespace: NS,
      body: job('tolerant', {
        extra: policy([{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget' }] }]),
      }),
    });
    const strict = await waitFor('strict Failed', () => condition(server.get('Job', NS, 'strict'), 'Failed'));
    const [failedPod] = podsOf('strict');
    expect(strict).toMatchObject({
      reason: 'PodFailurePolicy',
      message: `Container main for pod ${NS}/${failedPod.metadata.name} failed with exit code 1 matching FailJob rule at index 0`,
    });
    expect(condition(server.get('Job', NS, 'strict'), 'FailureTarget')?.reason).toBe('PodFailurePolicy');
    const first = await waitFor('tolerant running', () =>
      podsOf('tolerant').find((p) => p.status.phase === 'Running'),
    );
    expect(server.get('Job', NS, 'tolerant').spec.podReplacementPolicy).toBe('Failed');
    server.evict(NS, first.metadata.name);
    const second = await waitFor('a replacement', () =>
      podsOf('tolerant').find((p) => p.metadata.uid !== first.metadata.uid && p.status.phase === 'Running'),
    );
    expect(second).toBeDefined();
    const job2 = server.get('Job', NS, 'tolerant');
    expect(job2.status.failed).toBeUndefined();
    expect(condition(job2, 'Failed')).toBeUndefined();
    // Deleted from outside without a DisruptionTarget: a failure, and backoffLimit 0 is reached.
    await core.deleteNamespacedPod({ name: second.metadata.name, namespace: NS });
    expect(
      (await waitFor('tolerant Failed', () => condition(server.get('Job', NS, 'tolerant'), 'Failed'))).reason,
    ).toBe('BackoffLimitExceeded');
  });

  it('clears a suspended Job’s startTime only once its pods are gone (and a slow controller later); until then its template is immutable', async () => {
    await restart({ jobControllerDelayMs: 300 });
    await batch.createNamespacedJob({
      namespace: NS,
      body: job('sus', { gpu: 1, annotations: { 'fairway.dev/test-sigterm-ms': '100' } }),
    });
    await waitFor('running', () => podsOf('sus').some((p) => p.status.phase === 'Running'));
    const patch = (body: object) =>
      api.patch(
        { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'sus', namespace: NS }, ...body },
        undefined,
        undefined,
        undefined,
        undefined,
        PatchStrategy.MergePatch,
      );
    await patch({ spec: { suspend: true } });
    const move = { spec: { template: { spec: { nodeSelector: { pool: 'b' } } } } };
    const refused = await apiError(patch(move));
    expect(refused.body).toMatchObject({ code: 422, reason: 'Invalid' });
    expect(refused.body.message).toContain('spec.template: Invalid value: field is immutable');
    await waitFor('pods gone', () => podsOf('sus').length === 0);
    expect(server.get('Job', NS, 'sus').status.startTime).toBeTruthy(); // the slow controller has not caught up
    await waitFor('startTime cleared', () => !server.get('Job', NS, 'sus').status.startTime);
    await patch(move);
    const status = server.get('Job', NS, 'sus').status;
    expect(status.failed).toBeUndefined(); // pods stopped by a suspension are no failures
    expect(condition(server.get('Job', NS, 'sus'), 'Suspended')?.reason).toBe('JobSuspended');
    server.invalid.splice(0);
  });
});

describe('Indexed pods and cluster DNS', () => {
  it('names Indexed pods <job>-<index> in the template subdomain; DNS finds them through a headless Service', async () => {
    const body = job('train', { pods: 2 });
    body.spec!.template.spec!.subdomain = 'workers';
    await batch.createNamespacedJob({ namespace: NS, body });
    const pods = await waitFor('running', () => {
      const ps = podsOf('train').sort((a, b) => a.spec.hostname.localeCompare(b.spec.hostname));
      return ps.length === 2 && ps.every((p) => p.status.phase === 'Running') && ps;
    });
    expect(pods.map((p) => [p.spec.hostname, p.spec.subdomain])).toEqual([
      ['train-0', 'workers'],
      ['train-1', 'workers'],
    ]);
    expect(pods[0].metadata.name).toMatch(/^train-0-[a-z0-9]{5}$/);
    const [ip0, ip1] = pods.map((p) => p.status.podIP);
    expect(ip0).toMatch(/^10\.244\.\d+\.\d+$/);
    expect(ip1).not.toBe(ip0);
    expect(server.resolve('train-0.workers', NS)).toBeUndefined(); // no Service yet
    await core.createNamespacedService({
      namespace: NS,
      body: {
        metadata: { name: 'workers' },
        spec: { clusterIP: 'None', selector: { 'batch.kubernetes.io/job-name': 'train' } },
      },
    });
    expect(server.resolve(`train-0.workers.${NS}.svc.cluster.local`)).toBe(ip0);
    expect(server.resolve(`train-1.workers.${NS}.svc`)).toBe(ip1);
    expect(server.resolve(`train-0.workers.${NS}`)).toBe(ip0);
    expect(server.resolve('train-0.workers', NS)).toBe(ip0);
    expect(server.resolve('train-0.workers')).toBeUndefined(); // asked from a pod of 'default'
    expect(server.resolve(`train-2.workers.${NS}`)).toBeUndefined();
    const web = await core.createNamespacedService({
      namespace: NS,
      body: { metadata: { name: 'web' }, spec: { selector: { app: 'train' }, ports: [{ port: 80 }] } },
    });
    expect(server.resolve('web', NS)).toBe(web.spec?.clusterIP);
    expect(server.resolve(`train-0.web.${NS}`)).toBeUndefined(); // not headless: no pod names
    await api.patch(
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'train', namespace: NS },
        spec: { suspend: true },
      },
      undefined,
      undefined,
      undefined,
      undefined,
      PatchStrategy.MergePatch,
    );
    await waitFor('the pods gone from DNS', () => server.resolve(`train-0.workers.${NS}`) === undefined);
  });
});

describe('watches', () => {
  it('sends BOOKMARK events carrying only a resourceVersion, when asked to', async () => {
    await restart({ bookmarkIntervalMs: 50 });
    const rv = (await batch.listNamespacedJob({ namespace: NS })).metadata!.resourceVersion!;
    const watch = (query: string) =>
      fetch(
        `${server.url}/apis/batch/v1/namespaces/${NS}/jobs?watch=true&timeoutSeconds=1&resourceVersion=${rv}${query}`,
        {
          headers: { Authorization: 'Bearer test-token' },
        },
      ).then(async (r) =>
        (await r.text())
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l)),
      );
    const [marked, plain] = await Promise.all([
      watch('&allowWatchBookmarks=true'),
      watch(''),
      api.create(job('w1')),
    ]);
    const bookmarks = marked.filter((e) => e.type === 'BOOKMARK');
    expect(bookmarks.length).toBeGreaterThan(5);
    expect(bookmarks.at(-1).object).toEqual({
      kind: 'Job',
      apiVersion: 'batch/v1',
      metadata: { resourceVersion: expect.stringMatching(/^\d+$/) },
    });
    expect(marked.filter((e) => e.type === 'ADDED').map((e) => e.object.metadata.name)).toEqual(['w1']);
    expect(plain.map((e) => e.type)).not.toContain('BOOKMARK');
  });
});

describe('scheduling', () => {
  it('packs first-fit and most-allocated, spreads least-allocated (unless required node affinity says otherwise)', async () => {
    const placed: Record<string, string[]> = {};
    for (const scoring of ['first-fit', 'least-allocated', 'most-allocated'] as const) {
      await restart({ scoring });
      server.put(node('gpu-2', 4));
      for (const name of ['a', 'b']) {
        await core.createNamespacedPod({ namespace: NS, body: pod(name) as any });
        await waitFor(`${name} bound`, () => server.get('Pod', NS, name)?.spec.nodeName);
      }
      placed[scoring] = ['a', 'b'].map((n) => server.get('Pod', NS, n).spec.nodeName);
    }
    expect(placed).toEqual({
      'first-fit': ['gpu-1', 'gpu-1'],
      'least-allocated': ['gpu-1', 'gpu-2'],
      'most-allocated': ['gpu-1', 'gpu-1'],
    });
    await restart({ scoring: 'least-allocated' });
    server.put(node('gpu-2', 4));
    const pinned = podSpec({ gpu: 1 });
    pinned.affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['gpu-1'] }] },
          ],
        },
      },
    };
    for (const name of ['p', 'q']) {
      await core.createNamespacedPod({ namespace: NS, body: pod(name, {}, pinned) as any });
      await waitFor(`${name} bound`, () => server.get('Pod', NS, name)?.spec.nodeName);
    }
    expect(['p', 'q'].map((n) => server.get('Pod', NS, n).spec.nodeName)).toEqual(['gpu-1', 'gpu-1']);
  });

  it('keeps a gated pod SchedulingGated; lets a client remove its gates and add node selection, nothing else', async () => {
    const spec = { ...podSpec({ gpu: 1 }), schedulingGates: [{ name: 'fairway.dev/placement' }] };
    await core.createNamespacedPod({ namespace: NS, body: pod('gated', {}, spec) as any });
    const waiting = await waitFor('gated', () =>
      server.get('Pod', NS, 'gated')?.status.conditions?.find((c: any) => c.type === 'PodScheduled'),
    );
    expect(waiting).toMatchObject({
      status: 'False',
      reason: 'SchedulingGated',
      message: 'Scheduling is blocked due to non-empty scheduling gates',
    });
    const patch = (body: object) =>
      api.patch(
        { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'gated', namespace: NS }, spec: body },
        undefined,
        undefined,
        undefined,
        undefined,
        PatchStrategy.MergePatch,
      );
    const newGate = await apiError(
      patch({ schedulingGates: [{ name: 'fairway.dev/placement' }, { name: 'other' }] }),
    );
    expect(newGate.body.message).toContain(
      "spec.schedulingGates: Forbidden: only deletion is allowed, but found new scheduling gate 'other'",
    );
    expect((await apiError(patch({ restartPolicy: 'OnFailure' }))).body.message).toContain(
      'spec: Forbidden: pod updates may not change fields other than',
    );
    await patch({ nodeSelector: { 'kubernetes.io/hostname': 'gpu-1' }, schedulingGates: [] });
    await waitFor('bound', () => server.get('Pod', NS, 'gated')?.spec.nodeName === 'gpu-1');
    expect((await apiError(patch({ nodeSelector: { extra: 'x' } }))).body.message).toContain(
      'spec: Forbidden',
    );
    server.invalid.splice(0);
  });
});

describe('server-side apply', () => {
  it('records field owners, refuses a conflicting apply unless forced, and removes only fields no one else owns', async () => {
    const apply = (obj: object, manager: string, force = false) =>
      api.patch(obj as KubernetesObject, undefined, undefined, manager, force, PatchStrategy.ServerSideApply);
    const meta = { name: 'ssa', namespace: NS };
    const ours = (labels: Record<string, string>) => ({
      ...job('ssa', { extra: { suspend: true } }),
      metadata: { ...meta, labels },
    });
    await apply(ours({ team: 'ml', tier: 'gold' }), 'fairway');
    const partial = { apiVersion: 'batch/v1', kind: 'Job', metadata: meta, spec: { parallelism: 2 } };
    const conflict = await apiError(apply(partial, 'kueue'));
    expect(conflict.code).toBe(409);
    expect(conflict.body).toMatchObject({
      reason: 'Conflict',
      message: 'Apply failed with 1 conflict: conflict with "fairway": .spec.parallelism',
      details: {
        causes: [
          { reason: 'FieldManagerConflict', message: 'conflict with "fairway"', field: '.spec.parallelism' },
        ],
      },
    });
    await apply(partial, 'kueue', true); // forced: kueue owns parallelism now
    expect(server.get('Job', NS, 'ssa').spec.parallelism).toBe(2);
    const back = await apiError(apply(ours({ team: 'ml', tier: 'gold' }), 'fairway'));
    expect(back.body.message).toBe('Apply failed with 1 conflict: conflict with "kueue": .spec.parallelism');
    // Another manager's label, by a merge patch: owned by it ("Update"), kept by Fairway's applies.
    await api.patch(
      { apiVersion: 'batch/v1', kind: 'Job', metadata: { ...meta, labels: { owner: 'ops' } } },
      undefined,
      undefined,
      'ops',
      undefined,
      PatchStrategy.MergePatch,
    );
    const mine = ours({ team: 'ml' }); // no tier any more, and no parallelism (kueue's)
    delete (mine.spec as any).parallelism;
    await apply(mine, 'fairway');
    const job2 = server.get('Job', NS, 'ssa');
    expect(job2.metadata.labels).toEqual({ team: 'ml', owner: 'ops' });
    expect(job2.spec.parallelism).toBe(2);
    const twice = await apiError(apply(ours({ team: 'ml', owner: 'fairway', tier: 'x' }), 'fairway'));
    expect(twice.body.message).toBe(
      'Apply failed with 2 conflicts: conflicts with "kueue":\n- .spec.parallelism\nconflicts with "ops" using batch/v1:\n- .metadata.labels.owner',
    );
    const owners = job2.metadata.managedFields.map((m: any) => [m.manager, m.operation, m.fieldsType]);
    expect(owners).toEqual([
      ['fairway', 'Apply', 'FieldsV1'],
      ['kueue', 'Apply', 'FieldsV1'],
      ['ops', 'Update', 'FieldsV1'],
    ]);
    const fields = job2.metadata.managedFields.find((m: any) => m.manager === 'ops').fieldsV1;
    expect(fields).toEqual({ 'f:metadata': { 'f:labels': { 'f:owner': {} } } });
  });
});
