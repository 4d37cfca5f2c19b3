// A job as a JobSet, a PyTorchJob, a RayJob or a RayCluster: every built object is valid against its
// CRD's schema (the shared CRDs the controllers publish) and its pod templates are the pod sets'
// (Fairway's labels, placement, resources, security context); names fit what each controller derives
// from them; the suspend and resume patches; status → run state; the pod-set rules refused at submit.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { V1ContainerState, V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { Ajv, type ValidateFunction } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { jobObjects, podSetTemplates } from '../../../src/backends/kubernetes/job-objects.js';
import { ANNOTATION_WORKLOAD } from '../../../src/backends/kubernetes/job-updates.js';
import {
  ANNOTATION_ADMISSION,
  LABEL_JOB_ID,
  LABEL_POD_SET,
  LABEL_TENANT_ID,
  TAINT_DEDICATED,
} from '../../../src/backends/kubernetes/naming.js';
import { HOSTNAME_LABEL, PLACEMENT_GATE } from '../../../src/backends/kubernetes/placement-gates.js';
import type { JobBuildContext } from '../../../src/backends/kubernetes/pod-spec.js';
import {
  type FlavorMapping,
  type KubernetesSettings,
  parseKubernetesSettings,
} from '../../../src/backends/kubernetes/settings.js';
import type { KubeTenant } from '../../../src/backends/kubernetes/tenant-objects.js';
import {
  CUSTOM_WORKLOADS,
  type CustomObject,
  type CustomWorkloadKind,
  workloadObjectName,
} from '../../../src/backends/kubernetes/workload-kinds.js';
import type { BackendJob } from '../../../src/backends/port.js';
import type { PodSetAdmission, PodSetSpec } from '../../../src/core/scheduling/types.js';
import { crdDirectory } from '../../helpers/crd-dir.js';

const JOB_ID = '0b9d6a2e-3f4c-4e1a-9b7d-2c5e8f1a6b3d';
const NAME = `fw-${JOB_ID}`;
const CRDS = crdDirectory();
const KINDS: CustomWorkloadKind[] = ['JOBSET', 'PYTORCH_JOB', 'RAY_JOB', 'RAY_CLUSTER'];

const flavors = [{ flavor: 'h100', resource: 'nvidia.com/gpu', gpuProduct: 'NVIDIA-H100-80GB-HBM3' }];
const settings = parseKubernetesSettings({ flavors });
const pinned = parseKubernetesSettings({ flavors, exactPlacement: false, pinToNodes: true });
const tenant: KubeTenant = {
  id: 'tenant-1',
  slug: 'aurora',
  isolationLevel: 'GUARANTEED',
  egressAllowlist: null,
  maxResources: { 'nvidia.com/gpu': 64 },
};

function context(nodePools: Record<string, string>): JobBuildContext {
  return {
    namespace: 'fairway-aurora',
    tenant,
    flavors: new Map<string, FlavorMapping>(settings.flavors.map((m) => [m.flavor, m])),
    nodePools: new Map(Object.entries(nodePools)),
  };
}
/** Admission A's nodes (n…) are in pool-a; admission B's (m…) in no pool. */
const ctx = context(
  Object.fromEntries(Array.from({ length: 40 }, (_v, i) => [`n${i >> 3}-${i & 7}`, 'pool-a'])),
);

interface Sets {
  name: string;
  count: number;
  gpu: number;
}

const SHAPES: Record<CustomWorkloadKind, Sets[]> = {
  JOBSET: [
    { name: 'trainer', count: 4, gpu: 8 },
    { name: 'Param Server', count: 2, gpu: 0 },
  ],
  PYTORCH_JOB: [
    { name: 'master', count: 1, gpu: 8 },
    { name: 'worker', count: 3, gpu: 8 },
  ],
  RAY_JOB: [
    { name: 'head', count: 1, gpu: 0 },
    { name: 'gpu-workers', count: 2, gpu: 8 },
  ],
  RAY_CLUSTER: [
    { name: 'head', count: 1, gpu: 0 },
    { name: 'gpu-workers', count: 2, gpu: 8 },
    { name: 'cpu_workers', count: 1, gpu: 0 },
  ],
};

const CONTAINERS: Record<CustomWorkloadKind, Record<string, unknown>> = {
  JOBSET: { image: 'registry.example.com/train:1', command: ['torchrun', 'train.py'] },
  PYTORCH_JOB: { image: 'registry.example.com/train:1', command: ['torchrun', 'train.py'] },
  RAY_JOB: {
    image: 'rayproject/ray:2.40.0-gpu',
    command: ['python', 'train.py'],
    args: ['--name', "it's a run", '--lr=0.1'],
  },
  RAY_CLUSTER: { image: 'rayproject/ray:2.40.0-gpu' },
};

function job(
  sets: Sets[],
  over: Partial<BackendJob> = {},
  nodes = (i: number, k: number) => `n${i}-${k}`,
  at = 1_700_000_000_000,
): BackendJob {
  const podSets: PodSetSpec[] = sets.map((s) => ({
    name: s.name,
    count: s.count,
    perPod: { gpu: s.gpu, cpu: 4000, memory: 16384 },
  }));
  const admitted: PodSetAdmission[] = sets.map((s, i) => ({
    name: s.name,
    flavor: 'h100',
    count: s.count,
    placements: Array.from({ length: s.count }, (_v, k) => ({ node: nodes(i, k), pods: 1 })),
  }));
  return {
    jobId: JOB_ID,
    tenant: tenant.id,
    queue: 'q',
    name: 'llm',
    podSets,
    admission: { jobId: JOB_ID, queue: 'q', at, podSets: admitted, borrowed: false, mode: 'fit' },
    ...over,
  };
}

function kindJob(kind: CustomWorkloadKind, over: Partial<BackendJob> = {}): BackendJob {
  return job(SHAPES[kind], { workload: { container: CONTAINERS[kind] }, workloadKind: kind, ...over });
}

function build(
  kind: CustomWorkloadKind,
  j: BackendJob = kindJob(kind),
  s: KubernetesSettings = settings,
  c = ctx,
) {
  const w = CUSTOM_WORKLOADS[kind];
  const templates = podSetTemplates(j, c, s, w.containerName);
  return { w, templates, obj: w.build(j, templates, c.namespace, s) };
}

/** What the API server receives: plain JSON. */
const wire = (o: unknown): any => JSON.parse(JSON.stringify(o));

// --- the CRDs' schemas, for ajv ---------------------------------------------------------------

const CRD_FILES: Record<CustomWorkloadKind, string> = {
  JOBSET: 'jobset.x-k8s.io_jobsets.yaml',
  PYTORCH_JOB: 'kubeflow.org_pytorchjobs.yaml',
  RAY_JOB: 'ray.io_rayjobs.yaml',
  RAY_CLUSTER: 'ray.io_rayclusters.yaml',
};

const KEEP_AS_IS = new Set(['default', 'enum', 'example', 'required']);

/**
 * A structural schema as ajv reads it. The Kubernetes extensions go: int-or-string becomes an anyOf
 * (controller-gen writes one already), an embedded resource declares apiVersion / kind / metadata,
 * list and map types and CEL rules (none of which the objects here touch) are dropped. An object
 * schema with properties refuses other fields (the API server would prune them silently, or refuse
 * them under fieldValidation=Strict: either way a typo), unless it preserves unknown fields.
 */
function toAjv(s: any): any {
  if (Array.isArray(s)) return s.map(toAjv);
  if (!s || typeof s !== 'object') return s;
  const out: any = {};
  for (const [key, value] of Object.entries<any>(s)) {
    if (key.startsWith('x-kubernetes-') || key === 'description') continue;
    if (KEEP_AS_IS.has(key)) out[key] = value;
    else if (key === 'properties')
      out.properties = Object.fromEntries(Object.entries<any>(value).map(([p, sub]) => [p, toAjv(sub)]));
    else out[key] = toAjv(value);
  }
  if (s['x-kubernetes-int-or-string'] && !out.anyOf) out.anyOf = [{ type: 'integer' }, { type: 'string' }];
  if (s['x-kubernetes-embedded-resource'])
    out.properties = {
      apiVersion: { type: 'string' },
      kind: { type: 'string' },
      metadata: { type: 'object' },
      ...out.properties,
    };
  const preserve = s['x-kubernetes-preserve-unknown-fields'] === true;
  if (out.properties && out.additionalProperties === undefined && !preserve) out.additionalProperties = false;
  return out;
}

const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
const validators = new Map<CustomWorkloadKind, ValidateFunction>();

function validatorOf(kind: CustomWorkloadKind): ValidateFunction {
  let v = validators.get(kind);
  if (!v) {
    const crd = parse(readFileSync(join(CRDS, CRD_FILES[kind]), 'utf8'));
    const w = CUSTOM_WORKLOADS[kind];
    expect(crd.metadata.name).toBe(w.crdName);
    expect(crd.spec.group).toBe(w.group);
    expect(crd.spec.names).toMatchObject({ kind: w.crdKind, plural: w.plural });
    const version = crd.spec.versions.find((x: any) => x.name === w.version);
    expect(version?.served).toBe(true);
    v = ajv.compile(toAjv(version.schema.openAPIV3Schema));
    validators.set(kind, v);
  }
  return v;
}

function schemaErrors(kind: CustomWorkloadKind, obj: unknown): string[] {
  const validate = validatorOf(kind);
  if (validate(wire(obj))) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
}

describe('the schemas are strict', () => {
  it('a misspelt field and a wrong type are refused', () => {
    const { obj } = build('JOBSET');
    expect(schemaErrors('JOBSET', obj)).toEqual([]);
    const typo = wire(obj);
    typo.spec.replicatedJobs[0].template.spec.parallelizm = 2;
    expect(schemaErrors('JOBSET', typo).join('\n')).toContain('parallelizm');
    const wrong = wire(obj);
    wrong.spec.replicatedJobs[0].replicas = '1';
    expect(schemaErrors('JOBSET', wrong).join('\n')).toContain('must be integer');
    // Down into every kind's pod templates.
    for (const kind of KINDS) {
      const bad = wire(build(kind).obj);
      (CUSTOM_WORKLOADS[kind].podTemplates(bad).at(-1)!.spec!.containers[0] as any).imagePullPolicee =
        'Always';
      expect(schemaErrors(kind, bad).join('\n'), kind).toContain('imagePullPolicee');
    }
  });
});

// --- building ----------------------------------------------------------------------------------

describe.each(KINDS)('%s: the built object', (kind) => {
  it('validates against its CRD, with or without a maximum run time, retries, checkpoints, pinning', () => {
    expect(schemaErrors(kind, build(kind).obj)).toEqual([]);
    const loaded = kindJob(kind, {
      maxRunMs: 3_600_000,
      maxRetries: 2,
      graceSeconds: 120,
      checkpoint: { intervalMs: 600_000, resumable: true },
      workloadType: 'TRAINING',
      latencySensitive: false,
    });
    expect(schemaErrors(kind, build(kind, loaded).obj)).toEqual([]);
    expect(schemaErrors(kind, build(kind, kindJob(kind), pinned).obj)).toEqual([]);
  });

  it('is fw-<jobId>, not suspended, with Fairway’s labels and the admission on the object', () => {
    const { w, obj } = build(kind);
    expect(obj).toMatchObject({ apiVersion: w.apiVersion, kind: w.crdKind });
    expect(obj.metadata.name).toBe(NAME);
    expect(obj.metadata.namespace).toBe('fairway-aurora');
    expect(obj.metadata.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'fairway',
      [LABEL_JOB_ID]: JOB_ID,
      [LABEL_TENANT_ID]: tenant.id,
    });
    // The object is not one pod set.
    expect(obj.metadata.labels).not.toHaveProperty(LABEL_POD_SET);
    expect(obj.metadata.annotations).toMatchObject({ [ANNOTATION_ADMISSION]: '1700000000000' });
    expect(obj.metadata.annotations?.[ANNOTATION_WORKLOAD]).toMatch(/^[0-9a-f]{16}$/);
    expect(w.isSuspended(obj)).toBe(false);
  });

  it('has one pod template per pod set: the pod set’s labels, placement, resources and security context', () => {
    for (const s of [settings, pinned]) {
      const { w, templates, obj } = build(kind, kindJob(kind), s);
      const inObject = w.podTemplates(obj);
      expect(inObject).toHaveLength(templates.length);
      inObject.forEach((t, i) => {
        const source = templates[i]!;
        const gpus = source.podSet.perPod.gpu ?? 0;
        expect(t.metadata?.labels).toEqual(source.template.metadata.labels);
        expect(t.metadata?.labels).toMatchObject({
          [LABEL_JOB_ID]: JOB_ID,
          [LABEL_POD_SET]: source.template.metadata.labels[LABEL_POD_SET],
        });
        expect(t.metadata?.annotations).toMatchObject({ [ANNOTATION_ADMISSION]: '1700000000000' });
        const spec = t.spec!;
        expect(spec.tolerations).toContainEqual({
          key: TAINT_DEDICATED,
          operator: 'Equal',
          value: tenant.id,
          effect: 'NoSchedule',
        });
        if (s.exactPlacement) expect(spec.schedulingGates).toEqual([{ name: PLACEMENT_GATE }]);
        else
          expect(spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution).toEqual(
            source.template.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution,
          );
        expect(spec.nodeSelector).toEqual(source.template.spec.nodeSelector);
        expect(spec.nodeSelector).toMatchObject({ 'fairway.dev/pool': 'pool-a' });
        expect(spec.securityContext).toMatchObject({
          runAsNonRoot: true,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        expect(spec.serviceAccountName).toBe('fairway-workload');
        expect(spec.automountServiceAccountToken).toBe(false);
        const main = spec.containers[0]!;
        expect(main.name).toBe(w.containerName);
        expect(main.image).toBe(CONTAINERS[kind].image);
        expect(main.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          privileged: false,
          capabilities: { drop: ['ALL'] },
          runAsNonRoot: true,
        });
        expect(main.resources).toEqual({
          requests: { cpu: '4000m', memory: '16384Mi' },
          limits: { cpu: '4000m', memory: '16384Mi', ...(gpus ? { 'nvidia.com/gpu': String(gpus) } : {}) },
        });
        expect(main.env).toContainEqual({ name: 'FAIRWAY_JOB_ID', value: JOB_ID });
      });
    }
  });

  it('fits every name its controller derives from it in 63 characters', () => {
    const { obj } = build(kind);
    const spec = obj.spec as any;
    const dns1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
    const labelValue = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;
    const derived: string[] = [obj.metadata.name];
    if (kind === 'JOBSET') {
      for (const rj of spec.replicatedJobs) {
        const jobName = `${NAME}-${rj.name}-${rj.replicas - 1}`;
        // The webhook's own check: the longest pod name with its random suffix.
        derived.push(jobName, `${jobName}-${rj.template.spec.completions - 1}-abcde`);
      }
    }
    if (kind === 'PYTORCH_JOB')
      for (const [type, r] of Object.entries<any>(spec.pytorchReplicaSpecs))
        derived.push(`${NAME}-${type.toLowerCase()}-${r.replicas - 1}`);
    if (kind === 'RAY_JOB') {
      expect(NAME.length).toBeLessThanOrEqual(47);
      derived.push(`${NAME}-xk2p9`, `${NAME}-xk2p9-head-svc`);
    }
    if (kind === 'RAY_CLUSTER') {
      expect(NAME.length).toBeLessThanOrEqual(53);
      derived.push(`${NAME}-head-svc`);
    }
    for (const n of derived) {
      expect(n.length, n).toBeLessThanOrEqual(63);
      expect(n, n).toMatch(dns1035);
    }
    const groups = (kind === 'RAY_JOB' ? spec.rayClusterSpec : spec).workerGroupSpecs ?? [];
    for (const g of groups) expect(g.groupName).toMatch(labelValue);
  });
});

describe('JOBSET', () => {
  it('one replicatedJob per pod set: an Indexed Job of its pods, the Jobs’ retries, policy and deadline', () => {
    const j = kindJob('JOBSET', { maxRetries: 3, maxRunMs: 90_500 });
    const { obj } = build('JOBSET', j);
    const [kubeJob] = jobObjects({ ...j, workloadKind: undefined }, ctx, settings);
    const spec = obj.spec as any;
    expect(spec.suspend).toBe(false);
    expect(spec.network).toEqual({ enableDNSHostnames: true, publishNotReadyAddresses: true });
    expect(spec.ttlSecondsAfterFinished).toBe(settings.finishedJobTtlSeconds);
    // "Param Server" is no DNS label: ps<index>.
    expect(spec.replicatedJobs.map((rj: any) => rj.name)).toEqual(['trainer', 'ps1']);
    spec.replicatedJobs.forEach((rj: any, i: number) => {
      const count = SHAPES.JOBSET[i]!.count;
      expect(rj.replicas).toBe(1);
      expect(rj.template.metadata).toBeUndefined();
      expect(rj.template.spec).toMatchObject({
        parallelism: count,
        completions: count,
        completionMode: 'Indexed',
        backoffLimit: 3,
        activeDeadlineSeconds: 91,
        podFailurePolicy: kubeJob!.spec!.podFailurePolicy,
      });
      expect(rj.template.spec.template.spec.restartPolicy).toBe('Never');
    });
    expect(spec.failurePolicy).toEqual({
      maxRestarts: 0,
      rules: [{ name: 'DeadlineExceeded', action: 'FailJobSet', onJobFailureReasons: ['DeadlineExceeded'] }],
    });
    expect((build('JOBSET').obj.spec as any).failurePolicy).toBeUndefined();
  });

  it('the pods get the launcher environment, pointing at the JobSet’s pod hostnames', () => {
    const spec = build('JOBSET').obj.spec as any;
    const envOf = (i: number) =>
      Object.fromEntries(
        spec.replicatedJobs[i].template.spec.template.spec.containers[0].env.map((e: any) => [
          e.name,
          e.value,
        ]),
      );
    for (const i of [0, 1])
      expect(envOf(i)).toMatchObject({
        MASTER_ADDR: `${NAME}-trainer-0-0.${NAME}`,
        NNODES: '6',
        WORLD_SIZE: '34',
        PET_RDZV_ENDPOINT: `${NAME}-trainer-0-0.${NAME}:29500`,
      });
    expect(envOf(1)).toMatchObject({ FAIRWAY_NODE_RANK_OFFSET: '4' });
  });

  it('pod set names that do not fit the pod names are replaced, all of them when one would repeat', () => {
    const names = (sets: Sets[]) =>
      (build('JOBSET', job(sets)).obj.spec as any).replicatedJobs.map((rj: any) => rj.name);
    expect(names([{ name: 'a-very-long-name', count: 2, gpu: 1 }])).toEqual(['ps0']);
    // `<fw-uuid>-<name>-0-<last index>-abcde`: 13 characters fit up to 10 pods, not 11.
    expect(names([{ name: 'thirteenchars', count: 10, gpu: 1 }])).toEqual(['thirteenchars']);
    expect(names([{ name: 'thirteenchars', count: 11, gpu: 1 }])).toEqual(['ps0']);
    expect(
      names([
        { name: 'ps1', count: 1, gpu: 1 },
        { name: 'Workers', count: 1, gpu: 1 },
      ]),
    ).toEqual(['ps0', 'ps1']);
  });
});

describe('PYTORCH_JOB', () => {
  it('Master and Worker, the runPolicy of the job, nprocPerNode = GPUs per pod', () => {
    const { obj } = build('PYTORCH_JOB', kindJob('PYTORCH_JOB', { maxRunMs: 7_200_000 }));
    const spec = obj.spec as any;
    expect(spec.nprocPerNode).toBe('8');
    expect(spec.runPolicy).toEqual({
      suspend: false,
      backoffLimit: 0,
      cleanPodPolicy: 'Running',
      ttlSecondsAfterFinished: settings.finishedJobTtlSeconds,
      activeDeadlineSeconds: 7200,
    });
    expect(Object.keys(spec.pytorchReplicaSpecs)).toEqual(['Master', 'Worker']);
    expect(spec.pytorchReplicaSpecs.Master).toMatchObject({ replicas: 1, restartPolicy: 'Never' });
    expect(spec.pytorchReplicaSpecs.Worker).toMatchObject({ replicas: 3, restartPolicy: 'Never' });
    for (const r of Object.values<any>(spec.pytorchReplicaSpecs)) {
      expect(r.template.spec.restartPolicy).toBe('Never');
      expect(r.template.spec.containers[0].ports).toEqual([
        { name: 'pytorchjob-port', containerPort: 29500, protocol: 'TCP' },
      ]);
      // The operator gives the rendezvous environment itself.
      expect(r.template.spec.containers[0].env.map((e: any) => e.name)).not.toContain('MASTER_ADDR');
    }
  });

  it('with retries the containers restart in place, counted by backoffLimit; a lone master has no Worker', () => {
    const spec = build('PYTORCH_JOB', kindJob('PYTORCH_JOB', { maxRetries: 2 })).obj.spec as any;
    expect(spec.runPolicy.backoffLimit).toBe(2);
    expect(spec.pytorchReplicaSpecs.Master.restartPolicy).toBe('OnFailure');
    expect(spec.pytorchReplicaSpecs.Master.template.spec.restartPolicy).toBe('OnFailure');
    const alone = build('PYTORCH_JOB', job([{ name: 'master', count: 1, gpu: 0 }])).obj;
    expect(Object.keys((alone.spec as any).pytorchReplicaSpecs)).toEqual(['Master']);
    expect(alone.spec).not.toHaveProperty('nprocPerNode');
    expect(schemaErrors('PYTORCH_JOB', alone)).toEqual([]);
  });
});

describe('RAY_JOB and RAY_CLUSTER', () => {
  it('a RayJob: the command is its entrypoint, the head and fixed-size worker groups its cluster', () => {
    const { obj } = build('RAY_JOB', kindJob('RAY_JOB', { maxRetries: 1, maxRunMs: 60_000 }));
    const spec = obj.spec as any;
    expect(spec).toMatchObject({
      entrypoint: `python train.py --name 'it'\\''s a run' --lr=0.1`,
      submissionMode: 'HTTPMode',
      shutdownAfterJobFinishes: true,
      ttlSecondsAfterFinished: 0,
      backoffLimit: 1,
      activeDeadlineSeconds: 60,
      suspend: false,
    });
    expect(spec.rayClusterSpec.headGroupSpec.rayStartParams).toEqual({});
    expect(spec.rayClusterSpec.workerGroupSpecs).toMatchObject([
      { groupName: 'gpu-workers', replicas: 2, minReplicas: 2, maxReplicas: 2, rayStartParams: {} },
    ]);
    expect(spec.rayClusterSpec).not.toHaveProperty('enableInTreeAutoscaling');
    // KubeRay runs `ray start` in the container; a command of ours would run after it in every pod.
    for (const t of CUSTOM_WORKLOADS.RAY_JOB.podTemplates(obj)) {
      expect(t.spec!.containers[0]!.command).toBeUndefined();
      expect(t.spec!.containers[0]!.args).toBeUndefined();
    }
  });

  it('a RayCluster: the same cluster, open-ended; worker groups named after DNS-label pod sets', () => {
    const { obj } = build('RAY_CLUSTER');
    const spec = obj.spec as any;
    expect(spec.suspend).toBe(false);
    expect(spec).not.toHaveProperty('entrypoint');
    expect(spec.headGroupSpec.template.metadata.labels[LABEL_POD_SET]).toBe('head');
    expect(spec.workerGroupSpecs.map((g: any) => [g.groupName, g.replicas])).toEqual([
      ['gpu-workers', 2],
      ['ps2', 1],
    ]);
  });
});

it('a job id that does not make a short DNS name is hashed to the same length', () => {
  expect(workloadObjectName(JOB_ID)).toBe(NAME);
  const long = workloadObjectName('Job_With_A_Very_Long_Identifier_That_Is_Not_A_UUID');
  expect(long).toMatch(/^fw-[0-9a-f]{36}$/);
  expect(workloadObjectName('Job_With_A_Very_Long_Identifier_That_Is_Not_A_UUID')).toBe(long);
});

// --- suspend and resume ------------------------------------------------------------------------

/** RFC 7386, as the API server applies a merge patch to a custom resource. */
function mergePatch(target: any, patch: any): any {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return structuredClone(patch);
  const out = typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}

/** As the cluster stores it: defaults added (which a resume must keep), suspended. */
function stored(kind: CustomWorkloadKind, obj: CustomObject): any {
  const out = wire(obj);
  if (kind === 'JOBSET')
    for (const rj of out.spec.replicatedJobs) {
      rj.groupName = 'default';
      rj.template.spec.template.spec.dnsPolicy = 'ClusterFirst';
    }
  const cluster = kind === 'RAY_JOB' ? out.spec.rayClusterSpec : kind === 'RAY_CLUSTER' ? out.spec : null;
  for (const g of cluster?.workerGroupSpecs ?? []) g.numOfHosts = 1;
  return mergePatch(out, CUSTOM_WORKLOADS[kind].suspendPatch());
}

/** Admission B: other nodes, in no pool, a later time. */
const readmitted = (kind: CustomWorkloadKind) =>
  job(SHAPES[kind], { workload: { container: CONTAINERS[kind] } }, (i, k) => `m${i}-${k}`, 1_700_000_600_000);

describe.each(KINDS)('%s: suspend and resume', (kind) => {
  const w = CUSTOM_WORKLOADS[kind];

  it('the suspend patch suspends it', () => {
    const existing = stored(kind, build(kind).obj);
    expect(w.isSuspended(existing)).toBe(true);
    expect(schemaErrors(kind, existing)).toEqual([]);
  });

  it('the resume patch gives the templates the new placement and admission, keeps the rest, resumes', () => {
    const existing = stored(kind, build(kind).obj);
    const desired = build(kind, readmitted(kind)).obj;
    expect(w.canResume(existing, desired)).toBe(true);
    const after = mergePatch(existing, w.resumePatch(existing, desired, '1700000600000'));
    expect(w.isSuspended(after)).toBe(false);
    expect(schemaErrors(kind, after)).toEqual([]);
    expect(after.metadata.annotations[ANNOTATION_ADMISSION]).toBe('1700000600000');
    const want = w.podTemplates(desired);
    w.podTemplates(after).forEach((t, i) => {
      expect(t.metadata?.annotations?.[ANNOTATION_ADMISSION]).toBe('1700000600000');
      // The pool of admission A is gone from the node selector.
      expect(t.spec!.nodeSelector).toEqual(want[i]!.spec!.nodeSelector);
      expect(t.spec!.nodeSelector?.['fairway.dev/pool']).toBeUndefined();
      expect(t.spec!.tolerations).toEqual(want[i]!.spec!.tolerations);
      expect(t.spec!.schedulingGates).toEqual([{ name: PLACEMENT_GATE }]);
      expect(t.spec!.containers).toEqual(w.podTemplates(existing)[i]!.spec!.containers);
    });
    if (kind === 'JOBSET') {
      expect(after.spec.replicatedJobs.map((rj: any) => rj.groupName)).toEqual(['default', 'default']);
      // The JobSet webhook's check: with the fields a suspended JobSet may change put back, nothing changed.
      const munged = structuredClone(after.spec.replicatedJobs);
      munged.forEach((rj: any, i: number) => {
        const before = existing.spec.replicatedJobs[i].template.spec.template;
        const t = rj.template.spec.template;
        t.metadata = before.metadata;
        for (const f of ['nodeSelector', 'tolerations', 'schedulingGates'])
          if (before.spec[f] === undefined) delete t.spec[f];
          else t.spec[f] = before.spec[f];
      });
      expect(munged).toEqual(existing.spec.replicatedJobs);
    }
    if (kind === 'RAY_JOB' || kind === 'RAY_CLUSTER') {
      const cluster = kind === 'RAY_JOB' ? after.spec.rayClusterSpec : after.spec;
      expect(cluster.workerGroupSpecs.every((g: any) => g.numOfHosts === 1)).toBe(true);
    }
  });

  it('pinned to other nodes: the new affinity where the controller allows it, a new object where not', () => {
    const existing = stored(kind, build(kind, kindJob(kind), pinned).obj);
    const desired = build(kind, readmitted(kind), pinned).obj;
    if (kind === 'JOBSET') {
      expect(w.canResume(existing, desired)).toBe(false);
      return;
    }
    expect(w.canResume(existing, desired)).toBe(true);
    const after = mergePatch(existing, w.resumePatch(existing, desired, '1700000600000'));
    const want = w.podTemplates(desired);
    w.podTemplates(after).forEach((t, i) => {
      expect(t.spec!.affinity).toEqual(want[i]!.spec!.affinity);
      const nodes =
        t.spec!.affinity!.nodeAffinity!.requiredDuringSchedulingIgnoredDuringExecution!.nodeSelectorTerms[0]!
          .matchExpressions![0]!;
      expect(nodes.key).toBe(HOSTNAME_LABEL);
      expect(nodes.values!.every((n) => n.startsWith('m'))).toBe(true);
    });
  });

  it('another shape (more pods, another image) cannot resume: the object is made anew', () => {
    const existing = stored(kind, build(kind).obj);
    const more = SHAPES[kind].map((s) =>
      s.name === 'head' || s.name === 'master' ? s : { ...s, count: s.count + 1 },
    );
    expect(
      w.canResume(existing, build(kind, job(more, { workload: { container: CONTAINERS[kind] } })).obj),
    ).toBe(false);
    const image = { workload: { container: { ...CONTAINERS[kind], image: 'registry.example.com/train:2' } } };
    expect(w.canResume(existing, build(kind, kindJob(kind, image)).obj)).toBe(false);
    // Without the annotation (not made by this version of Fairway) it is not trusted either.
    const bare = structuredClone(existing);
    delete bare.metadata.annotations[ANNOTATION_WORKLOAD];
    expect(w.canResume(bare, build(kind).obj)).toBe(false);
  });
});

// --- status → run state ------------------------------------------------------------------------

function pod(
  name: string,
  phase: string,
  opts: {
    labels?: Record<string, string>;
    state?: V1ContainerState;
    conditions?: Partial<V1PodCondition>[];
    deleting?: boolean;
    reason?: string;
  } = {},
): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'fairway-aurora',
      labels: opts.labels ?? {},
      ...(opts.deleting ? { deletionTimestamp: new Date('2024-01-01T00:00:00Z') } : {}),
    },
    spec: { containers: [{ name: 'main', image: 'x' }], nodeName: 'n0-0' },
    status: {
      phase,
      ...(opts.reason ? { reason: opts.reason } : {}),
      conditions: (opts.conditions ?? []).map((c) => ({ type: 'PodScheduled', status: 'True', ...c })),
      ...(opts.state
        ? {
            containerStatuses: [
              {
                name: 'main',
                image: 'x',
                imageID: '',
                ready: phase === 'Running',
                restartCount: 0,
                state: opts.state,
              },
            ],
          }
        : {}),
    },
  };
}

const up = (name: string) => pod(name, 'Running', { state: { running: {} } });
const crashed = (name: string) =>
  pod(name, 'Failed', { state: { terminated: { exitCode: 1, reason: 'Error', message: 'loss is NaN' } } });
const evicted = (name: string) =>
  pod(name, 'Failed', {
    conditions: [
      {
        type: 'DisruptionTarget',
        status: 'True',
        reason: 'EvictionByEvictionAPI',
        message: 'Eviction API: evicting',
      },
    ],
  });
const condition = (type: string, reason?: string, message?: string) => ({
  type,
  status: 'True',
  lastTransitionTime: '2024-01-01T00:00:00Z',
  ...(reason ? { reason } : {}),
  ...(message ? { message } : {}),
});

function withStatus(kind: CustomWorkloadKind, status: unknown, suspended = false): any {
  const obj = wire(build(kind).obj);
  obj.status = status;
  return suspended ? mergePatch(obj, CUSTOM_WORKLOADS[kind].suspendPatch()) : obj;
}

describe('observe', () => {
  it('JobSet: Completed, Failed with the pod’s reason or its own, the deadline, running, pending', () => {
    const w = CUSTOM_WORKLOADS.JOBSET;
    const six = Array.from({ length: 6 }, (_v, i) => up(`p${i}`));
    expect(
      w.observe(withStatus('JOBSET', { conditions: [condition('Completed', 'AllJobsCompleted')] }), [], 6),
    ).toEqual({
      kind: 'succeeded',
    });
    const failed = withStatus('JOBSET', {
      conditions: [
        condition('Failed', 'ReachedMaxRestarts', 'jobset failed due to reaching max number of restarts'),
      ],
    });
    expect(w.observe(failed, [up('p0'), crashed('p1')], 6)).toEqual({
      kind: 'failed',
      reason: 'Error: container main of pod p1 exited with code 1: loss is NaN',
    });
    expect(w.observe(failed, [], 6)).toEqual({
      kind: 'failed',
      reason: 'ReachedMaxRestarts: jobset failed due to reaching max number of restarts',
    });
    const overdue = wire(build('JOBSET', kindJob('JOBSET', { maxRunMs: 60_000 })).obj);
    overdue.status = {
      conditions: [
        condition('Failed', 'FailJobSetFailurePolicyAction', 'applying FailJobSet failure policy action'),
      ],
    };
    expect(w.observe(overdue, [crashed('p1')], 6)).toEqual({
      kind: 'failed',
      reason: `DeadlineExceeded: a Job of JobSet ${NAME} ran longer than the job's maximum run time`,
    });
    expect(w.observe(withStatus('JOBSET', {}), six, 6)).toEqual({ kind: 'running' });
    expect(w.observe(withStatus('JOBSET', {}), six.slice(0, 4), 6)).toEqual({
      kind: 'pending',
      message: '4/6 pods created, 4 running',
    });
    expect(w.observe(withStatus('JOBSET', {}, true), [], 6)).toEqual({
      kind: 'pending',
      message: `Suspended: JobSet ${NAME} is suspended`,
    });
    // A failed pod with retries left is replaced by its Job: not a failure yet.
    const retrying = wire(build('JOBSET', kindJob('JOBSET', { maxRetries: 2 })).obj);
    expect(w.observe(retrying, [...six.slice(0, 5), crashed('p5')], 6).kind).toBe('pending');
    expect(w.observe(withStatus('JOBSET', {}), [...six.slice(0, 5), crashed('p5')], 6).kind).toBe('failed');
  });

  it('a disrupted pod comes first, before another pod’s failure; the controller’s deletions after a failure do not count', () => {
    for (const kind of KINDS) {
      const w = CUSTOM_WORKLOADS[kind];
      expect(w.observe(withStatus(kind, {}), [evicted('p0'), crashed('p1')], 3), kind).toEqual({
        kind: 'disrupted',
        reason: 'EvictionByEvictionAPI: Eviction API: evicting',
      });
    }
    const failed = withStatus('PYTORCH_JOB', {
      conditions: [
        condition('Failed', 'PyTorchJobFailed', 'PyTorchJob x is failed because 1 Master replica(s) failed.'),
      ],
    });
    expect(
      CUSTOM_WORKLOADS.PYTORCH_JOB.observe(failed, [pod('p1', 'Running', { deleting: true })], 4),
    ).toEqual({
      kind: 'failed',
      reason: 'PyTorchJobFailed: PyTorchJob x is failed because 1 Master replica(s) failed.',
    });
    // While it runs, a pod deleted from outside is a disruption (the operator deletes none then).
    expect(
      CUSTOM_WORKLOADS.PYTORCH_JOB.observe(
        withStatus('PYTORCH_JOB', {}),
        [pod('p1', 'Running', { deleting: true })],
        4,
      ),
    ).toEqual({ kind: 'disrupted', reason: 'DeletedFromOutside: pod p1 was deleted while its job ran' });
  });

  it('PyTorchJob: Succeeded, the deadline, Running with all pods, pending while restarting', () => {
    const w = CUSTOM_WORKLOADS.PYTORCH_JOB;
    const four = ['m', 'w0', 'w1', 'w2'].map(up);
    expect(
      w.observe(
        withStatus('PYTORCH_JOB', { conditions: [condition('Succeeded', 'PyTorchJobSucceeded')] }),
        [],
        4,
      ),
    ).toEqual({ kind: 'succeeded' });
    const overdue = withStatus('PYTORCH_JOB', {
      conditions: [
        condition(
          'Failed',
          'PyTorchJobFailed',
          `Job ${NAME} has failed because it was active longer than specified deadline`,
        ),
      ],
    });
    expect(w.observe(overdue, [], 4)).toEqual({
      kind: 'failed',
      reason: `DeadlineExceeded: Job ${NAME} has failed because it was active longer than specified deadline`,
    });
    expect(
      w.observe(
        withStatus('PYTORCH_JOB', { conditions: [condition('Running', 'PyTorchJobRunning')] }),
        four,
        4,
      ),
    ).toEqual({
      kind: 'running',
    });
    const restarting = withStatus('PYTORCH_JOB', {
      conditions: [
        condition(
          'Restarting',
          'PyTorchJobRestarting',
          'PyTorchJob x is restarting because 1 Worker replica(s) failed.',
        ),
      ],
    });
    expect(w.observe(restarting, four.slice(0, 3), 4)).toEqual({
      kind: 'pending',
      message:
        '3/4 pods created, 3 running; Restarting: PyTorchJob x is restarting because 1 Worker replica(s) failed.',
    });
    expect(w.observe(withStatus('PYTORCH_JOB', {}, true), [], 4)).toEqual({
      kind: 'pending',
      message: `Suspended: PyTorchJob ${NAME} is suspended`,
    });
  });

  it('RayJob: Complete and SUCCEEDED, Failed with its message, the deadline, running, initializing', () => {
    const w = CUSTOM_WORKLOADS.RAY_JOB;
    const three = ['head', 'w0', 'w1'].map(up);
    const st = (status: object) => withStatus('RAY_JOB', status);
    expect(w.observe(st({ jobDeploymentStatus: 'Complete', jobStatus: 'SUCCEEDED' }), [], 3)).toEqual({
      kind: 'succeeded',
    });
    expect(
      w.observe(
        st({
          jobDeploymentStatus: 'Failed',
          jobStatus: 'FAILED',
          reason: 'AppFailed',
          message: 'Job entrypoint command failed with exit code 1',
        }),
        [],
        3,
      ),
    ).toEqual({ kind: 'failed', reason: 'AppFailed: Job entrypoint command failed with exit code 1' });
    expect(w.observe(st({ jobDeploymentStatus: 'Complete', jobStatus: 'FAILED' }), [], 3)).toEqual({
      kind: 'failed',
      reason: `AppFailed: RayJob ${NAME} ended Complete with Ray job status FAILED`,
    });
    expect(
      w.observe(
        st({
          jobDeploymentStatus: 'Failed',
          reason: 'DeadlineExceeded',
          message: 'The RayJob has passed the activeDeadlineSeconds.',
        }),
        three,
        3,
      ),
    ).toEqual({
      kind: 'failed',
      reason: 'DeadlineExceeded: The RayJob has passed the activeDeadlineSeconds.',
    });
    expect(w.observe(st({ jobDeploymentStatus: 'Running', jobStatus: 'RUNNING' }), three, 3)).toEqual({
      kind: 'running',
    });
    expect(w.observe(st({ jobDeploymentStatus: 'Initializing' }), three.slice(0, 1), 3)).toEqual({
      kind: 'pending',
      message: '1/3 pods created, 1 running; RayJob Initializing',
    });
    // KubeRay deletes and replaces pods itself (a retry, a failed worker): not a disruption.
    expect(
      w.observe(
        st({ jobDeploymentStatus: 'Running' }),
        [...three, pod('old', 'Running', { deleting: true })],
        3,
      ),
    ).toEqual({
      kind: 'running',
    });
    // A failed worker is replaced by KubeRay: pending, not failed; an image that cannot be pulled fails.
    expect(
      w.observe(st({ jobDeploymentStatus: 'Running' }), [...three.slice(0, 2), crashed('w1')], 3).kind,
    ).toBe('pending');
    const noImage = pod('w1', 'Pending', {
      state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image' } },
    });
    expect(w.observe(st({ jobDeploymentStatus: 'Running' }), [...three.slice(0, 2), noImage], 3)).toEqual({
      kind: 'failed',
      reason: 'ImagePullBackOff: Back-off pulling image',
    });
  });

  it('RayCluster: running when ready with all pods, never succeeded, pending otherwise', () => {
    const w = CUSTOM_WORKLOADS.RAY_CLUSTER;
    const four = ['head', 'g0', 'g1', 'c0'].map(up);
    expect(w.observe(withStatus('RAY_CLUSTER', { state: 'ready' }), four, 4)).toEqual({ kind: 'running' });
    expect(w.observe(withStatus('RAY_CLUSTER', {}), four, 4)).toEqual({
      kind: 'pending',
      message: `RayCluster ${NAME} is not ready yet`,
    });
    expect(w.observe(withStatus('RAY_CLUSTER', { state: 'ready' }), four.slice(0, 3), 4).kind).toBe(
      'pending',
    );
    const refused = withStatus('RAY_CLUSTER', {
      conditions: [condition('RayClusterReplicaFailure', 'FailedCreateWorkerPod', 'pods "x" is forbidden')],
    });
    expect(w.observe(refused, [], 4)).toEqual({
      kind: 'pending',
      message: '0/4 pods created, 0 running; FailedCreateWorkerPod: pods "x" is forbidden',
    });
    expect(w.observe(withStatus('RAY_CLUSTER', {}, true), [], 4)).toEqual({
      kind: 'pending',
      message: `Suspended: RayCluster ${NAME} is suspended`,
    });
  });

  it('a fresh object with no pods yet has not ended', () => {
    for (const kind of KINDS) {
      const seen = CUSTOM_WORKLOADS[kind].observe(wire(build(kind).obj), [], 0).kind;
      expect(['running', 'pending'], kind).toContain(seen);
    }
  });
});

// --- submit-time rules and pod positions --------------------------------------------------------

describe('problems', () => {
  const sets = (...s: [string, number, number?][]) =>
    s.map(([name, count, gpu]) => ({ name, count, perPod: { gpu } }));
  const cmd = { command: ['python', 'run.py'] };

  it('what each kind takes passes', () => {
    for (const kind of KINDS)
      expect(
        CUSTOM_WORKLOADS[kind].problems(
          SHAPES[kind].map((s) => ({ name: s.name, count: s.count, perPod: { gpu: s.gpu } })),
          kind === 'RAY_CLUSTER' ? {} : cmd,
        ),
        kind,
      ).toBeNull();
  });

  it('a JobSet without pods', () => {
    expect(CUSTOM_WORKLOADS.JOBSET.problems(sets(['a', 0]), null)).toBe('a JOBSET needs at least one pod');
    expect(CUSTOM_WORKLOADS.JOBSET.problems(sets(['a', 2]), null)).toBeNull();
  });

  it('a PyTorchJob without master, with a master of 0 or 2 pods, another pod set, uneven GPUs', () => {
    const p = (s: ReturnType<typeof sets>) => CUSTOM_WORKLOADS.PYTORCH_JOB.problems(s, cmd);
    expect(p(sets(['worker', 4, 8]))).toMatch(/needs a pod set "master"/);
    expect(p(sets(['master', 0, 8], ['worker', 4, 8]))).toMatch(/exactly 1 pod \(got 0\)/);
    expect(p(sets(['master', 2, 8]))).toMatch(/exactly 1 pod \(got 2\)/);
    expect(p(sets(['master', 1, 8], ['launcher', 1]))).toMatch(/"launcher" is neither/);
    expect(p(sets(['master', 1, 8], ['worker', 2, 4]))).toMatch(/same GPUs per pod \(got 8 and 4\)/);
    expect(p(sets(['master', 1, 0], ['worker', 2, 4]))).toBeNull();
    expect(p(sets(['master', 1, 8]))).toBeNull();
  });

  it('Ray: two heads, no head, a head of 0 pods; a RayJob without command; a RayCluster with one or no image', () => {
    for (const kind of ['RAY_JOB', 'RAY_CLUSTER'] as const) {
      const p = (s: ReturnType<typeof sets>) =>
        CUSTOM_WORKLOADS[kind].problems(s, kind === 'RAY_JOB' ? cmd : {});
      expect(p(sets(['head', 1], ['head', 1]))).toBe(`a ${kind} has one "head" pod set, not 2`);
      expect(p(sets(['workers', 2, 8]))).toMatch(/needs a pod set "head"/);
      expect(p(sets(['head', 0], ['workers', 2, 8]))).toMatch(/exactly 1 pod \(got 0\)/);
      expect(p(sets(['head', 1], ['workers', 0, 8]))).toBeNull();
    }
    const rayJob = CUSTOM_WORKLOADS.RAY_JOB;
    expect(rayJob.problems(sets(['head', 1]), { command: [] })).toMatch(/needs a command/);
    expect(rayJob.problems(sets(['head', 1]), null)).toMatch(/needs a command/);
    expect(rayJob.problems(sets(['head', 1]), { args: ['python', 'x.py'] })).toBeNull();
    const cluster = CUSTOM_WORKLOADS.RAY_CLUSTER;
    expect(cluster.problems(sets(['head', 1]), null)).toMatch(/needs a container image with Ray/);
    expect(cluster.problems(sets(['head', 1]), cmd)).toMatch(/takes no command/);
  });
});

describe('podPosition', () => {
  const labelled = (labels: Record<string, string>) => pod('p', 'Pending', { labels });

  it('JobSet and PyTorchJob pods say their index; a Ray head is index 0, its workers are the caller’s', () => {
    expect(
      CUSTOM_WORKLOADS.JOBSET.podPosition(
        labelled({ [LABEL_POD_SET]: 'trainer', 'batch.kubernetes.io/job-completion-index': '3' }),
      ),
    ).toEqual({ podSet: 'trainer', index: 3 });
    expect(CUSTOM_WORKLOADS.JOBSET.podPosition(labelled({ [LABEL_POD_SET]: 'trainer' }))).toBeNull();
    expect(
      CUSTOM_WORKLOADS.PYTORCH_JOB.podPosition(
        labelled({ [LABEL_POD_SET]: 'worker', 'training.kubeflow.org/replica-index': '2' }),
      ),
    ).toEqual({ podSet: 'worker', index: 2 });
    for (const kind of ['RAY_JOB', 'RAY_CLUSTER'] as const) {
      const w = CUSTOM_WORKLOADS[kind];
      expect(w.podPosition(labelled({ [LABEL_POD_SET]: 'head', 'ray.io/node-type': 'head' }))).toEqual({
        podSet: 'head',
        index: 0,
      });
      expect(
        w.podPosition(labelled({ [LABEL_POD_SET]: 'gpu-workers', 'ray.io/node-type': 'worker' })),
      ).toBeNull();
    }
  });
});
