/**
 * The test Kubernetes API server's apps/v1 Deployments and ReplicaSets and autoscaling/v2
 * HorizontalPodAutoscalers, through @kubernetes/client-node as the gateway uses them: defaults and
 * validation, the ReplicaSet and its pods, a rollout, scale-down by pod-deletion-cost (graceful),
 * replacement of a pod deleted from outside, readiness from the probe and the not-ready hook, an HPA
 * holding its minimum against another writer, and the cascade when a Deployment is deleted.
 */

import {
  AppsV1Api,
  AutoscalingV2Api,
  type CoreV1Api,
  PatchStrategy,
  setHeaderOptions,
} from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  apiError,
  condition,
  deployment,
  NS,
  startTestCluster,
  waitFor,
} from '../../helpers/kube-api-server/fixtures.js';
import type { KubeApiServer } from '../../helpers/kube-api-server/index.js';

let server: KubeApiServer;
let apps: AppsV1Api;
let autoscaling: AutoscalingV2Api;
let core: CoreV1Api;

const merge = setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
const COST = 'controller.kubernetes.io/pod-deletion-cost';
const REVISION = 'deployment.kubernetes.io/revision';

beforeEach(async () => {
  const t = await startTestCluster({ hpaSyncMs: 50 });
  ({ server, core } = t);
  apps = t.kc.makeApiClient(AppsV1Api);
  autoscaling = t.kc.makeApiClient(AutoscalingV2Api);
});

afterEach(async () => {
  expect(server.invalid).toEqual([]);
  expect(server.controllerProblems).toEqual([]);
  await server.close();
});

const podsOf = (name: string): any[] =>
  server.objects('Pod', NS).filter((p) => p.metadata.labels?.app === name);
const replicaSetsOf = (name: string): any[] =>
  server.objects('ReplicaSet', NS).filter((rs) => rs.metadata.ownerReferences?.[0]?.name === name);
const status = (name: string) => server.get('Deployment', NS, name)?.status ?? {};
/** A probe: the Deployment's `n` pods are ready and available, and its status says so. */
const ready = (name: string, n: number) => () =>
  status(name).readyReplicas === n &&
  status(name).availableReplicas === n &&
  podsOf(name).length === n &&
  podsOf(name);
const raw = (path: string) =>
  fetch(`${server.url}${path}`, { headers: { Authorization: 'Bearer test-token' } });
const setCost = (pod: any, cost: string) =>
  core.patchNamespacedPod(
    { name: pod.metadata.name, namespace: NS, body: { metadata: { annotations: { [COST]: cost } } } },
    merge,
  );

describe('Deployments and ReplicaSets', () => {
  it('are served and defaulted; a ReplicaSet per template makes the pods; status counts them', async () => {
    const resources = async (gv: string) =>
      ((await (await raw(`/apis/${gv}`)).json()) as any).resources.map((r: any) => r.name);
    expect(await resources('apps/v1')).toEqual(
      expect.arrayContaining(['deployments', 'deployments/status', 'deployments/scale', 'replicasets']),
    );
    expect(await resources('autoscaling/v2')).toEqual([
      'horizontalpodautoscalers',
      'horizontalpodautoscalers/status',
    ]);

    const created = await apps.createNamespacedDeployment({ namespace: NS, body: deployment('web', 3) });
    expect(created.spec).toMatchObject({
      replicas: 3,
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' } },
      revisionHistoryLimit: 10,
      progressDeadlineSeconds: 600,
      template: { spec: { dnsPolicy: 'ClusterFirst', schedulerName: 'default-scheduler' } },
    });
    const one = await apps.createNamespacedDeployment({ namespace: NS, body: deployment('one', undefined) });
    expect(one.spec?.replicas).toBe(1);

    const pods = await waitFor('3 ready pods', ready('web', 3));
    const [rs] = replicaSetsOf('web');
    const hash = rs.metadata.labels['pod-template-hash'];
    expect(rs.metadata.name).toBe(`web-${hash}`);
    expect(hash).toMatch(/^[bcdfghjklmnpqrstvwxz2456789]+$/);
    expect(rs.metadata.ownerReferences).toEqual([
      expect.objectContaining({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'web', controller: true }),
    ]);
    expect(rs.spec.selector.matchLabels).toEqual({ app: 'web', 'pod-template-hash': hash });
    expect(rs.metadata.annotations[REVISION]).toBe('1');
    expect(server.get('ReplicaSet', NS, rs.metadata.name).status).toEqual({
      replicas: 3,
      fullyLabeledReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
      observedGeneration: 1,
    });
    for (const p of pods) {
      expect(p.metadata.name).toMatch(new RegExp(`^web-${hash}-[a-z0-9]{5}$`));
      expect(p.metadata.labels).toEqual({ app: 'web', 'pod-template-hash': hash });
      expect(p.metadata.ownerReferences).toEqual([
        expect.objectContaining({ kind: 'ReplicaSet', name: rs.metadata.name, controller: true }),
      ]);
    }
    const d = await apps.readNamespacedDeployment({ name: 'web', namespace: NS });
    expect(d.status).toMatchObject({
      observedGeneration: 1,
      replicas: 3,
      updatedReplicas: 3,
      readyReplicas: 3,
      availableReplicas: 3,
    });
    expect(d.status?.unavailableReplicas).toBeUndefined();
    expect(d.status?.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Available', 'True', 'MinimumReplicasAvailable'],
      ['Progressing', 'True', 'NewReplicaSetAvailable'],
    ]);
    expect(d.metadata?.annotations?.[REVISION]).toBe('1');

    // Lists and watches as for any kind: all namespaces, by label; the scale subresource.
    const all = await apps.listDeploymentForAllNamespaces({ labelSelector: 'app=web' });
    expect(all.items.map((x) => x.metadata?.name)).toEqual(['web']);
    const sets = await apps.listNamespacedReplicaSet({
      namespace: NS,
      labelSelector: `pod-template-hash=${hash}`,
    });
    expect(sets.items.map((x) => x.metadata?.name)).toEqual([rs.metadata.name]);
    expect(await apps.readNamespacedDeploymentScale({ name: 'web', namespace: NS })).toMatchObject({
      kind: 'Scale',
      spec: { replicas: 3 },
      status: { replicas: 3, selector: 'app=web' },
    });
    const watched = await raw(
      `/apis/apps/v1/namespaces/${NS}/deployments?watch=true&timeoutSeconds=1&labelSelector=app%3Done`,
    ).then((r) => r.text());
    expect(
      watched
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))[0],
    ).toMatchObject({
      type: 'ADDED',
      object: { kind: 'Deployment', metadata: { name: 'one' } },
    });
  });

  it('a new template rolls: a second ReplicaSet, the old one scaled to 0 within maxSurge', async () => {
    await apps.createNamespacedDeployment({ namespace: NS, body: deployment('roll', 4) });
    await waitFor('4 ready', ready('roll', 4));
    const body = { spec: { template: { metadata: { annotations: { v: '2' } } } } };
    await apps.patchNamespacedDeployment({ name: 'roll', namespace: NS, body }, merge);
    let most = 0;
    await waitFor('rolled', () => {
      most = Math.max(most, podsOf('roll').filter((p) => !p.metadata.deletionTimestamp).length);
      const done = podsOf('roll').every((p) => p.metadata.annotations?.v === '2');
      return replicaSetsOf('roll').length === 2 && ready('roll', 4)() && done;
    });
    expect(most).toBeLessThanOrEqual(5); // 4 + 25% surge
    const [old, next] = replicaSetsOf('roll').sort((a, b) =>
      a.metadata.annotations[REVISION].localeCompare(b.metadata.annotations[REVISION]),
    );
    expect([old.spec.replicas, next.spec.replicas]).toEqual([0, 4]);
    expect(server.get('Deployment', NS, 'roll').metadata.annotations[REVISION]).toBe('2');
  });

  it('scales down the pod with the lowest pod-deletion-cost first, gracefully', async () => {
    // The pods take their whole grace (2 s) to stop, so the deleted one is seen terminating.
    const body = deployment('svc', 3, { annotations: { 'fairway.dev/test-sigterm-ms': '60000' }, grace: 2 });
    await apps.createNamespacedDeployment({ namespace: NS, body });
    const pods = await waitFor('3 ready', ready('svc', 3));
    // The oldest: without the cost a newer one would go first.
    const [victim] = pods.sort((a, b) =>
      a.metadata.creationTimestamp.localeCompare(b.metadata.creationTimestamp),
    );
    await setCost(victim, '-100');
    const scaled = await apps.patchNamespacedDeploymentScale(
      { name: 'svc', namespace: NS, body: { spec: { replicas: 2 } } },
      merge,
    );
    expect(scaled.spec?.replicas).toBe(2);
    const terminating = await waitFor('terminating', () =>
      podsOf('svc').find((p) => p.metadata.deletionTimestamp),
    );
    expect(terminating.metadata.name).toBe(victim.metadata.name);
    expect(terminating.metadata.deletionGracePeriodSeconds).toBe(2);
    expect(podsOf('svc').filter((p) => p.metadata.deletionTimestamp)).toHaveLength(1);
    await waitFor('status', () => status('svc').replicas === 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(server.get('Pod', NS, victim.metadata.name)?.status.phase).toBe('Running'); // still draining
    const deleted = server
      .objects('Event', NS)
      .find((e) => e.message === `Deleted pod: ${victim.metadata.name}`);
    expect(deleted).toMatchObject({
      reason: 'SuccessfulDelete',
      source: { component: 'replicaset-controller' },
      involvedObject: { kind: 'ReplicaSet' },
    });
    await waitFor('gone', () => !server.get('Pod', NS, victim.metadata.name), 6000);
    expect(podsOf('svc')).toHaveLength(2);
  });

  it('replaces a pod deleted or evicted from outside', async () => {
    await apps.createNamespacedDeployment({ namespace: NS, body: deployment('keep', 2, { grace: 1 }) });
    const [first] = await waitFor('2 ready', ready('keep', 2));
    await core.deleteNamespacedPod({ name: first.metadata.name, namespace: NS });
    await waitFor('replaced', () => {
      const live = podsOf('keep').filter((p) => !p.metadata.deletionTimestamp);
      return live.length === 2 && live.every((p) => p.metadata.name !== first.metadata.name);
    });
    const [second] = await waitFor('2 ready again', ready('keep', 2));
    server.kubeletEvict(NS, second.metadata.name);
    await waitFor('evicted one replaced', () => {
      const others = podsOf('keep').filter((p) => p.metadata.name !== second.metadata.name);
      return others.filter((p) => p.status.phase === 'Running').length === 2;
    });
    expect(server.get('Pod', NS, second.metadata.name).status.phase).toBe('Failed'); // it stays, as on a node
  });

  it('a readinessProbe makes pods ready after its delay; one held not ready counts so and goes first', async () => {
    const probe = { tcpSocket: { port: 8080 }, initialDelaySeconds: 2, periodSeconds: 1 };
    await apps.createNamespacedDeployment({ namespace: NS, body: deployment('probe', 2, { probe }) });
    const [started] = await waitFor('running', () => {
      const pods = podsOf('probe');
      return pods.length === 2 && pods.every((p) => p.status.phase === 'Running') && pods;
    });
    expect(started.status.containerStatuses[0].ready).toBe(false);
    expect(started.status.conditions.find((c: any) => c.type === 'Ready')).toMatchObject({
      status: 'False',
      reason: 'ContainersNotReady',
      message: 'containers with unready status: [main]',
    });
    expect(status('probe').readyReplicas).toBeUndefined();
    const [held, other] = await waitFor('ready after the delay', ready('probe', 2), 6000);
    expect(held.status.containerStatuses[0].ready).toBe(true);
    expect(held.spec.containers[0].readinessProbe).toEqual({
      ...probe,
      timeoutSeconds: 1,
      successThreshold: 1,
      failureThreshold: 3,
    });

    // The hook: one pod not ready, as if its probe failed; the status says so when it returns.
    server.setPodReady(NS, held.metadata.name, false);
    expect(condition(server.get('Pod', NS, held.metadata.name), 'Ready')).toBeUndefined();
    expect(status('probe')).toMatchObject({ replicas: 2, readyReplicas: 1, unavailableReplicas: 1 });
    server.setPodReady(NS, held.metadata.name, true);
    expect(status('probe').readyReplicas).toBe(2);
    // Not ready goes before ready, whatever the deletion cost says.
    await setCost(other, '-100');
    server.setPodReady(NS, held.metadata.name, false);
    await apps.patchNamespacedDeployment(
      { name: 'probe', namespace: NS, body: { spec: { replicas: 1 } } },
      merge,
    );
    await waitFor('held one gone', () => !server.get('Pod', NS, held.metadata.name));
    expect(server.get('Pod', NS, other.metadata.name).metadata.deletionTimestamp).toBeUndefined();
  });

  it('refuses what a real server refuses, in its words', async () => {
    const message = async (promise: Promise<unknown>, code = 422) => {
      const { code: got, body } = await apiError(promise);
      expect(got).toBe(code);
      return body.message;
    };
    const create = (body: any) => apps.createNamespacedDeployment({ namespace: NS, body });
    const bad = deployment('bad', 1);
    bad.spec!.selector = { matchLabels: { app: 'other' } };
    expect(await message(create(bad))).toBe(
      'Deployment.apps "bad" is invalid: spec.template.metadata.labels: Invalid value: map[string]string{"app":"bad"}: `selector` does not match template `labels`',
    );
    const none = deployment('none', 1) as any;
    delete none.spec.selector;
    none.spec.template.spec.containers = [];
    const refused = await apiError(create(none));
    expect(refused.body.message).toBe(
      'Deployment.apps "none" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: map[string]string{"app":"none"}: `selector` does not match template `labels`, spec.template.spec.containers: Required value]',
    );
    expect(refused.body.details.causes[0]).toEqual({
      reason: 'FieldValueRequired',
      message: 'Required value',
      field: 'spec.selector',
    });
    expect(await message(create(deployment('neg', -1)))).toBe(
      'Deployment.apps "neg" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0',
    );
    expect(await message(create(deployment('half', 1.5)), 400)).toBe(
      'Deployment in version "v1" cannot be handled as a Deployment: json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32',
    );

    await create(deployment('fixed', 1));
    const selector = { matchLabels: { app: 'fixed', tier: 'x' } };
    const body = { spec: { selector, template: { metadata: { labels: { tier: 'x' } } } } };
    expect(await message(apps.patchNamespacedDeployment({ name: 'fixed', namespace: NS, body }, merge))).toBe(
      'Deployment.apps "fixed" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"fixed", "tier":"x"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable',
    );
    const scale = {
      apiVersion: 'autoscaling/v1',
      kind: 'Scale',
      metadata: { name: 'fixed' },
      spec: { replicas: -2 },
    };
    expect(
      await message(apps.replaceNamespacedDeploymentScale({ name: 'fixed', namespace: NS, body: scale })),
    ).toBe(
      'Scale.autoscaling "fixed" is invalid: spec.replicas: Invalid value: -2: must be greater than or equal to 0',
    );
    server.invalid.length = 0; // the refusals above are recorded there
  });
});

describe('HorizontalPodAutoscalers', () => {
  it('are validated, and hold a Deployment at minReplicas against another writer', async () => {
    const hpa = (name: string, spec: object) => ({
      apiVersion: 'autoscaling/v2',
      kind: 'HorizontalPodAutoscaler',
      metadata: { name, namespace: NS },
      spec: {
        scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'auto' },
        maxReplicas: 5,
        ...spec,
      },
    });
    const create = (body: any) =>
      autoscaling.createNamespacedHorizontalPodAutoscaler({ namespace: NS, body });
    const message = async (body: any) => (await apiError(create(body))).body.message;
    expect(await message(hpa('low', { minReplicas: 0 }))).toBe(
      'HorizontalPodAutoscaler.autoscaling "low" is invalid: spec.minReplicas: Invalid value: 0: must be greater than or equal to 1',
    );
    expect(await message(hpa('inv', { minReplicas: 4, maxReplicas: 2 }))).toBe(
      'HorizontalPodAutoscaler.autoscaling "inv" is invalid: spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`',
    );
    expect(await message({ ...hpa('nt', {}), spec: { maxReplicas: 3 } })).toBe(
      'HorizontalPodAutoscaler.autoscaling "nt" is invalid: [spec.scaleTargetRef.kind: Required value, spec.scaleTargetRef.name: Required value]',
    );
    server.invalid.length = 0;

    await apps.createNamespacedDeployment({ namespace: NS, body: deployment('auto', 1) });
    await waitFor('1 ready', ready('auto', 1));
    const created = await create(hpa('auto', { minReplicas: 3 }));
    expect(created.spec?.metrics).toEqual([
      {
        type: 'Resource',
        resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 80 } },
      },
    ]);
    await waitFor('3 ready', ready('auto', 3));
    const h = await autoscaling.readNamespacedHorizontalPodAutoscaler({ name: 'auto', namespace: NS });
    expect(h.status).toMatchObject({ desiredReplicas: 3, lastScaleTime: expect.any(Date) });
    expect(server.objects('Event', NS).find((e) => e.reason === 'SuccessfulRescale')?.message).toBe(
      'New size: 3; reason: Current number of replicas below Spec.MinReplicas',
    );
    // Another writer sets 1: the HPA puts 3 back at its next sync.
    await apps.patchNamespacedDeployment(
      { name: 'auto', namespace: NS, body: { spec: { replicas: 1 } } },
      merge,
    );
    await waitFor(
      'back to 3',
      () => server.get('Deployment', NS, 'auto').spec.replicas === 3 && ready('auto', 3)(),
    );
    const writers = server.get('Deployment', NS, 'auto').metadata.managedFields.map((m: any) => m.manager);
    expect(writers).toContain('kube-controller-manager');
    await waitFor(
      'seen',
      () => server.get('HorizontalPodAutoscaler', NS, 'auto').status.currentReplicas === 3,
    );
  });
});

describe('deletion', () => {
  it('deleting a Deployment without a propagationPolicy takes its ReplicaSets and pods (background)', async () => {
    await apps.createNamespacedDeployment({ namespace: NS, body: deployment('gone', 2, { grace: 1 }) });
    await waitFor('2 ready', ready('gone', 2));
    await apps.deleteNamespacedDeployment({ name: 'gone', namespace: NS });
    expect(server.get('Deployment', NS, 'gone')).toBeUndefined();
    expect(replicaSetsOf('gone')).toEqual([]);
    expect(podsOf('gone').every((p) => p.metadata.deletionTimestamp)).toBe(true);
    await waitFor('pods gone', () => podsOf('gone').length === 0, 4000);
  });
});
