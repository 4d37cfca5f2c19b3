// A job as a KubeRay RayJob or an open-ended RayCluster (ray.io/v1), as Kueue runs them
// (pkg/controller/jobs/rayjob, raycluster): pod set "head" is the head group (1 pod), every other pod
// set a worker group of fixed size (replicas = minReplicas = maxReplicas, no autoscaling: what was
// admitted is what runs). KubeRay runs `ray start` in every pod, so the templates' container has no
// command; a RayJob's command is its entrypoint. Names: KubeRay allows 47 characters for a RayJob
// (its RayCluster is `<rayjob>-<5 random>`, that cluster's head Service `<cluster>-head-svc`) and 53
// for a RayCluster, and cuts pod names itself; `fw-<uuid>` is 39. Worker group names become the
// pods' `ray.io/group` label value.
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import type { BackendJob } from '../port.js';
import type { PodSetTemplate } from './job-objects.js';
import { LABEL_POD_SET } from './naming.js';
import { containerOf } from './pod-spec.js';
import type {
  CustomWorkloadKind,
  KindParts,
  Placement,
  PodTemplate,
  SubmittedContainer,
  SubmittedPodSet,
} from './workload-kinds.js';

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

interface WorkerGroup {
  groupName: string;
  template?: PodTemplate;
}

interface ClusterSpec {
  headGroupSpec?: { template?: PodTemplate };
  workerGroupSpecs?: WorkerGroup[];
}

interface RayJobObject extends KubernetesObject {
  spec?: { suspend?: boolean; rayClusterSpec?: ClusterSpec };
  status?: { jobDeploymentStatus?: string; jobStatus?: string; reason?: string; message?: string };
}

interface RayClusterObject extends KubernetesObject {
  spec?: ClusterSpec & { suspend?: boolean };
  status?: { state?: string; reason?: string; conditions?: Condition[] };
}

const HEAD = 'head';
const NODE_TYPE = 'ray.io/node-type';
const DNS_1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const MAX_LABEL = 63;

const RAY_COMMON = {
  group: 'ray.io',
  version: 'v1',
  containerName: 'ray',
  // KubeRay makes a resumed run's pods (a RayJob's whole RayCluster) from the templates anew.
  mutable: ['nodeSelector', 'tolerations', 'schedulingGates', 'affinity'],
  isSuspended: (obj: KubernetesObject) => (obj as RayJobObject | RayClusterObject).spec?.suspend === true,
  suspendSpec: () => ({ suspend: true }),
  podPosition(pod: V1Pod) {
    const podSet = pod.metadata?.labels?.[LABEL_POD_SET];
    // Workers of a group are alike to KubeRay (random names, no index): the caller assigns their nodes.
    return podSet && pod.metadata?.labels?.[NODE_TYPE] === HEAD ? { podSet, index: 0 } : null;
  },
} as const;

export const RAY_JOB: KindParts = {
  ...RAY_COMMON,
  kind: 'RAY_JOB',
  crdKind: 'RayJob',
  plural: 'rayjobs',
  problems: rayProblems('RAY_JOB'),
  spec(job, templates) {
    const container = containerOf(job);
    return {
      entrypoint: shellJoin([...(container?.command ?? []), ...(container?.args ?? [])]),
      // The operator submits the entrypoint to the head's dashboard: no submitter pod outside the
      // admission (K8sJobMode's), and no extra container in the head pod (SidecarMode's, which Pod
      // Security "restricted" refuses: KubeRay gives it no security context).
      submissionMode: 'HTTPMode',
      // A finished job's cluster goes at once: its pods would hold their GPUs while it stays.
      shutdownAfterJobFinishes: true,
      ttlSecondsAfterFinished: 0,
      backoffLimit: job.maxRetries ?? 0,
      ...(job.maxRunMs !== undefined
        ? { activeDeadlineSeconds: Math.max(1, Math.ceil(job.maxRunMs / 1000)) }
        : {}),
      suspend: false,
      rayClusterSpec: clusterSpec(job, templates),
    };
  },
  templates: (obj) => clusterTemplates((obj as RayJobObject).spec?.rayClusterSpec),
  resumeSpec: (existing, desired, place) => ({
    suspend: false,
    rayClusterSpec: resumeCluster(
      (existing as RayJobObject).spec?.rayClusterSpec,
      (desired as RayJobObject).spec?.rayClusterSpec,
      place,
    ),
  }),
  verdict(obj) {
    const rayJob = obj as RayJobObject;
    const name = rayJob.metadata?.name ?? '';
    const status = rayJob.status ?? {};
    const deployment = status.jobDeploymentStatus ?? '';
    const complete = deployment === 'Complete';
    const succeeded = complete && status.jobStatus === 'SUCCEEDED';
    const failed = deployment === 'Failed' || (complete && !succeeded);
    return {
      succeeded,
      failed: failed
        ? {
            reason: status.reason || (status.jobStatus === 'FAILED' ? 'AppFailed' : 'Failed'),
            message:
              status.message ||
              `RayJob ${name} ended ${deployment} with Ray job status ${status.jobStatus || 'unknown'}`,
          }
        : null,
      suspended: rayJob.spec?.suspend ? `RayJob ${name} is suspended` : null,
      waiting:
        deployment && deployment !== 'Running'
          ? `RayJob ${deployment}${status.message ? `: ${status.message}` : ''}`
          : null,
      notReady: null,
      retries: 1,
      deletesPods: true,
    };
  },
};

export const RAY_CLUSTER: KindParts = {
  ...RAY_COMMON,
  kind: 'RAY_CLUSTER',
  crdKind: 'RayCluster',
  plural: 'rayclusters',
  problems: rayProblems('RAY_CLUSTER'),
  spec: (job, templates) => ({ suspend: false, ...clusterSpec(job, templates) }),
  templates: (obj) => clusterTemplates((obj as RayClusterObject).spec),
  resumeSpec: (existing, desired, place) => ({
    suspend: false,
    ...resumeCluster((existing as RayClusterObject).spec, (desired as RayClusterObject).spec, place),
  }),
  verdict(obj) {
    const cluster = obj as RayClusterObject;
    const name = cluster.metadata?.name ?? '';
    const status = cluster.status ?? {};
    const replicaFailure = (status.conditions ?? []).find(
      (c) => c.type === 'RayClusterReplicaFailure' && c.status === 'True',
    );
    return {
      // Open-ended: it runs until it is cancelled or its maximum run time. KubeRay's `failed` state is
      // a reconcile error it retries (a pod it could not create), said while pending, not an end.
      succeeded: false,
      failed: null,
      suspended: cluster.spec?.suspend ? `RayCluster ${name} is suspended` : null,
      waiting: replicaFailure
        ? `${replicaFailure.reason ?? 'RayClusterReplicaFailure'}: ${replicaFailure.message ?? ''}`
        : status.state === 'failed' && status.reason
          ? `RayCluster ${name} failed: ${status.reason}`
          : null,
      notReady:
        status.state === 'ready'
          ? null
          : `RayCluster ${name} is not ready yet${status.state ? ` (state ${status.state})` : ''}`,
      retries: 1,
      deletesPods: true,
    };
  },
};

function rayProblems(kind: Extract<CustomWorkloadKind, 'RAY_JOB' | 'RAY_CLUSTER'>) {
  return (podSets: SubmittedPodSet[], container: SubmittedContainer | null): string | null => {
    const heads = podSets.filter((p) => p.name === HEAD);
    if (heads.length === 0)
      return `a ${kind} needs a pod set "head" (the Ray head: 1 pod); its other pod sets are its worker groups`;
    if (heads.length > 1) return `a ${kind} has one "head" pod set, not ${heads.length}`;
    if (heads[0]!.count !== 1)
      return `the "head" pod set of a ${kind} has exactly 1 pod (got ${heads[0]!.count}); put the others in worker pod sets`;
    const argv = [...(container?.command ?? []), ...(container?.args ?? [])];
    if (kind === 'RAY_JOB' && argv.length === 0)
      return 'a RAY_JOB needs a command: it is the Ray job’s entrypoint, submitted to the cluster and run on its head';
    if (kind === 'RAY_CLUSTER' && !container)
      return 'a RAY_CLUSTER needs a container image with Ray: KubeRay runs `ray start` in every pod';
    if (kind === 'RAY_CLUSTER' && argv.length > 0)
      return 'a RAY_CLUSTER takes no command: KubeRay runs `ray start` in every pod (submit work to the cluster, or run it as a RAY_JOB)';
    return null;
  };
}

function clusterSpec(job: BackendJob, templates: PodSetTemplate[]): Record<string, unknown> {
  const head = templates.find((t) => t.podSet.name === HEAD);
  if (!head) throw new Error(`job ${job.jobId}: a Ray job has no admitted "head" pod set`);
  const workers = templates.filter((t) => t !== head);
  const names = groupNames(workers);
  return {
    headGroupSpec: { rayStartParams: {}, template: rayTemplate(head) },
    workerGroupSpecs: workers.map((t, i) => ({
      groupName: names[i]!,
      replicas: t.admitted.count,
      minReplicas: t.admitted.count,
      maxReplicas: t.admitted.count,
      rayStartParams: {},
      template: rayTemplate(t),
    })),
  };
}

/** The pod set's name when it is a DNS label (a valid label value), `ps<index>` otherwise or when repeated. */
function groupNames(workers: PodSetTemplate[]): string[] {
  const fits = (n: string) => n.length <= MAX_LABEL && DNS_1123_LABEL.test(n) && n !== HEAD;
  const chosen = workers.map((t) => (fits(t.podSet.name) ? t.podSet.name : `ps${t.index}`));
  return new Set(chosen).size === chosen.length ? chosen : workers.map((t) => `ps${t.index}`);
}

/** KubeRay puts its `ray start` command in the container (and would append a command of ours after it). */
function rayTemplate(t: PodSetTemplate): PodTemplate {
  const out = structuredClone(t.template);
  const main = out.spec.containers[0];
  if (main) {
    delete main.command;
    delete main.args;
  }
  return out;
}

function clusterTemplates(spec: ClusterSpec | undefined): PodTemplate[] {
  const head = spec?.headGroupSpec?.template;
  const workers = (spec?.workerGroupSpecs ?? []).flatMap((w) => (w.template ? [w.template] : []));
  return [...(head ? [head] : []), ...workers];
}

function resumeCluster(
  before: ClusterSpec | undefined,
  after: ClusterSpec | undefined,
  place: Placement,
): Record<string, unknown> {
  const wanted = after?.workerGroupSpecs ?? [];
  // The list goes whole: what the cluster holds (with its defaults), only the placement changed.
  const base = before?.workerGroupSpecs?.length ? before.workerGroupSpecs : wanted;
  return {
    headGroupSpec: { template: place.patch(before?.headGroupSpec?.template, after?.headGroupSpec?.template) },
    ...(base.length
      ? {
          workerGroupSpecs: base.map((w) => ({
            ...structuredClone(w),
            template: place.apply(w.template, wanted.find((x) => x.groupName === w.groupName)?.template),
          })),
        }
      : {}),
  };
}

/** argv as one shell line (the entrypoint runs in a shell): words quoted where the shell would split them. */
export function shellJoin(argv: readonly string[]): string {
  return argv
    .map((a) => (/^[A-Za-z0-9_@%+=:,./-]+$/.test(a) ? a : `'${a.replaceAll("'", `'\\''`)}'`))
    .join(' ');
}
