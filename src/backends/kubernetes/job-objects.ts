// batch/v1 Jobs for an admitted Fairway job: one per pod set, named after the job id so a replayed
// create meets AlreadyExists. Pods satisfy Pod Security "restricted"; placement follows the
// admission (flavor → resource name, tolerations, nodeSelector, optional pinning to its nodes).
import type { V1Job, V1PodSpec } from '@kubernetes/client-node';
import type { PodSetAdmission, PodSetSpec } from '../../core/scheduling/index.js';
import type { BackendJob } from '../port.js';
import { headlessService, type Rendezvous, rendezvousOf } from './distributed.js';
import {
  ANNOTATION_ADMISSION,
  ANNOTATION_CHECKPOINT_INTERVAL,
  ANNOTATION_JOB_NAME,
  ANNOTATION_LATENCY_SENSITIVE,
  ANNOTATION_RESUMABLE,
  ANNOTATION_WORKLOAD_TYPE,
  kubeJobName,
  LABEL_JOB_ID,
  LABEL_POD_SET,
  LABEL_QUEUE,
  labelValue,
} from './naming.js';
import { containerOf, type JobBuildContext, podSpec, type WorkloadContainer } from './pod-spec.js';
import type { KubernetesSettings } from './settings.js';
import { tenantLabels } from './tenant-objects.js';

export { deviceUnits, type JobBuildContext, PLACEHOLDER_IMAGE } from './pod-spec.js';

/** One batch/v1 Job per pod set of an admitted job; pod sets admitted with 0 pods get none. */
export function jobObjects(job: BackendJob, ctx: JobBuildContext, s: KubernetesSettings): V1Job[] {
  const container = containerOf(job);
  const rendezvous = rendezvousOf(job, (i) => kubeJobName(job.jobId, i));
  const jobs: V1Job[] = [];
  job.podSets.forEach((podSet, index) => {
    const admitted = job.admission.podSets.find((a) => a.name === podSet.name);
    if (!admitted) throw new Error(`job ${job.jobId}: pod set "${podSet.name}" has no admission`);
    if (admitted.count < 1) return;
    jobs.push(jobForPodSet(job, index, podSet, admitted, container, rendezvous, ctx, s));
  });
  if (jobs.length === 0) throw new Error(`job ${job.jobId}: the admission has no pods`);
  return jobs;
}

/** One pod set's pod template, for a workload controller's object (JobSet, PyTorchJob, Ray). */
export interface PodSetTemplate {
  index: number;
  podSet: PodSetSpec;
  admitted: PodSetAdmission;
  /** Labels and annotations Fairway puts on the object itself (the pod template has them too). */
  labels: Record<string, string>;
  annotations: Record<string, string>;
  template: {
    metadata: { labels: Record<string, string>; annotations: Record<string, string> };
    spec: V1PodSpec;
  };
}

/**
 * The pod templates of an admitted job's pod sets (those admitted with pods), as for its Jobs:
 * placement, resources, security context, checkpoint and probe annotations, Fairway's labels; no
 * rendezvous environment (the workload's controller gives its own). `containerName` names the main
 * container (a PyTorchJob's operator looks for "pytorch").
 */
export function podSetTemplates(
  job: BackendJob,
  ctx: JobBuildContext,
  s: KubernetesSettings,
  containerName = 'main',
): PodSetTemplate[] {
  const container = containerOf(job);
  const out: PodSetTemplate[] = [];
  job.podSets.forEach((podSet, index) => {
    const admitted = job.admission.podSets.find((a) => a.name === podSet.name);
    if (!admitted) throw new Error(`job ${job.jobId}: pod set "${podSet.name}" has no admission`);
    if (admitted.count < 1) return;
    const { labels, annotations } = objectMeta(job, podSet, ctx);
    const spec = podSpec(job, index, podSet, admitted, container, null, ctx, s);
    spec.containers = spec.containers.map((c, i) => (i === 0 ? { ...c, name: containerName } : c));
    out.push({
      index,
      podSet,
      admitted,
      labels,
      annotations,
      template: { metadata: { labels: { ...labels }, annotations: { ...annotations } }, spec },
    });
  });
  if (out.length === 0) throw new Error(`job ${job.jobId}: the admission has no pods`);
  return out;
}

function objectMeta(job: BackendJob, podSet: PodSetSpec, ctx: JobBuildContext) {
  const labels = {
    ...tenantLabels(ctx.tenant),
    [LABEL_JOB_ID]: labelValue(job.jobId),
    [LABEL_QUEUE]: labelValue(job.queue),
    [LABEL_POD_SET]: labelValue(podSet.name),
  };
  const annotations = {
    [ANNOTATION_ADMISSION]: String(job.admission.at),
    [ANNOTATION_JOB_NAME]: job.name,
    ...checkpointAnnotations(job),
    ...probeAnnotations(job),
  };
  return { labels, annotations };
}

/** The headless Service through which a multi-pod job's pods find each other; null for one pod. */
export function jobService(job: BackendJob, ctx: JobBuildContext): ReturnType<typeof headlessService> | null {
  const rendezvous = rendezvousOf(job, (i) => kubeJobName(job.jobId, i));
  if (!rendezvous) return null;
  const labels = { ...tenantLabels(ctx.tenant), [LABEL_JOB_ID]: labelValue(job.jobId) };
  return headlessService(job, rendezvous, ctx.namespace, labels);
}

/**
 * Disruptions (eviction, drain, a lost node, the cluster's own preemption) mark the pod
 * DisruptionTarget: they do not count against the retries, so the Job controller never fails
 * the Job for them; the backend sees the condition and requeues the job instead.
 */
const POD_FAILURE_POLICY = {
  rules: [{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] }],
};

function jobForPodSet(
  job: BackendJob,
  index: number,
  podSet: PodSetSpec,
  admitted: PodSetAdmission,
  container: WorkloadContainer | null,
  rendezvous: Rendezvous | null,
  ctx: JobBuildContext,
  s: KubernetesSettings,
): V1Job {
  const { labels, annotations } = objectMeta(job, podSet, ctx);
  const count = admitted.count;
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: kubeJobName(job.jobId, index), namespace: ctx.namespace, labels, annotations },
    spec: {
      // A gang: all pods run together; Indexed gives each a stable index (JOB_COMPLETION_INDEX, hostname).
      parallelism: count,
      completions: count,
      ...(count > 1 || rendezvous ? { completionMode: 'Indexed' } : {}),
      // The job's own failures are retried in place up to its maxRetries; disruptions never count.
      backoffLimit: job.maxRetries ?? 0,
      podFailurePolicy: POD_FAILURE_POLICY,
      suspend: false,
      ttlSecondsAfterFinished: s.finishedJobTtlSeconds,
      ...(job.maxRunMs !== undefined
        ? { activeDeadlineSeconds: Math.max(1, Math.ceil(job.maxRunMs / 1000)) }
        : {}),
      template: {
        metadata: { labels: { ...labels }, annotations: { ...annotations } },
        spec: podSpec(job, index, podSet, admitted, container, rendezvous, ctx, s),
      },
    },
  };
}

/**
 * The declared checkpointing, for the workload to read: a preemption suspends the Job (its pods get
 * SIGTERM and their grace period) and readmission resumes it, so a resumable workload saves on
 * SIGTERM and every workload restarts from its own latest checkpoint. Nothing when none was declared
 * (the pod template, and so its workload hash, is unchanged for such jobs).
 */
function checkpointAnnotations(job: BackendJob): Record<string, string> {
  const c = job.checkpoint;
  return {
    ...(c?.intervalMs ? { [ANNOTATION_CHECKPOINT_INTERVAL]: String(Math.round(c.intervalMs / 1000)) } : {}),
    ...(c?.resumable ? { [ANNOTATION_RESUMABLE]: 'true' } : {}),
  };
}

/** The declared probe signals, for the workload and the cluster's tooling; nothing when undeclared (the pod
 * template is unchanged).
 */
function probeAnnotations(job: BackendJob): Record<string, string> {
  return {
    ...(job.workloadType ? { [ANNOTATION_WORKLOAD_TYPE]: job.workloadType } : {}),
    ...(job.latencySensitive ? { [ANNOTATION_LATENCY_SENSITIVE]: 'true' } : {}),
  };
}
