// Shared by the workload-kinds tests: a job of each kind with its shapes and containers, the build
// context, and each CRD's openAPIV3Schema as an Ajv validator (strict: unknown fields refused).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv, type ValidateFunction } from 'ajv';
import { expect } from 'vitest';
import { parse } from 'yaml';
import { podSetTemplates } from '../../../src/backends/kubernetes/job-objects.js';
import type { JobBuildContext } from '../../../src/backends/kubernetes/pod-spec.js';
import {
  type FlavorMapping,
  type KubernetesSettings,
  parseKubernetesSettings,
} from '../../../src/backends/kubernetes/settings.js';
import type { KubeTenant } from '../../../src/backends/kubernetes/tenant-objects.js';
import {
  CUSTOM_WORKLOADS,
  type CustomWorkloadKind,
} from '../../../src/backends/kubernetes/workload-kinds.js';
import type { BackendJob } from '../../../src/backends/port.js';
import type { PodSetAdmission, PodSetSpec } from '../../../src/core/scheduling/types.js';
import { crdDirectory } from '../../helpers/crd-dir.js';

export const JOB_ID = '0b9d6a2e-3f4c-4e1a-9b7d-2c5e8f1a6b3d';
export const NAME = `fw-${JOB_ID}`;
export const CRDS = crdDirectory();
export const KINDS: CustomWorkloadKind[] = ['JOBSET', 'PYTORCH_JOB', 'RAY_JOB', 'RAY_CLUSTER'];

export const flavors = [{ flavor: 'h100', resource: 'nvidia.com/gpu', gpuProduct: 'NVIDIA-H100-80GB-HBM3' }];
export const settings = parseKubernetesSettings({ flavors });
export const pinned = parseKubernetesSettings({ flavors, exactPlacement: false, pinToNodes: true });
export const tenant: KubeTenant = {
  id: 'tenant-1',
  slug: 'aurora',
  isolationLevel: 'GUARANTEED',
  egressAllowlist: null,
  maxResources: { 'nvidia.com/gpu': 64 },
};

export function context(nodePools: Record<string, string>): JobBuildContext {
  return {
    namespace: 'fairway-aurora',
    tenant,
    flavors: new Map<string, FlavorMapping>(settings.flavors.map((m) => [m.flavor, m])),
    nodePools: new Map(Object.entries(nodePools)),
  };
}
/** Admission A's nodes (n…) are in pool-a; admission B's (m…) in no pool. */
export const ctx = context(
  Object.fromEntries(Array.from({ length: 40 }, (_v, i) => [`n${i >> 3}-${i & 7}`, 'pool-a'])),
);

export interface Sets {
  name: string;
  count: number;
  gpu: number;
}

export const SHAPES: Record<CustomWorkloadKind, Sets[]> = {
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

export const CONTAINERS: Record<CustomWorkloadKind, Record<string, unknown>> = {
  JOBSET: { image: 'registry.example.com/train:1', command: ['torchrun', 'train.py'] },
  PYTORCH_JOB: { image: 'registry.example.com/train:1', command: ['torchrun', 'train.py'] },
  RAY_JOB: {
    image: 'rayproject/ray:2.40.0-gpu',
    command: ['python', 'train.py'],
    args: ['--name', "it's a run", '--lr=0.1'],
  },
  RAY_CLUSTER: { image: 'rayproject/ray:2.40.0-gpu' },
};

export function job(
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

export function kindJob(kind: CustomWorkloadKind, over: Partial<BackendJob> = {}): BackendJob {
  return job(SHAPES[kind], { workload: { container: CONTAINERS[kind] }, workloadKind: kind, ...over });
}

export function build(
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
export const wire = (o: unknown): any => JSON.parse(JSON.stringify(o));

// --- the CRDs' schemas, for ajv ---------------------------------------------------------------

export const CRD_FILES: Record<CustomWorkloadKind, string> = {
  JOBSET: 'jobset.x-k8s.io_jobsets.yaml',
  PYTORCH_JOB: 'kubeflow.org_pytorchjobs.yaml',
  RAY_JOB: 'ray.io_rayjobs.yaml',
  RAY_CLUSTER: 'ray.io_rayclusters.yaml',
};

export const KEEP_AS_IS = new Set(['default', 'enum', 'example', 'required']);

/**
 * A structural schema as ajv reads it. The Kubernetes extensions go: int-or-string becomes an anyOf
 * (controller-gen writes one already), an embedded resource declares apiVersion / kind / metadata,
 * list and map types and CEL rules (none of which the objects here touch) are dropped. An object
 * schema with properties refuses other fields (the API server would prune them silently, or refuse
 * them under fieldValidation=Strict: either way a typo), unless it preserves unknown fields.
 */
export function toAjv(s: any): any {
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

export const ajv = new Ajv({ strict: false, allErrors: true, validateFormats: false });
export const validators = new Map<CustomWorkloadKind, ValidateFunction>();

export function validatorOf(kind: CustomWorkloadKind): ValidateFunction {
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

export function schemaErrors(kind: CustomWorkloadKind, obj: unknown): string[] {
  const validate = validatorOf(kind);
  if (validate(wire(obj))) return [];
  return (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
}

/** RFC 7386, as the API server applies a merge patch to a custom resource. */
export function mergePatch(target: any, patch: any): any {
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch)) return structuredClone(patch);
  const out = typeof target === 'object' && target !== null && !Array.isArray(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else out[key] = mergePatch(out[key], value);
  }
  return out;
}
