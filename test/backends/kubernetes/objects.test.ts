// Pure builders of the Kubernetes backend: every object validates against the Kubernetes schemas
// (kubernetes-models) in the wire form client-node sends, and says what the design says.

import type { KubernetesObject, V1Job, V1PodSpec } from '@kubernetes/client-node';
import { Job } from 'kubernetes-models/batch/v1';
import { NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PriorityClass } from 'kubernetes-models/scheduling.k8s.io/v1';
import { LimitRange, Namespace, ResourceQuota, ServiceAccount } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { kubeJobName, labelValue, namespaceName } from '../../../src/backends/kubernetes/naming.js';
import {
  bestEffortPriorityClass,
  type JobBuildContext,
  jobObjects,
  type KubeObject,
  type KubeTenant,
  tenantObjects,
  toWireJson,
} from '../../../src/backends/kubernetes/objects.js';
import {
  DEFAULT_KUBERNETES_SETTINGS,
  type FlavorMapping,
  parseKubernetesSettings,
} from '../../../src/backends/kubernetes/settings.js';
import type { BackendJob } from '../../../src/backends/port.js';
import type { PodSetAdmission, PodSetSpec } from '../../../src/core/scheduling/types.js';

const JOB_ID = '0b9d6a2e-3f4c-4e1a-9b7d-2c5e8f1a6b3d';
const PRODUCT = 'NVIDIA-A100-SXM4-80GB';
const settings = parseKubernetesSettings({
  flavors: [
    { flavor: 'a100', resource: 'nvidia.com/gpu', gpuProduct: PRODUCT },
    { flavor: 'a100-1g', resource: 'nvidia.com/mig-1g.10gb', unitsPerGpu: 7 },
    { flavor: 't4-shared', resource: 'nvidia.com/gpu.shared', unitsPerGpu: 4 },
  ],
});
const flavors = new Map<string, FlavorMapping>(settings.flavors.map((m) => [m.flavor, m]));

const tenant: KubeTenant = {
  id: 'tenant-1',
  slug: 'aurora',
  isolationLevel: 'GUARANTEED',
  egressAllowlist: null,
  maxResources: { 'nvidia.com/gpu': 16 },
};

function ctx(over: Partial<JobBuildContext> = {}): JobBuildContext {
  return {
    namespace: 'fairway-aurora',
    tenant,
    flavors,
    nodePools: new Map([
      ['n1', 'train'],
      ['n2', 'train'],
      ['n3', 'infer'],
    ]),
    ...over,
  };
}

function job(podSets: PodSetSpec[], admitted: PodSetAdmission[], over: Partial<BackendJob> = {}): BackendJob {
  return {
    jobId: JOB_ID,
    tenant: tenant.id,
    queue: 'Team Queue #1',
    name: 'Fine-tune: llama (run 3)',
    podSets,
    admission: {
      jobId: JOB_ID,
      queue: 'Team Queue #1',
      at: 1_700_000_000_123,
      podSets: admitted,
      borrowed: false,
      mode: 'fit',
    },
    workload: {
      container: {
        image: 'registry.example.com/train:1',
        command: ['python'],
        args: ['train.py'],
        env: [{ name: 'EPOCHS', value: '3' }],
        datasets: [],
        artifactStore: null,
      },
    },
    ...over,
  };
}

const onePod = (gpu: number, flavor: string, node = 'n1') =>
  job(
    [{ name: 'main', count: 1, perPod: { gpu, cpu: 4000, memory: 16384 } }],
    [{ name: 'main', flavor, count: 1, placements: [{ node, pods: 1 }] }],
  );

/** Validates the wire JSON with the Kubernetes schema; returns it. */
function valid(obj: KubernetesObject): Record<string, any> {
  const wire = toWireJson(obj);
  const Model = { Job, Namespace, ResourceQuota, LimitRange, ServiceAccount, NetworkPolicy, PriorityClass }[
    obj.kind as string
  ];
  if (!Model) throw new Error(`no model for ${obj.kind}`);
  new (Model as new (d: unknown) => { validate(): void })(wire).validate();
  return wire;
}

function only(jobs: V1Job[]): Record<string, any> {
  expect(jobs).toHaveLength(1);
  return valid(jobs[0]!);
}

/** Pod Security "restricted" (the parts a pod template can break), as the admission controller checks them.
 *
 */
function restrictedViolations(pod: Record<string, any>): string[] {
  const v: string[] = [];
  if (pod.hostNetwork || pod.hostPID || pod.hostIPC) v.push('host namespaces');
  for (const vol of pod.volumes ?? []) {
    const kinds = Object.keys(vol).filter((k) => k !== 'name');
    if (
      !kinds.every((k) =>
        [
          'emptyDir',
          'persistentVolumeClaim',
          'configMap',
          'secret',
          'projected',
          'downwardAPI',
          'ephemeral',
          'csi',
        ].includes(k),
      )
    )
      v.push(`volume ${vol.name}`);
  }
  const podSc = pod.securityContext ?? {};
  if (podSc.seccompProfile?.type !== 'RuntimeDefault') v.push('seccomp');
  if (podSc.runAsUser === 0) v.push('pod runAsUser 0');
  for (const c of [...(pod.containers ?? []), ...(pod.initContainers ?? [])]) {
    const sc = c.securityContext ?? {};
    if (sc.privileged) v.push(`${c.name} privileged`);
    if (sc.allowPrivilegeEscalation !== false) v.push(`${c.name} allowPrivilegeEscalation`);
    if (!(sc.capabilities?.drop ?? []).includes('ALL')) v.push(`${c.name} capabilities`);
    if ((sc.capabilities?.add ?? []).some((a: string) => a !== 'NET_BIND_SERVICE'))
      v.push(`${c.name} adds capabilities`);
    if (sc.runAsNonRoot !== true && podSc.runAsNonRoot !== true) v.push(`${c.name} runAsNonRoot`);
    if ((c.ports ?? []).some((p: any) => p.hostPort)) v.push(`${c.name} hostPort`);
  }
  return v;
}

describe('jobObjects', () => {
  it('whole GPUs: one Job, labels and annotations linking back, resources, product and pool selectors, deadline', () => {
    const j = only(jobObjects({ ...onePod(2, 'a100'), maxRunMs: 90_500 }, ctx(), settings));
    expect(j.metadata.name).toBe(`fw-${JOB_ID}-0`);
    expect(j.metadata.namespace).toBe('fairway-aurora');
    const labels = {
      'app.kubernetes.io/managed-by': 'fairway',
      'fairway.dev/job-id': JOB_ID,
      'fairway.dev/tenant-id': 'tenant-1',
      'fairway.dev/queue': 'Team_Queue_1',
      'fairway.dev/pod-set': 'main',
    };
    const annotations = {
      'fairway.dev/admission-at': '1700000000123',
      'fairway.dev/job-name': 'Fine-tune: llama (run 3)',
    };
    expect(j.metadata.labels).toEqual(labels);
    expect(j.metadata.annotations).toEqual(annotations);
    expect(j.spec.template.metadata).toEqual({ labels, annotations });
    expect(j.spec).toMatchObject({
      parallelism: 1,
      completions: 1,
      backoffLimit: 0,
      suspend: false,
      ttlSecondsAfterFinished: 86400,
      activeDeadlineSeconds: 91,
    });
    expect(j.spec.completionMode).toBeUndefined();
    const pod = j.spec.template.spec;
    expect(pod).toMatchObject({
      restartPolicy: 'Never',
      serviceAccountName: 'fairway-workload',
      automountServiceAccountToken: false,
      terminationGracePeriodSeconds: 30,
    });
    const main = pod.containers[0];
    expect(main).toMatchObject({
      name: 'main',
      image: 'registry.example.com/train:1',
      command: ['python'],
      args: ['train.py'],
    });
    expect(main.resources).toEqual({
      requests: { cpu: '4000m', memory: '16384Mi' },
      limits: { cpu: '4000m', memory: '16384Mi', 'nvidia.com/gpu': '2' },
    });
    expect(main.env).toEqual([
      { name: 'EPOCHS', value: '3' },
      { name: 'FAIRWAY_JOB_ID', value: JOB_ID },
    ]);
    expect(pod.nodeSelector).toEqual({ 'nvidia.com/gpu.product': PRODUCT, 'fairway.dev/pool': 'train' });
    expect(pod.tolerations).toEqual([
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
      // Its own dedicated nodes are allowed whatever its isolation level; other tenants' are not.
      { key: 'fairway.dev/dedicated', operator: 'Equal', value: 'tenant-1', effect: 'NoSchedule' },
    ]);
    expect(pod.affinity).toBeUndefined();
    expect(pod.priorityClassName).toBeUndefined();
  });

  it('a fractional whole-GPU request on a time-sliced mapping asks for that many shares; a share count that is not whole is refused', () => {
    const j = only(jobObjects(onePod(0.5, 't4-shared'), ctx(), settings));
    expect(j.spec.template.spec.containers[0].resources.limits['nvidia.com/gpu.shared']).toBe('2');
    expect(j.spec.template.spec.nodeSelector).toEqual({ 'fairway.dev/pool': 'train' }); // no product on this mapping
    expect(() => jobObjects(onePod(0.3, 't4-shared'), ctx(), settings)).toThrow(
      /1\.2 units of nvidia\.com\/gpu\.shared/,
    );
  });

  it('a MIG flavor counts slices: 1 slice is one MIG device, with or without the core flavor spec', () => {
    const withSpec = only(
      jobObjects(
        onePod(1, 'a100-1g'),
        ctx({ flavorSpecs: new Map([['a100-1g', { kind: 'mig', slicesPerGpu: 7 }]]) }),
        settings,
      ),
    );
    expect(withSpec.spec.template.spec.containers[0].resources.limits['nvidia.com/mig-1g.10gb']).toBe('1');
    const inferred = only(jobObjects(onePod(2, 'a100-1g'), ctx(), settings));
    expect(inferred.spec.template.spec.containers[0].resources.limits['nvidia.com/mig-1g.10gb']).toBe('2');
    // A whole-GPU flavor mapped to a time-sliced resource: GPUs × shares per GPU.
    const gpuKind = only(
      jobObjects(
        onePod(1, 't4-shared'),
        ctx({ flavorSpecs: new Map([['t4-shared', { kind: 'gpu' }]]) }),
        settings,
      ),
    );
    expect(gpuKind.spec.template.spec.containers[0].resources.limits['nvidia.com/gpu.shared']).toBe('4');
  });

  it('a gang of 4 pods is one Indexed Job with parallelism = completions = 4, pinned to its nodes when pinToNodes', () => {
    const gang = job(
      [{ name: 'workers', count: 4, perPod: { gpu: 8 } }],
      [
        {
          name: 'workers',
          flavor: 'a100',
          count: 4,
          placements: [
            { node: 'n2', pods: 2 },
            { node: 'n1', pods: 2 },
          ],
        },
      ],
    );
    const j = only(jobObjects(gang, ctx(), { ...settings, exactPlacement: false, pinToNodes: true }));
    expect(j.spec).toMatchObject({ parallelism: 4, completions: 4, completionMode: 'Indexed' });
    expect(j.spec.template.spec.affinity).toEqual({
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: ['n1', 'n2'] }] },
          ],
        },
      },
    });
    const unpinned = only(jobObjects(gang, ctx(), settings));
    expect(unpinned.spec.template.spec.affinity).toBeUndefined();
  });

  it('a multi-pod-set job gets one Job per pod set; nodes in two pools get no pool selector', () => {
    const multi = job(
      [
        { name: 'driver', count: 1, perPod: { cpu: 2000, memory: 4096 } },
        { name: 'workers', count: 3, minCount: 2, perPod: { gpu: 1, cpu: 8000, memory: 32768 } },
      ],
      [
        { name: 'driver', flavor: 'a100', count: 1, placements: [{ node: 'n3', pods: 1 }] },
        {
          name: 'workers',
          flavor: 'a100',
          count: 2,
          placements: [
            { node: 'n1', pods: 1 },
            { node: 'n3', pods: 1 },
          ],
        },
      ],
    );
    const built = jobObjects(multi, ctx(), settings);
    expect(built.map((b) => b.metadata?.name)).toEqual([kubeJobName(JOB_ID, 0), kubeJobName(JOB_ID, 1)]);
    const [driver, workers] = built.map(valid);
    expect(driver!.metadata.labels['fairway.dev/pod-set']).toBe('driver');
    // No GPU: no GPU toleration (the tenant's own dedicated taint only).
    expect(driver!.spec.template.spec.tolerations).toEqual([
      { key: 'fairway.dev/dedicated', operator: 'Equal', value: 'tenant-1', effect: 'NoSchedule' },
    ]);
    expect(driver!.spec.template.spec.containers[0].resources.limits).toEqual({
      cpu: '2000m',
      memory: '4096Mi',
    });
    expect(driver!.spec.template.spec.nodeSelector).toEqual({ 'fairway.dev/pool': 'infer' });
    expect(workers!.spec).toMatchObject({ parallelism: 2, completions: 2, completionMode: 'Indexed' });
    expect(workers!.spec.template.spec.nodeSelector).toEqual({ 'nvidia.com/gpu.product': PRODUCT });
  });

  it('a tenant tolerates its own dedicated taint (never another tenant’s); a BEST_EFFORT tenant gets the low priority class', () => {
    const dedicated = only(
      jobObjects(onePod(1, 'a100'), ctx({ tenant: { ...tenant, isolationLevel: 'DEDICATED' } }), settings),
    );
    expect(dedicated.spec.template.spec.tolerations).toEqual([
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'fairway.dev/dedicated', operator: 'Equal', value: 'tenant-1', effect: 'NoSchedule' },
    ]);
    expect(dedicated.spec.template.spec.priorityClassName).toBeUndefined();
    const bestEffort = only(
      jobObjects(onePod(1, 'a100'), ctx({ tenant: { ...tenant, isolationLevel: 'BEST_EFFORT' } }), settings),
    );
    expect(bestEffort.spec.template.spec.priorityClassName).toBe('fairway-best-effort');
    const pc = valid(bestEffortPriorityClass(settings));
    expect(pc).toEqual({
      apiVersion: 'scheduling.k8s.io/v1',
      kind: 'PriorityClass',
      metadata: { name: 'fairway-best-effort', labels: { 'app.kubernetes.io/managed-by': 'fairway' } },
      value: -100,
      preemptionPolicy: 'Never',
      globalDefault: false,
      description: expect.any(String),
    });
  });

  it('datasets: pvc:// mounts the claim with a subPath; s3:// gets env and an emptyDir; the artifact store is in the env', () => {
    const withData = onePod(1, 'a100');
    withData.workload = {
      container: {
        image: 'registry.example.com/train:1',
        command: [],
        args: [],
        env: [{ name: 'FAIRWAY_JOB_ID', value: 'spoofed' }],
        datasets: [
          { location: 'pvc://imagenet/train/2024', mountPath: '/data/imagenet', readOnly: true },
          { location: 's3://bucket/corpus', mountPath: '/data/corpus', readOnly: true },
          { location: 'pvc://scratch', mountPath: '/scratch', readOnly: false },
        ],
        artifactStore: 's3://bucket/artifacts',
      },
    };
    const j = only(jobObjects(withData, ctx(), settings));
    const pod = j.spec.template.spec;
    expect(pod.volumes).toEqual([
      { name: 'dataset-0', persistentVolumeClaim: { claimName: 'imagenet', readOnly: true } },
      { name: 'dataset-1', emptyDir: {} },
      { name: 'dataset-2', persistentVolumeClaim: { claimName: 'scratch', readOnly: false } },
    ]);
    const main = pod.containers[0];
    expect(main.command).toBeUndefined(); // empty command: the image's entrypoint
    expect(main.volumeMounts).toEqual([
      { name: 'dataset-0', mountPath: '/data/imagenet', readOnly: true, subPath: 'train/2024' },
      { name: 'dataset-1', mountPath: '/data/corpus' },
      { name: 'dataset-2', mountPath: '/scratch', readOnly: false },
    ]);
    expect(main.env).toEqual([
      { name: 'FAIRWAY_JOB_ID', value: JOB_ID },
      { name: 'FAIRWAY_DATASET_1', value: 's3://bucket/corpus' },
      { name: 'FAIRWAY_DATASET_1_PATH', value: '/data/corpus' },
      { name: 'FAIRWAY_ARTIFACT_STORE', value: 's3://bucket/artifacts' },
    ]);
    expect(restrictedViolations(pod)).toEqual([]);
    const escaping = structuredClone(withData);
    (escaping.workload!.container as { datasets: unknown[] }).datasets = [
      { location: 'pvc://imagenet/../other', mountPath: '/d', readOnly: true },
    ];
    expect(() => jobObjects(escaping, ctx(), settings)).toThrow(/may not contain "\.\."/);
  });

  it('the pod template meets Pod Security "restricted"; the container user is kept; root is refused', () => {
    const j = only(jobObjects(onePod(1, 'a100'), ctx(), settings));
    const pod = j.spec.template.spec;
    expect(pod.securityContext).toEqual({ runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } });
    expect(pod.containers[0].securityContext).toEqual({
      allowPrivilegeEscalation: false,
      privileged: false,
      capabilities: { drop: ['ALL'] },
      runAsNonRoot: true,
    });
    expect(pod.hostNetwork).toBeUndefined();
    expect(restrictedViolations(pod)).toEqual([]);
    // The checker itself catches what restricted forbids.
    const bad = structuredClone(pod) as V1PodSpec & Record<string, any>;
    bad.hostNetwork = true;
    bad.volumes = [{ name: 'host', hostPath: { path: '/' } }];
    bad.containers[0]!.securityContext = { privileged: true };
    expect(restrictedViolations(bad)).toEqual([
      'host namespaces',
      'volume host',
      'main privileged',
      'main allowPrivilegeEscalation',
      'main capabilities',
    ]);

    const asUser = onePod(1, 'a100');
    (asUser.workload!.container as Record<string, unknown>).securityContext = {
      runAsUser: 1000,
      runAsGroup: 2000,
    };
    expect(only(jobObjects(asUser, ctx(), settings)).spec.template.spec.securityContext).toEqual({
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
      runAsUser: 1000,
      runAsGroup: 2000,
    });
    (asUser.workload!.container as Record<string, unknown>).securityContext = { runAsUser: 0 };
    expect(() => jobObjects(asUser, ctx(), settings)).toThrow(/may not run as root/);
  });

  it('a job without a container runs busybox as nobody, sleeping for its declared duration', () => {
    const bare = { ...onePod(1, 'a100'), workload: undefined, expectedDurationMs: 120_001 };
    const main = only(jobObjects(bare, ctx(), settings)).spec.template.spec;
    expect(main.containers[0]).toMatchObject({ image: 'busybox:1.36', command: ['sleep', '121'] });
    expect(main.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 65534, runAsGroup: 65534 });
    expect(restrictedViolations(main)).toEqual([]);
  });

  it('refuses a GPU flavor without a mapping and a pod set without admission', () => {
    expect(() => jobObjects(onePod(1, 'h100'), ctx(), settings)).toThrow(
      /flavor "h100" has no Kubernetes resource mapping/,
    );
    const missing = onePod(1, 'a100');
    missing.admission = { ...missing.admission, podSets: [] };
    expect(() => jobObjects(missing, ctx(), settings)).toThrow(/pod set "main" has no admission/);
  });
});

describe('tenantObjects', () => {
  const byKind = (objects: KubeObject[]) => Object.fromEntries(objects.map((o) => [o.kind, valid(o)]));

  it('namespace first, every object labelled, Pod Security restricted, quota on requests of several resources, container defaults', () => {
    const objects = tenantObjects(
      {
        ...tenant,
        maxResources: { 'nvidia.com/gpu': 16, 'nvidia.com/mig-1g.10gb': 14, 'nvidia.com/gpu.shared': 8 },
      },
      settings,
    );
    expect(objects.map((o) => o.kind)).toEqual([
      'Namespace',
      'ResourceQuota',
      'LimitRange',
      'NetworkPolicy',
      'ServiceAccount',
    ]);
    for (const o of objects) {
      expect(o.metadata.labels).toMatchObject({
        'app.kubernetes.io/managed-by': 'fairway',
        'fairway.dev/tenant-id': 'tenant-1',
      });
      if (o.kind !== 'Namespace') expect(o.metadata.namespace).toBe('fairway-aurora');
    }
    const k = byKind(objects);
    expect(k.Namespace!.metadata.name).toBe('fairway-aurora');
    expect(k.Namespace!.metadata.labels).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
      'pod-security.kubernetes.io/warn': 'restricted',
    });
    expect(k.ResourceQuota!.metadata.name).toBe('fairway-quota');
    expect(k.ResourceQuota!.spec.hard).toEqual({
      'requests.nvidia.com/gpu': '16',
      'requests.nvidia.com/gpu.shared': '8',
      'requests.nvidia.com/mig-1g.10gb': '14',
    });
    expect(k.LimitRange!.metadata.name).toBe('fairway-defaults');
    expect(k.LimitRange!.spec.limits).toEqual([
      {
        type: 'Container',
        default: { cpu: '1', memory: '2Gi' },
        defaultRequest: { cpu: '1', memory: '2Gi' },
      },
    ]);
    expect(k.ServiceAccount).toMatchObject({
      metadata: { name: 'fairway-workload' },
      automountServiceAccountToken: false,
    });
    expect(() => tenantObjects({ ...tenant, maxResources: { 'nvidia.com/gpu': 1.5 } }, settings)).toThrow(
      /non-negative integer/,
    );
  });

  it('null egress allows all egress; a restricted tenant may reach its namespace, DNS and its allowlist; ingress only from its namespace', () => {
    const open = byKind(tenantObjects(tenant, settings)).NetworkPolicy!;
    expect(open.metadata.name).toBe('fairway-isolation');
    expect(open.spec).toEqual({
      podSelector: {},
      policyTypes: ['Ingress', 'Egress'],
      // Its own namespace; the Ray operator only to the Ray dashboard port.
      ingress: [
        { from: [{ podSelector: {} }] },
        {
          from: [
            {
              namespaceSelector: {
                matchExpressions: [
                  { key: 'kubernetes.io/metadata.name', operator: 'In', values: ['ray-system'] },
                ],
              },
            },
          ],
          ports: [{ protocol: 'TCP', port: 8265 }],
        },
      ],
      egress: [{}],
    });
    const closed = byKind(
      tenantObjects({ ...tenant, egressAllowlist: ['10.20.0.0/16', '2001:db8::/32'] }, settings),
    ).NetworkPolicy!;
    expect(closed.spec.ingress).toEqual([
      { from: [{ podSelector: {} }] },
      {
        from: [
          {
            namespaceSelector: {
              matchExpressions: [
                { key: 'kubernetes.io/metadata.name', operator: 'In', values: ['ray-system'] },
              ],
            },
          },
        ],
        ports: [{ protocol: 'TCP', port: 8265 }],
      },
    ]);
    expect(closed.spec.egress).toEqual([
      { to: [{ podSelector: {} }] },
      {
        to: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }],
        ports: [
          { protocol: 'UDP', port: 53 },
          { protocol: 'TCP', port: 53 },
        ],
      },
      { to: [{ ipBlock: { cidr: '10.20.0.0/16' } }, { ipBlock: { cidr: '2001:db8::/32' } }] },
    ]);
    const none = byKind(tenantObjects({ ...tenant, egressAllowlist: [] }, settings)).NetworkPolicy!;
    expect(none.spec.egress).toHaveLength(2); // own namespace and DNS only
    expect(() => tenantObjects({ ...tenant, egressAllowlist: ['example.com'] }, settings)).toThrow(
      /not a CIDR/,
    );
  });
});

describe('names and settings', () => {
  it('names', () => {
    expect(kubeJobName(JOB_ID, 3)).toHaveLength(41); // fw- + 36 + -3
    expect(kubeJobName(JOB_ID.toUpperCase(), 0)).toBe(`fw-${JOB_ID}-0`);
    expect(labelValue('-Team Queue #1!-')).toBe('Team_Queue_1');
    expect(labelValue(`${'x'.repeat(80)}.`)).toHaveLength(63);
    expect(namespaceName(DEFAULT_KUBERNETES_SETTINGS, 'Aurora_Labs')).toBe('fairway-aurora-labs');
  });

  it('settings: defaults fill what is not given; a bad value is refused with a readable message', () => {
    const s = parseKubernetesSettings({ pinToNodes: true, containerDefaults: { memory: '4Gi' } });
    expect(s).toEqual({
      ...DEFAULT_KUBERNETES_SETTINGS,
      pinToNodes: true,
      containerDefaults: { cpu: '1', memory: '4Gi' },
    });
    expect(parseKubernetesSettings(undefined)).toEqual(DEFAULT_KUBERNETES_SETTINGS);
    expect(() =>
      parseKubernetesSettings({ flavors: [{ flavor: 'a100', resource: 'nvidia.com/gpu', unitsPerGpu: 0 }] }),
    ).toThrow(/flavors\[0\]\.unitsPerGpu/);
    expect(() => parseKubernetesSettings({ preemptionGraceSecs: 5 })).toThrow(/preemptionGraceSecs/);
    expect(() => parseKubernetesSettings({ containerDefaults: { cpu: 'lots' } })).toThrow(
      /Kubernetes quantity/,
    );
  });
});

describe('namespaceName', () => {
  it('keeps short names readable and gives two long slugs that share a prefix two namespaces', () => {
    expect(namespaceName({ namespacePrefix: 'fairway-' }, 'aurora-research')).toBe('fairway-aurora-research');
    const stem = 'a'.repeat(60);
    const one = namespaceName({ namespacePrefix: 'fairway-' }, `${stem}-team-one`);
    const two = namespaceName({ namespacePrefix: 'fairway-' }, `${stem}-team-two`);
    expect(one).not.toBe(two);
    for (const name of [one, two]) expect(name).toMatch(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/);
  });
});
