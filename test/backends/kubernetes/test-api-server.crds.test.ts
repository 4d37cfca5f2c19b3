/**
 * The test Kubernetes API server serves CustomResourceDefinitions as a real one does (1/3): discovery,
 * the CRDs as objects, REST paths, validation against the schema with pruning, defaulting and the
 * workload webhooks, /status, list and watch, server-side apply. Through @kubernetes/client-node as the
 * backend would; the controllers are in test-api-server.crd-jobs / crd-ray.test.ts.
 */
import { readFileSync } from 'node:fs';
import { PatchStrategy } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CRDS,
  type CrdCluster,
  jobSet,
  rayClusterSpec,
  startCrdCluster,
} from '../../helpers/kube-api-server/crd-fixtures.js';
import { apiError, NS } from '../../helpers/kube-api-server/fixtures.js';

let t: CrdCluster;

const start = async (crds: string | false = CRDS) => {
  t = await startCrdCluster(crds);
};

afterEach(async () => {
  expect(t.server.invalid).toEqual([]);
  expect(t.server.controllerProblems).toEqual([]);
  await t.server.close();
});

describe('serving CRDs', () => {
  it('puts the shared CRDs in discovery, lists them as CustomResourceDefinitions, and knows nothing of them without', async () => {
    await start();
    const groups = (await (await t.raw('/apis')).json()).groups;
    const ray = groups.find((g: any) => g.name === 'ray.io');
    expect(ray.versions.map((v: any) => v.version)).toEqual(['v1', 'v1alpha1']);
    expect(ray.preferredVersion.version).toBe('v1');
    for (const group of [
      'jobset.x-k8s.io',
      'kubeflow.org',
      'leaderworkerset.x-k8s.io',
      'trainer.kubeflow.org',
    ])
      expect(groups.map((g: any) => g.name)).toContain(group);
    const jobsets = await (await t.raw('/apis/jobset.x-k8s.io/v1alpha2')).json();
    expect(jobsets.resources).toEqual([
      expect.objectContaining({ name: 'jobsets', singularName: 'jobset', namespaced: true, kind: 'JobSet' }),
      expect.objectContaining({ name: 'jobsets/status', kind: 'JobSet', verbs: ['get', 'patch', 'update'] }),
    ]);
    expect(jobsets.resources[0].verbs).toEqual(
      expect.arrayContaining(['create', 'list', 'watch', 'patch', 'delete']),
    );
    const lws = (await (await t.raw('/apis/leaderworkerset.x-k8s.io/v1')).json()).resources;
    expect(lws[0]).toMatchObject({ kind: 'LeaderWorkerSet', shortNames: ['lws'] });
    expect(lws.map((r: any) => r.name)).toContain('leaderworkersets/scale');
    const rayResources = (await (await t.raw('/apis/ray.io/v1')).json()).resources;
    expect(rayResources[0].categories).toEqual(['all']);

    const crds = await t.api.list('apiextensions.k8s.io/v1', 'CustomResourceDefinition');
    expect(crds.items.map((c) => c.metadata?.name).sort()).toEqual([
      'jobsets.jobset.x-k8s.io',
      'leaderworkersets.leaderworkerset.x-k8s.io',
      'pytorchjobs.kubeflow.org',
      'rayclusters.ray.io',
      'rayjobs.ray.io',
      'rayservices.ray.io',
      'trainjobs.trainer.kubeflow.org',
    ]);
    const established = (crds.items[0] as any).status.conditions.find((c: any) => c.type === 'Established');
    expect(established.status).toBe('True');
    await t.server.close();

    await start(false);
    expect((await t.raw('/apis/jobset.x-k8s.io/v1alpha2')).status).toBe(404);
    expect((await (await t.raw('/apis')).json()).groups.map((g: any) => g.name)).not.toContain(
      'jobset.x-k8s.io',
    );
    const post = await t.raw(`/apis/jobset.x-k8s.io/v1alpha2/namespaces/${NS}/jobsets`, {
      method: 'POST',
      body: JSON.stringify(jobSet('js')),
    });
    expect(post.status).toBe(404);
    await expect(t.api.create(jobSet('js'))).rejects.toThrow(/404|not found/i);
    expect(t.server.objects('Job')).toEqual([]);

    // Installed later, by the API or by installCrd; deleting the CRD takes its objects with it.
    expect(t.server.installCrd(readFileSync(`${CRDS}/jobset.x-k8s.io_jobsets.yaml`, 'utf8'))).toEqual([
      'jobsets.jobset.x-k8s.io',
    ]);
    expect((await t.raw('/apis/jobset.x-k8s.io/v1alpha2')).status).toBe(200);
    const widget = {
      apiVersion: 'apiextensions.k8s.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget', shortNames: ['wg'] },
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1',
            served: true,
            storage: true,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } },
              },
            },
          },
        ],
      },
    };
    await t.api.create(widget);
    expect((await t.raw('/apis/example.com/v1')).status).toBe(200);
    await t.api.create({
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      metadata: { name: 'w', namespace: NS },
      spec: { size: 3 },
    } as any);
    expect(t.server.get('Widget', NS, 'w').spec).toEqual({ size: 3 });
    await t.api.delete(widget);
    expect((await t.raw('/apis/example.com/v1')).status).toBe(404);
    expect((await t.raw(`/apis/example.com/v1/namespaces/${NS}/widgets/w`)).status).toBe(404);
  });
});

describe('custom objects against their schema', () => {
  it('refuses an invalid JobSet with 422 and stores nothing; prunes, defaults and applies the webhook to a valid one', async () => {
    await start();
    const bad = jobSet('bad');
    bad.spec.replicatedJobs[0].replicas = 'two';
    delete bad.spec.replicatedJobs[0].name;
    const refused = await apiError(t.api.create(bad));
    expect(refused.code).toBe(422);
    expect(refused.body.message).toBe(
      'JobSet.jobset.x-k8s.io "bad" is invalid: [spec.replicatedJobs[0].name: Required value, spec.replicatedJobs[0].replicas: Invalid value: "string": spec.replicatedJobs[0].replicas in body must be of type integer: "string"]',
    );
    expect(refused.body.details.causes).toContainEqual({
      reason: 'FieldValueRequired',
      message: 'Required value',
      field: 'spec.replicatedJobs[0].name',
    });
    expect(t.server.get('JobSet', NS, 'bad')).toBeUndefined();
    t.server.invalid.length = 0;
    // Deep in the pod template too (its schema is shared with every other pod template of the CRD).
    const deep = jobSet('deep');
    deep.spec.replicatedJobs[0].template.spec.template.spec.containers[0].ports = [{ containerPort: 'http' }];
    deep.spec.replicatedJobs[0].template.spec.template.spec.containers[0].resources.limits.cpu = 'lots';
    const fields = (await apiError(t.api.create(deep))).body.details.causes.map((c: any) => c.field);
    const container = 'spec.replicatedJobs[0].template.spec.template.spec.containers[0]';
    expect(fields).toEqual([`${container}.ports[0].containerPort`, `${container}.resources.limits.cpu`]);
    t.server.invalid.length = 0;

    const good = jobSet('good', { suspend: true, bogus: 'x' });
    good.spec.replicatedJobs[0].template.spec.template.spec.containers[0].colour = 'red';
    delete good.spec.replicatedJobs[0].replicas;
    good.status = { restarts: 7 };
    const response = await t.raw(`/apis/jobset.x-k8s.io/v1alpha2/namespaces/${NS}/jobsets`, {
      method: 'POST',
      body: JSON.stringify(good),
    });
    expect(response.status).toBe(201);
    expect(response.headers.get('warning')).toBe(
      '299 - "unknown field \\"spec.bogus\\"", 299 - "unknown field \\"spec.replicatedJobs[0].template.spec.template.spec.containers[0].colour\\""',
    );
    const stored = t.server.get('JobSet', NS, 'good');
    expect(stored.spec.bogus).toBeUndefined();
    expect(stored.spec.replicatedJobs[0].template.spec.template.spec.containers[0].colour).toBeUndefined();
    expect(stored.status?.restarts).toBeUndefined(); // a write to the main resource ignores status
    // CRD defaults (replicas, groupName) and the JobSet webhook's (network, policies, Indexed, OnFailure).
    expect(stored.spec.replicatedJobs[0]).toMatchObject({ replicas: 1, groupName: 'default' });
    expect(stored.spec.replicatedJobs[0].template.spec.completionMode).toBe('Indexed');
    expect(stored.spec.network).toEqual({ enableDNSHostnames: true, publishNotReadyAddresses: true });
    expect(stored.spec.successPolicy).toEqual({ operator: 'All' });

    // fieldValidation=Strict refuses unknown fields as the real server words it.
    const strict = await t.raw(
      `/apis/jobset.x-k8s.io/v1alpha2/namespaces/${NS}/jobsets?fieldValidation=Strict`,
      {
        method: 'POST',
        body: JSON.stringify({ ...jobSet('strict'), spec: { ...jobSet('strict').spec, bogus: 1 } }),
      },
    );
    expect(strict.status).toBe(400);
    expect((await strict.json()).message).toBe(
      'JobSet in version "v1alpha2" cannot be handled as a JobSet: strict decoding error: unknown field "spec.bogus"',
    );

    // /status writes only status; strategic merge patch is not for custom resources; merge patch is.
    const status = await t.raw(`/apis/jobset.x-k8s.io/v1alpha2/namespaces/${NS}/jobsets/good/status`, {
      method: 'PATCH',
      headers: { 'Content-Type': 'application/merge-patch+json' },
      body: JSON.stringify({ spec: { suspend: false }, status: { terminalState: 'Completed' } }),
    });
    expect(status.status).toBe(200);
    expect(t.server.get('JobSet', NS, 'good')).toMatchObject({
      spec: { suspend: true },
      status: { terminalState: 'Completed' },
    });
    const smp = await apiError(t.api.patch({ ...stored, spec: { suspend: false } }));
    expect(smp.code).toBe(415);
    const patched = await t.api
      .patch(
        {
          apiVersion: 'jobset.x-k8s.io/v1alpha2',
          kind: 'JobSet',
          metadata: { name: 'good', namespace: NS },
          spec: { ttlSecondsAfterFinished: 'soon' },
        } as any,
        undefined,
        undefined,
        undefined,
        undefined,
        PatchStrategy.MergePatch,
      )
      .catch((e) => e);
    expect(patched.code).toBe(422);
    t.server.invalid.length = 0;
    // The webhook: replicatedJobs are immutable but for the pod templates' scheduling directives while suspended.
    const changed = t.server.get('JobSet', NS, 'good');
    changed.spec.replicatedJobs[0].template.spec.template.spec.nodeSelector = { pool: 'b' };
    await t.api.replace(changed);
    const again = t.server.get('JobSet', NS, 'good');
    again.spec.replicatedJobs[0].template.spec.parallelism = 1;
    const immutable = await apiError(t.api.replace(again));
    expect(immutable.code).toBe(422);
    expect(immutable.body.message).toMatch(
      /^admission webhook "vjobset.kb.io" denied the request: JobSet.jobset.x-k8s.io "good" is invalid: spec.replicatedJobs: Invalid value: "array": field is immutable$/,
    );
    t.server.invalid.length = 0;

    // Other kinds: the PyTorchJob webhook refuses a Master without replicas: 1 (403, as controller-runtime answers).
    const denied = await apiError(
      t.api.create({
        apiVersion: 'kubeflow.org/v1',
        kind: 'PyTorchJob',
        metadata: { name: 'pt', namespace: NS },
        spec: {
          pytorchReplicaSpecs: {
            Master: { template: { spec: { containers: [{ name: 'main', image: 'x' }] } } },
          },
        },
      } as any),
    );
    expect(denied.code).toBe(403);
    expect(denied.body.message).toBe(
      'admission webhook "validator.pytorchjob.training-operator.kubeflow.org" denied the request: [spec.pytorchReplicaSpecs[Master].template.spec.containers: Required value: must have at least one container with name pytorch, spec.pytorchReplicaSpecs[Master].replicas: Forbidden: must be 1]',
    );
    t.server.invalid.length = 0;
  });

  it('honours preserve-unknown-fields, int-or-string, embedded resources, nullable, list types and transition rules', async () => {
    await start(false);
    const prop = (s: any) => s;
    t.server.installCrd({
      metadata: { name: 'gadgets.example.com' },
      spec: {
        group: 'example.com',
        names: { plural: 'gadgets', kind: 'Gadget' },
        scope: 'Namespaced',
        versions: [
          {
            name: 'v1beta1',
            served: true,
            storage: false,
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } },
              },
            },
          },
          {
            name: 'v1',
            served: true,
            storage: true,
            subresources: { status: {} },
            schema: {
              openAPIV3Schema: {
                type: 'object',
                properties: {
                  spec: {
                    type: 'object',
                    required: ['port'],
                    properties: {
                      port: prop({
                        'x-kubernetes-int-or-string': true,
                        anyOf: [{ type: 'integer' }, { type: 'string' }],
                      }),
                      free: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
                      child: {
                        type: 'object',
                        'x-kubernetes-embedded-resource': true,
                        properties: { spec: { type: 'object' } },
                      },
                      note: { type: 'string', nullable: true },
                      mode: { type: 'string', default: 'fast', enum: ['fast', 'slow'] },
                      tags: { type: 'array', items: { type: 'string' }, 'x-kubernetes-list-type': 'set' },
                      owner: {
                        type: 'string',
                        'x-kubernetes-validations': [
                          { rule: 'self == oldSelf', message: 'owner is immutable' },
                        ],
                      },
                      limits: { type: 'object', additionalProperties: { type: 'integer', minimum: 0 } },
                    },
                  },
                  status: { type: 'object', properties: { phase: { type: 'string' } } },
                },
              },
            },
          },
        ],
      },
    });
    const gadget = (spec: any) => ({
      apiVersion: 'example.com/v1',
      kind: 'Gadget',
      metadata: { name: 'g', namespace: NS },
      spec,
    });
    const bad = await apiError(
      t.api.create(
        gadget({
          port: 1.5,
          child: { spec: {} },
          tags: ['a', 'a'],
          mode: 'medium',
          limits: { gpu: -1 },
        }) as any,
      ),
    );
    expect(bad.body.message).toBe(
      'Gadget.example.com "g" is invalid: [spec.mode: Unsupported value: "medium": supported values: "fast", "slow", spec.limits.gpu: Invalid value: -1: spec.limits.gpu in body should be greater than or equal to 0, spec.port: Invalid value: "number": spec.port in body must be of type integer-or-string: "number", spec.child.apiVersion: Required value: must not be empty, spec.child.kind: Required value: must not be empty, spec.tags[1]: Duplicate value: "a"]',
    );
    t.server.invalid.length = 0;
    const created = await t.api.create(
      gadget({
        port: 'http',
        free: { anything: { goes: [1] } },
        child: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'c', extra: 1 },
          data: { x: 'y' },
          spec: { a: 1 },
        },
        note: null,
        owner: 'ann',
      }) as any,
    );
    expect((created as any).spec).toEqual({
      port: 'http',
      free: { anything: { goes: [1] } },
      child: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c' }, spec: {} },
      note: null,
      owner: 'ann',
      mode: 'fast',
    });
    const immutable = await apiError(
      t.api.replace({ ...created, spec: { ...(created as any).spec, owner: 'bob' } }),
    );
    expect(immutable.body.message).toBe(
      'Gadget.example.com "g" is invalid: spec.owner: Invalid value: "string": owner is immutable',
    );
    t.server.invalid.length = 0;
    // Served in both versions, stored in v1.
    const old = await (await t.raw(`/apis/example.com/v1beta1/namespaces/${NS}/gadgets/g`)).json();
    expect(old.apiVersion).toBe('example.com/v1beta1');
    expect(t.server.get('Gadget', NS, 'g').apiVersion).toBe('example.com/v1');
  });
});

describe('custom resources as any kind', () => {
  it('lists and watches with label selectors, resourceVersion and bookmarks; applies server-side', async () => {
    t = await startCrdCluster(`${CRDS}/ray.io_rayclusters.yaml`, { bookmarkIntervalMs: 50 });
    const rc = (name: string, team: string) =>
      ({
        apiVersion: 'ray.io/v1',
        kind: 'RayCluster',
        metadata: { name, namespace: NS, labels: { team } },
        spec: { suspend: true, ...rayClusterSpec() },
      }) as any;
    await t.api.create(rc('a', 'red'));
    const listed = await t.api.list(
      'ray.io/v1',
      'RayCluster',
      NS,
      undefined,
      undefined,
      undefined,
      undefined,
      'team=red',
    );
    expect(listed.items.map((i) => i.metadata?.name)).toEqual(['a']);
    const rv = listed.metadata?.resourceVersion;
    const watched = t
      .raw(
        `/apis/ray.io/v1/namespaces/${NS}/rayclusters?watch=true&labelSelector=team%3Dblue&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=${rv}`,
      )
      .then((r) => r.text());
    await new Promise((r) => setTimeout(r, 20));
    await t.api.create(rc('b', 'blue'));
    await t.api.create(rc('c', 'red'));
    const lines = (await watched)
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    const events = lines.filter((l) => l.type !== 'BOOKMARK');
    expect(events[0]).toMatchObject({
      type: 'ADDED',
      object: { apiVersion: 'ray.io/v1', kind: 'RayCluster', metadata: { name: 'b' } },
    });
    expect(events.every((e) => e.object.metadata.name === 'b')).toBe(true);
    expect(lines.find((l) => l.type === 'BOOKMARK').object).toMatchObject({
      kind: 'RayCluster',
      apiVersion: 'ray.io/v1',
    });
    // The cluster-wide list, and the v1alpha1 view of the same objects.
    const all = await (await t.raw('/apis/ray.io/v1alpha1/rayclusters')).json();
    expect(all).toMatchObject({ kind: 'RayClusterList', apiVersion: 'ray.io/v1alpha1' });
    expect(all.items.map((i: any) => i.metadata.name)).toEqual(['a', 'b', 'c']);
    const applied = await t.api.patch(
      {
        apiVersion: 'ray.io/v1',
        kind: 'RayCluster',
        metadata: { name: 'a', namespace: NS, labels: { owner: 'me' } },
      } as any,
      undefined,
      undefined,
      'fairway',
      true,
      PatchStrategy.ServerSideApply,
    );
    expect(applied.metadata?.labels).toEqual({ team: 'red', owner: 'me' });
    expect(applied.metadata?.managedFields?.map((m: any) => m.manager)).toContain('fairway');
  });
});
