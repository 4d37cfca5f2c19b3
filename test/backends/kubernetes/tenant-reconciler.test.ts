// The tenant reconciler against the test API server: tenant objects edited or deleted outside
// Fairway are applied again (Fairway's fields win, another field manager's stay), a repair of
// unchanged objects writes nothing, and a best-effort PriorityClass Fairway cannot fix refuses
// only the best-effort tenants' jobs, naming the class and its value.
import { KubeConfig, PatchStrategy } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { KubernetesBackend } from '../../../src/backends/kubernetes/backend.js';
import { KubeClient } from '../../../src/backends/kubernetes/client.js';
import { parseKubernetesSettings } from '../../../src/backends/kubernetes/settings.js';
import { TenantReconciler, TenantRefusedError } from '../../../src/backends/kubernetes/tenant-reconciler.js';
import {
  type BackendEvent,
  type BackendJob,
  BackendNotReadyError,
  type BackendTenant,
} from '../../../src/backends/port.js';
import { type KubeApiServer, startKubeApiServer } from '../../helpers/kube-api-server/index.js';

const FLAVORS = [{ name: 'h100-80g', kind: 'gpu' as const }];
const AURORA: BackendTenant = {
  id: '0190f0a0-0000-7000-8000-00000000000a',
  slug: 'aurora',
  isolationLevel: 'GUARANTEED',
  egressAllowlist: ['10.0.0.0/8'],
  maxGpus: { 'h100-80g': 16 },
};
const SPARE: BackendTenant = {
  id: '0190f0a0-0000-7000-8000-00000000000b',
  slug: 'spare',
  isolationLevel: 'BEST_EFFORT',
  egressAllowlist: null,
  maxGpus: { 'h100-80g': 4 },
};
const AURORA_NS = 'fairway-aurora';

let kube: KubeApiServer;
let kc: KubeConfig;
let logs: string[];
beforeEach(async () => {
  kube = await startKubeApiServer({ kubelet: false });
  kc = new KubeConfig();
  kc.loadFromString(kube.kubeconfigYaml);
  logs = [];
});
afterEach(async () => {
  await kube.close();
});

function reconciler(settings: Record<string, unknown> = {}, now: () => number = Date.now) {
  const s = parseKubernetesSettings({
    flavors: [{ flavor: 'h100-80g', resource: 'nvidia.com/gpu' }],
    ...settings,
  });
  const client = new KubeClient(kc, { attempts: 1, requestTimeoutMs: 3000 });
  return { reconciler: new TenantReconciler(client, s, (m) => logs.push(m), now), client, settings: s };
}

/** A write as another field manager would make it (kubectl apply --server-side --force-conflicts). */
function applyAs(client: KubeClient, manager: string, object: Record<string, unknown>) {
  return client.api.patch(
    object as never,
    undefined,
    undefined,
    manager,
    true,
    PatchStrategy.ServerSideApply,
  );
}

describe('tenant objects edited outside Fairway', () => {
  it('restores an edited quota and namespace label, recreates a deleted NetworkPolicy, and keeps another manager’s labels', async () => {
    const { reconciler: r, client } = reconciler();
    await r.sync([AURORA], FLAVORS);
    expect(kube.get('ResourceQuota', AURORA_NS, 'fairway-quota').spec.hard['requests.nvidia.com/gpu']).toBe(
      '16',
    );

    // Someone else's manager raises the quota and labels it and the namespace; someone lowers Pod
    // Security on the namespace; the NetworkPolicy is deleted.
    await applyAs(client, 'platform-team', {
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'fairway-quota', namespace: AURORA_NS, labels: { 'example.com/cost-center': 'ml' } },
      spec: { hard: { 'requests.nvidia.com/gpu': '64' } },
    });
    await applyAs(client, 'platform-team', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: AURORA_NS, labels: { 'example.com/owner': 'team-aurora' } },
    });
    await client.mergePatch(
      { apiVersion: 'v1', kind: 'Namespace', metadata: { name: AURORA_NS } },
      { metadata: { labels: { 'pod-security.kubernetes.io/enforce': 'privileged' } } },
    );
    kube.remove('NetworkPolicy', AURORA_NS, 'fairway-isolation');
    expect(kube.get('ResourceQuota', AURORA_NS, 'fairway-quota').spec.hard['requests.nvidia.com/gpu']).toBe(
      '64',
    );

    // A sync of the same tenants does not look (its objects did not change in Fairway's eyes)…
    const before = kube.writes.length;
    await r.sync([AURORA], FLAVORS);
    expect(kube.writes.slice(before).filter((w) => w.verb === 'apply')).toEqual([]);
    // …a repair does.
    expect(await r.repair()).toBe(3);
    const quota = kube.get('ResourceQuota', AURORA_NS, 'fairway-quota');
    expect(quota.spec.hard['requests.nvidia.com/gpu']).toBe('16');
    expect(quota.metadata.labels).toMatchObject({
      'example.com/cost-center': 'ml',
      'app.kubernetes.io/managed-by': 'fairway',
    });
    const ns = kube.get('Namespace', undefined, AURORA_NS);
    expect(ns.metadata.labels).toMatchObject({
      'example.com/owner': 'team-aurora',
      'pod-security.kubernetes.io/enforce': 'restricted',
    });
    const policy = kube.get('NetworkPolicy', AURORA_NS, 'fairway-isolation');
    expect(policy.spec.ingress[0]).toEqual({ from: [{ podSelector: {} }] });
    expect(policy.spec.egress.at(-1)).toEqual({ to: [{ ipBlock: { cidr: '10.0.0.0/8' } }] });
    expect(logs.filter((l) => l.startsWith('repaired')).sort()).toEqual([
      `repaired Namespace ${AURORA_NS}: edited outside Fairway`,
      `repaired NetworkPolicy ${AURORA_NS}/fairway-isolation: missing outside Fairway`,
      `repaired ResourceQuota ${AURORA_NS}/fairway-quota: edited outside Fairway`,
    ]);

    // Nothing changed since: a repair writes nothing.
    const quiet = kube.writes.length;
    expect(await r.repair()).toBe(0);
    expect(kube.writes.length).toBe(quiet);
    expect(kube.invalid).toEqual([]);
    expect(kube.writes.every((w) => w.status < 300)).toBe(true);
  });

  it('repairs at a tenant sync once tenantRepairMs has passed, and an object whose managed-by label was removed too', async () => {
    let now = 1_000_000;
    const { reconciler: r, client } = reconciler({ tenantRepairMs: 60_000 }, () => now);
    await r.sync([AURORA, SPARE], FLAVORS);
    kube.remove('LimitRange', AURORA_NS, 'fairway-defaults');
    await client.mergePatch(
      {
        apiVersion: 'v1',
        kind: 'ServiceAccount',
        metadata: { name: 'fairway-workload', namespace: 'fairway-spare' },
      },
      { metadata: { labels: { 'app.kubernetes.io/managed-by': null } }, automountServiceAccountToken: true },
    );
    now += 30_000;
    await r.sync([AURORA, SPARE], FLAVORS);
    expect(kube.get('LimitRange', AURORA_NS, 'fairway-defaults')).toBeUndefined();
    now += 30_000;
    await r.sync([AURORA, SPARE], FLAVORS);
    expect(kube.get('LimitRange', AURORA_NS, 'fairway-defaults').spec.limits[0].default).toEqual({
      cpu: '1',
      memory: '2Gi',
    });
    const account = kube.get('ServiceAccount', 'fairway-spare', 'fairway-workload');
    expect(account.automountServiceAccountToken).toBe(false);
    expect(account.metadata.labels['app.kubernetes.io/managed-by']).toBe('fairway');
  });

  it('a deleted best-effort PriorityClass is made again by a repair', async () => {
    const { reconciler: r } = reconciler();
    await r.sync([SPARE], FLAVORS);
    kube.remove('PriorityClass', undefined, 'fairway-best-effort');
    await r.repair();
    expect(kube.get('PriorityClass', undefined, 'fairway-best-effort').value).toBe(-100);
    await expect(r.tenant(SPARE.id)).resolves.toMatchObject({ slug: 'spare' });
  });

  it('a tenant the sync has not included yet is a wait (the start is retried), not a fault', async () => {
    const { reconciler: r } = reconciler();
    await r.sync([SPARE], FLAVORS);
    await expect(r.tenant(AURORA.id)).rejects.toBeInstanceOf(BackendNotReadyError);
  });
});

describe('a best-effort PriorityClass Fairway cannot fix', () => {
  const conflicting = {
    apiVersion: 'scheduling.k8s.io/v1',
    kind: 'PriorityClass',
    metadata: { name: 'fairway-best-effort' },
    value: 1000,
    description: 'made by hand',
  };

  it('refuses only best-effort tenants, naming the class and its value; every tenant’s objects are still made; fixed, it is said once', async () => {
    kube.put(conflicting);
    const { reconciler: r } = reconciler();
    await r.sync([AURORA, SPARE], FLAVORS);
    await r.sync([AURORA, SPARE], FLAVORS);
    for (const ns of [AURORA_NS, 'fairway-spare'])
      for (const kind of ['ResourceQuota', 'LimitRange', 'NetworkPolicy', 'ServiceAccount'])
        expect(kube.objects(kind, ns).length, `${kind} in ${ns}`).toBe(1);
    // The class is left as it is: its value cannot change on a real server.
    expect(kube.get('PriorityClass', undefined, 'fairway-best-effort').value).toBe(1000);
    expect(kube.writes.filter((w) => w.kind === 'PriorityClass')).toEqual([]);
    await expect(r.tenant(AURORA.id)).resolves.toMatchObject({ slug: 'aurora' });
    const refusal = await r.tenant(SPARE.id).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(TenantRefusedError);
    expect((refusal as Error).message).toMatch(
      /PriorityClass "fairway-best-effort".*value 1000 \(Fairway needs -100\)/,
    );
    expect(logs.filter((l) => l.includes('PriorityClass'))).toHaveLength(1);

    kube.remove('PriorityClass', undefined, 'fairway-best-effort');
    await r.sync([AURORA, SPARE], FLAVORS);
    expect(kube.get('PriorityClass', undefined, 'fairway-best-effort').value).toBe(-100);
    await expect(r.tenant(SPARE.id)).resolves.toMatchObject({ slug: 'spare' });
    expect(logs.filter((l) => l.includes('PriorityClass'))).toEqual([
      expect.stringContaining('value 1000'),
      expect.stringMatching(/is as Fairway needs now/),
    ]);
  });

  it('a class the API refuses (422, as a real server refuses a changed value) refuses best-effort tenants too', async () => {
    const { reconciler: r, client } = reconciler();
    const apply = client.apply.bind(client);
    client.apply = async (object) => {
      if (object.kind !== 'PriorityClass') return apply(object);
      throw Object.assign(new Error('HTTP 422'), {
        code: 422,
        body: {
          message:
            'PriorityClass.scheduling.k8s.io "fairway-best-effort" is invalid: value: Forbidden: may not be changed in an update.',
        },
      });
    };
    await r.sync([AURORA, SPARE], FLAVORS);
    await expect(r.tenant(AURORA.id)).resolves.toMatchObject({ slug: 'aurora' });
    await expect(r.tenant(SPARE.id)).rejects.toThrow(
      /PriorityClass "fairway-best-effort".*refused it \(422\).*may not be changed/,
    );
  });

  it('a best-effort job started on the backend fails with the reason, and nothing is created for it', async () => {
    kube.put(conflicting);
    const settings = parseKubernetesSettings({
      flavors: [{ flavor: 'h100-80g', resource: 'nvidia.com/gpu' }],
    });
    const backend = new KubernetesBackend({
      kubeConfig: kc,
      settings,
      log: (m) => logs.push(m),
      logError: () => undefined,
    });
    try {
      const events: BackendEvent[] = [];
      backend.onEvent((e) => events.push(e));
      await backend.syncTenants([AURORA, SPARE], FLAVORS);
      const jobId = '0190f0a0-0000-7000-8000-000000000101';
      // Refused before anything is built from it: the admission's placement does not matter.
      const job = {
        jobId,
        tenant: SPARE.id,
        queue: 'spare',
        name: 'train',
        podSets: [{ name: 'main', count: 1, perPod: { gpu: 1 } }],
        admission: { jobId, queue: 'spare', at: 1, podSets: [], borrowed: false, mode: 'normal' },
        workload: { image: 'nvcr.io/nvidia/pytorch:24.05-py3' },
      } as unknown as BackendJob;
      await backend.start(job);
      await new Promise((resolve) => setImmediate(resolve));
      expect(events).toEqual([
        expect.objectContaining({
          type: 'failed',
          jobId,
          reason: expect.stringMatching(/PriorityClass "fairway-best-effort".*value 1000/),
        }),
      ]);
      expect(kube.objects('Job', 'fairway-spare')).toEqual([]);
    } finally {
      await backend.close();
    }
  });
});
