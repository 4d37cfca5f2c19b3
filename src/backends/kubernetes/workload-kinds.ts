// A job run by a workload controller its team already runs: a JobSet, a Kubeflow PyTorchJob, a
// KubeRay RayJob or RayCluster, each driven the way Kueue integrates it (pkg/controller/jobs/…):
// one custom object per admission, `fw-<job id>`, whose pod templates are the pod sets' own
// (job-objects.ts podSetTemplates: placement, resources, security context, Fairway's labels),
// suspended on preemption, given the new placement while suspended and resumed on readmission.
// Pure: custom-runs.ts makes the calls. What differs by kind lives in workload-{jobset,pytorch,ray}.ts;
// those import only types from here, so no module cycle.
import { createHash } from 'node:crypto';
import type { KubernetesObject, V1Job, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import type { BackendJob, WorkloadKind } from '../port.js';
import type { PodSetTemplate } from './job-objects.js';
import { ANNOTATION_WORKLOAD } from './job-updates.js';
import { ANNOTATION_ADMISSION, LABEL_POD_SET } from './naming.js';
import type { KubernetesSettings } from './settings.js';
import { disruptionOf, observeRun, type RunObservation } from './status.js';
import { JOBSET } from './workload-jobset.js';
import { PYTORCH_JOB } from './workload-pytorch.js';
import { RAY_CLUSTER, RAY_JOB } from './workload-ray.js';

export type { WorkloadKind } from '../port.js';
export type CustomWorkloadKind = Exclude<WorkloadKind, 'BATCH'>;

/** A pod set as submitted (before admission). */
export interface SubmittedPodSet {
  name: string;
  count: number;
  perPod: { gpu?: number };
}

/** The submitted container's command, as far as the kinds care. */
export interface SubmittedContainer {
  command?: string[];
  args?: string[];
}

/** A pod template as the controllers' CRDs embed it. */
export interface PodTemplate {
  metadata?: { labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: V1PodSpec;
}

export type CustomObject = KubernetesObject & {
  metadata: { name: string; namespace: string };
  spec: Record<string, unknown>;
};

export interface CustomWorkload {
  kind: CustomWorkloadKind;
  group: string;
  version: string;
  apiVersion: string;
  crdKind: string;
  plural: string;
  /** CRD name for messages, e.g. 'jobsets.jobset.x-k8s.io'. */
  crdName: string;
  /** The pod-set rules of this kind, checked at submit: a problem in words for the submitter, or null. */
  problems(podSets: SubmittedPodSet[], container: SubmittedContainer | null): string | null;
  /** The object for an admission (`fw-<jobId>`), from the pod sets' templates, not suspended. */
  build(job: BackendJob, templates: PodSetTemplate[], namespace: string, s: KubernetesSettings): CustomObject;
  /** The main container's name in the pod templates, for podSetTemplates. */
  containerName: string;
  isSuspended(obj: KubernetesObject): boolean;
  /** Merge patch that suspends the object. */
  suspendPatch(): Record<string, unknown>;
  /**
   * Merge patch that gives a suspended object the desired admission's placement (its pod templates'
   * nodeSelector, tolerations, schedulingGates, affinity where the controller allows it; the admission
   * annotation on object and templates) and resumes it. `existing` is what the cluster holds: a list of
   * templates (JobSet replicatedJobs, Ray workerGroupSpecs) is sent whole, built from it, so only the
   * placement differs from what the controller already has.
   */
  resumePatch(
    existing: KubernetesObject,
    desired: KubernetesObject,
    admissionAt: string,
  ): Record<string, unknown>;
  /**
   * Whether `resumePatch` can bring `existing` to `desired`: everything the controller keeps while
   * suspended (containers, pod counts, affinity for a JobSet…) is what `desired` was built with. False:
   * the object is deleted and created anew (as job-updates.ts does for a Job).
   */
  canResume(existing: KubernetesObject, desired: KubernetesObject): boolean;
  /** The object's status and pods → a run state; pods' disruptions come first, as for Jobs (status.ts). */
  observe(obj: KubernetesObject, pods: readonly V1Pod[], expectedPods: number): RunObservation;
  /**
   * A pod's pod set (its `fairway.dev/pod-set` label: labelValue of the pod set's name, as
   * placement-gates.ts compares) and index within it, from the controller's labels; null when the pod
   * does not say (a Ray worker: the caller assigns).
   */
  podPosition(pod: V1Pod): { podSet: string; index: number } | null;
  /** The object's pod templates, in pod-set order (references into `obj`). */
  podTemplates(obj: KubernetesObject): PodTemplate[];
}

/** Pod template fields a controller lets change on a suspended object (labels and annotations aside). */
export type PlacementField = 'nodeSelector' | 'tolerations' | 'schedulingGates' | 'affinity';

/** Moves pod templates to a new admission's placement (what `resumePatch` gives a kind). */
export interface Placement {
  /** The merge patch of a template reached through objects and map keys. */
  patch(before: PodTemplate | undefined, after: PodTemplate | undefined): Record<string, unknown>;
  /** A template inside a list (a merge patch replaces a list whole): `before` with `after`'s placement. */
  apply(before: PodTemplate | undefined, after: PodTemplate | undefined): PodTemplate;
}

/** What a controller's status says of the run, for `observe`. */
export interface ControllerVerdict {
  succeeded: boolean;
  /** reason 'DeadlineExceeded' when the job's maximum run time stopped it. */
  failed: { reason: string; message: string } | null;
  /** Set while the object is suspended: what to say. */
  suspended: string | null;
  /** The controller's own word on a run not yet running, added to the pods' message. */
  waiting: string | null;
  /** Set while the controller does not yet call the run ready although its pods run (RayCluster). */
  notReady: string | null;
  /** Retries left in place (or pods the controller replaces itself): a failed pod alone is no failure. */
  retries: number;
  /** The controller deletes and replaces pods of a live run itself (KubeRay): a deletion is no disruption. */
  deletesPods: boolean;
}

/** What a kind file gives; the rest of a CustomWorkload is common. */
export interface KindParts {
  kind: CustomWorkloadKind;
  group: string;
  version: string;
  crdKind: string;
  plural: string;
  containerName: string;
  mutable: readonly PlacementField[];
  problems: CustomWorkload['problems'];
  spec(
    job: BackendJob,
    templates: PodSetTemplate[],
    name: string,
    s: KubernetesSettings,
  ): Record<string, unknown>;
  templates(obj: KubernetesObject): PodTemplate[];
  isSuspended(obj: KubernetesObject): boolean;
  /** The spec part of the suspending merge patch. */
  suspendSpec(): Record<string, unknown>;
  resumeSpec(
    existing: KubernetesObject,
    desired: KubernetesObject,
    place: Placement,
  ): Record<string, unknown>;
  verdict(obj: KubernetesObject): ControllerVerdict;
  podPosition: CustomWorkload['podPosition'];
}

const MAX_TEXT = 500;
const DNS_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
/** `fw-` and a 36-character uuid: the name every controller's derived names were checked against. */
const MAX_OBJECT_NAME = 39;

/**
 * The object's name: `fw-<jobId>` (39 characters for a uuid), what the controllers' derived names
 * (JobSet Jobs and pods, PyTorchJob pods and Services, a RayJob's RayCluster and its head Service)
 * were sized for. An id that does not fit is replaced by a hash of it, so the name stays as long.
 */
export function workloadObjectName(jobId: string): string {
  const plain = `fw-${jobId.toLowerCase()}`;
  if (plain.length <= MAX_OBJECT_NAME && DNS_1035.test(plain)) return plain;
  return `fw-${createHash('sha256')
    .update(jobId)
    .digest('hex')
    .slice(0, MAX_OBJECT_NAME - 3)}`;
}

function workload(p: KindParts): CustomWorkload {
  const apiVersion = `${p.group}/${p.version}`;
  const hashOf = (obj: KubernetesObject) => workloadHash(p, obj);
  return {
    kind: p.kind,
    group: p.group,
    version: p.version,
    apiVersion,
    crdKind: p.crdKind,
    plural: p.plural,
    crdName: `${p.plural}.${p.group}`,
    containerName: p.containerName,
    problems: p.problems,
    build(job, templates, namespace, s) {
      if (templates.length === 0) throw new Error(`job ${job.jobId}: the admission has no pods`);
      const name = workloadObjectName(job.jobId);
      const first = templates[0]!;
      const { [LABEL_POD_SET]: _podSet, ...labels } = first.labels;
      const built: CustomObject = {
        apiVersion,
        kind: p.crdKind,
        metadata: { name, namespace, labels, annotations: { ...first.annotations } },
        spec: p.spec(job, templates, name, s),
      };
      built.metadata.annotations![ANNOTATION_WORKLOAD] = hashOf(built);
      return built;
    },
    isSuspended: p.isSuspended,
    suspendPatch: () => ({ spec: p.suspendSpec() }),
    resumePatch(existing, desired, admissionAt) {
      return {
        metadata: { annotations: { [ANNOTATION_ADMISSION]: admissionAt } },
        spec: p.resumeSpec(existing, desired, placement(p.mutable, admissionAt)),
      };
    },
    canResume: (existing, desired) =>
      existing.metadata?.annotations?.[ANNOTATION_WORKLOAD] === hashOf(desired),
    observe: (obj, pods, expectedPods) => observeWith(p.verdict(obj), pods, expectedPods),
    podPosition: p.podPosition,
    podTemplates: p.templates,
  };
}

export const CUSTOM_WORKLOADS: Record<CustomWorkloadKind, CustomWorkload> = {
  JOBSET: workload(JOBSET),
  PYTORCH_JOB: workload(PYTORCH_JOB),
  RAY_JOB: workload(RAY_JOB),
  RAY_CLUSTER: workload(RAY_CLUSTER),
};

/**
 * A hash of what a suspended object keeps: its spec with suspension and, in every pod template, the
 * metadata and the placement fields the controller lets change taken out. Computed from built objects
 * only (the API server adds defaults to what it stores), and kept as an annotation to compare later.
 */
function workloadHash(p: KindParts, obj: KubernetesObject): string {
  const copy = structuredClone(obj) as KubernetesObject & { spec?: Record<string, unknown> };
  delete copy.metadata;
  mergeInto(copy as Record<string, unknown>, { spec: p.suspendSpec() });
  for (const t of p.templates(copy)) {
    delete t.metadata;
    if (!t.spec) continue;
    for (const field of p.mutable) delete t.spec[field];
  }
  return createHash('sha256').update(JSON.stringify(copy)).digest('hex').slice(0, 16);
}

function mergeInto(target: Record<string, unknown>, patch: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(patch)) {
    const current = target[key];
    if (isPlainObject(value) && isPlainObject(current)) mergeInto(current, value);
    else target[key] = structuredClone(value);
  }
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function placement(mutable: readonly PlacementField[], admissionAt: string): Placement {
  return {
    patch(before, after) {
      const spec: Record<string, unknown> = {};
      for (const field of mutable) {
        spec[field] =
          field === 'nodeSelector' && after?.spec?.nodeSelector
            ? replacing(before?.spec?.nodeSelector, after.spec.nodeSelector)
            : (after?.spec?.[field] ?? null);
      }
      return { metadata: { annotations: { [ANNOTATION_ADMISSION]: admissionAt } }, spec };
    },
    apply(before, after) {
      const out: PodTemplate = structuredClone(before ?? after ?? {});
      out.metadata = {
        ...out.metadata,
        annotations: { ...out.metadata?.annotations, [ANNOTATION_ADMISSION]: admissionAt },
      };
      out.spec ??= { containers: [] };
      const spec = out.spec as unknown as Record<string, unknown>;
      for (const field of mutable) {
        const value = after?.spec?.[field];
        if (value === undefined) delete spec[field];
        else spec[field] = structuredClone(value);
      }
      return out;
    },
  };
}

/** Keys of `before` absent from `after` set to null: a merge patch that replaces a map. */
function replacing(
  before: Record<string, string> | undefined,
  after: Record<string, string>,
): Record<string, string | null> {
  const out: Record<string, string | null> = { ...after };
  for (const key of Object.keys(before ?? {})) if (!(key in out)) out[key] = null;
  return out;
}

/**
 * The controller's verdict and the pods, read as status.ts reads a Job and its pods: the verdict
 * stands in as one Job (Complete, or Failed with its reason), so a deadline, a disrupted pod, an
 * image that cannot be pulled, OOMKilled and the pending reasons read exactly as for a batch job.
 */
function observeWith(v: ControllerVerdict, pods: readonly V1Pod[], expectedPods: number): RunObservation {
  const seen = v.deletesPods
    ? pods.filter((p) => !p.metadata?.deletionTimestamp || disruptionOf(p, false))
    : pods;
  const standIn: V1Job = {
    metadata: { name: 'workload' },
    status: {
      conditions: v.succeeded
        ? [{ type: 'Complete', status: 'True' }]
        : v.failed
          ? [{ type: 'Failed', status: 'True', reason: v.failed.reason, message: v.failed.message }]
          : [],
    },
  };
  const result = observeRun([standIn], seen, expectedPods, { retries: v.retries });
  if (result.kind === 'running' && v.notReady) return { kind: 'pending', message: clip(v.notReady) };
  if (result.kind !== 'pending') return result;
  if (v.suspended) return { kind: 'pending', message: clip(`Suspended: ${v.suspended}`) };
  return v.waiting ? { kind: 'pending', message: clip(`${result.message}; ${v.waiting}`) } : result;
}

function clip(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= MAX_TEXT ? line : `${line.slice(0, MAX_TEXT - 1)}…`;
}
