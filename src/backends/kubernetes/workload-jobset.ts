// A job as a JobSet (jobset.x-k8s.io/v1alpha2), as Kueue runs one (pkg/controller/jobs/jobset): one
// replicatedJob per pod set, each a single Indexed Job (replicas 1) of the pod set's pods, with the
// retries, disruption policy and deadline of job-objects.ts's Jobs. The JobSet controller gives
// every pod a stable hostname under a headless Service named after the JobSet; the pods also get
// the launcher environment distributed.ts gives a batch job's pods, pointing at those hostnames.
import type { KubernetesObject, V1EnvVar, V1Pod } from '@kubernetes/client-node';
import type { BackendJob } from '../port.js';
import { type Rendezvous, rendezvousEnv, rendezvousOf } from './distributed.js';
import type { PodSetTemplate } from './job-objects.js';
import { LABEL_POD_SET } from './naming.js';
import type { KubernetesSettings } from './settings.js';
import type { ControllerVerdict, KindParts, Placement, PodTemplate } from './workload-kinds.js';

interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

interface ReplicatedJob {
  name: string;
  replicas?: number;
  template?: { spec?: { backoffLimit?: number; template?: PodTemplate } & Record<string, unknown> };
}

interface JobSetObject extends KubernetesObject {
  spec?: {
    suspend?: boolean;
    replicatedJobs?: ReplicatedJob[];
    failurePolicy?: { rules?: { name?: string; action?: string }[] };
  };
  status?: { conditions?: Condition[] };
}

const MAX_NAME = 63;
/** The random suffix of a Job's pod names, which the JobSet webhook counts in (`-abcde`). */
const POD_NAME_SUFFIX = 6;
const DNS_1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const COMPLETION_INDEX = 'batch.kubernetes.io/job-completion-index';
/**
 * The job's maximum run time is each Job's activeDeadlineSeconds; a Job failing for it fails the
 * JobSet through this, the only FailJobSet rule, so the JobSet's reason says which failure it was
 * (any other failure ends in ReachedMaxRestarts with maxRestarts 0).
 */
const DEADLINE_RULE = 'DeadlineExceeded';
const FAIL_JOBSET_REASON = 'FailJobSetFailurePolicyAction';
/** As job-objects.ts's Jobs: a disrupted pod does not count against the retries; the backend requeues. */
const POD_FAILURE_POLICY = {
  rules: [{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] }],
};

export const JOBSET: KindParts = {
  kind: 'JOBSET',
  group: 'jobset.x-k8s.io',
  version: 'v1alpha2',
  crdKind: 'JobSet',
  plural: 'jobsets',
  containerName: 'main',
  // The JobSet webhook lets a suspended JobSet's pod templates change only these (and labels and
  // annotations): affinity (pinToNodes) stays, so another node pinning needs a new JobSet.
  mutable: ['nodeSelector', 'tolerations', 'schedulingGates'],
  problems: (podSets) => (podSets.some((p) => p.count > 0) ? null : 'a JOBSET needs at least one pod'),
  spec: jobSetSpec,
  templates: (obj) =>
    ((obj as JobSetObject).spec?.replicatedJobs ?? []).flatMap((rj) =>
      rj.template?.spec?.template ? [rj.template.spec.template] : [],
    ),
  isSuspended: (obj) => (obj as JobSetObject).spec?.suspend === true,
  suspendSpec: () => ({ suspend: true }),
  resumeSpec,
  verdict,
  podPosition(pod: V1Pod) {
    const podSet = pod.metadata?.labels?.[LABEL_POD_SET];
    const index = indexOf(
      pod.metadata?.labels?.[COMPLETION_INDEX] ?? pod.metadata?.annotations?.[COMPLETION_INDEX],
    );
    return podSet && index !== null ? { podSet, index } : null;
  },
};

function jobSetSpec(
  job: BackendJob,
  templates: PodSetTemplate[],
  name: string,
  s: KubernetesSettings,
): Record<string, unknown> {
  const names = replicatedJobNames(name, templates);
  const rendezvous = jobSetRendezvous(job, templates, name, names);
  const deadline = job.maxRunMs !== undefined ? Math.max(1, Math.ceil(job.maxRunMs / 1000)) : undefined;
  return {
    suspend: false,
    // Pods reach each other as <hostname>.<JobSet name>, also before they are ready (a rendezvous).
    network: { enableDNSHostnames: true, publishNotReadyAddresses: true },
    ...(deadline
      ? {
          failurePolicy: {
            maxRestarts: 0,
            rules: [{ name: DEADLINE_RULE, action: 'FailJobSet', onJobFailureReasons: ['DeadlineExceeded'] }],
          },
        }
      : {}),
    ttlSecondsAfterFinished: s.finishedJobTtlSeconds,
    // The Jobs carry no Fairway labels: the backend's Job informer must not take them for a batch run.
    replicatedJobs: templates.map((t, i) => ({
      name: names[i]!,
      replicas: 1,
      template: {
        spec: {
          parallelism: t.admitted.count,
          completions: t.admitted.count,
          completionMode: 'Indexed',
          backoffLimit: job.maxRetries ?? 0,
          podFailurePolicy: structuredClone(POD_FAILURE_POLICY),
          ...(deadline ? { activeDeadlineSeconds: deadline } : {}),
          template: withEnv(
            structuredClone(t.template),
            rendezvous ? rendezvousEnv(rendezvous, t.index, job.jobId) : [],
          ),
        },
      },
    })),
  };
}

/**
 * Each pod set's replicatedJob name: the pod set's name when it is a DNS-1035 label short enough for
 * the JobSet webhook's check of the longest pod name (`<jobset>-<name>-0-<last index>-abcde`, 63
 * characters: after `fw-<uuid>`, 13 characters for up to 10 pods, 11 for up to 1000), `ps<index>`
 * otherwise (and for all of them when that would repeat a name).
 */
function replicatedJobNames(name: string, templates: PodSetTemplate[]): string[] {
  const fits = (rj: string, pods: number) =>
    DNS_1035.test(rj) && `${name}-${rj}-0-${pods - 1}`.length + POD_NAME_SUFFIX <= MAX_NAME;
  const chosen = templates.map((t) =>
    fits(t.podSet.name, t.admitted.count) ? t.podSet.name : `ps${t.index}`,
  );
  return new Set(chosen).size === chosen.length ? chosen : templates.map((t) => `ps${t.index}`);
}

/** distributed.ts's rendezvous with the JobSet's names: pod k of pod set i is `<jobset>-<rj i>-0-k.<jobset>`. */
function jobSetRendezvous(
  job: BackendJob,
  templates: PodSetTemplate[],
  name: string,
  names: string[],
): Rendezvous | null {
  const byIndex = new Map(templates.map((t, i) => [t.index, names[i]!]));
  const jobName = (i: number) => `${name}-${byIndex.get(i) ?? `ps${i}`}-0`;
  const r = rendezvousOf(job, jobName);
  if (!r) return null;
  const lead = r.ranks.findIndex((ranks) => ranks?.offset === 0);
  return { ...r, serviceName: name, masterAddress: `${jobName(lead)}-0.${name}` };
}

/** The template with `env` on its main container (in place of the user's variables of the same names). */
function withEnv(template: PodTemplate, env: V1EnvVar[]): PodTemplate {
  const main = template.spec?.containers[0];
  if (!main || env.length === 0) return template;
  main.env = [...(main.env ?? []).filter((e) => !env.some((o) => o.name === e.name)), ...env];
  return template;
}

function resumeSpec(
  existing: KubernetesObject,
  desired: KubernetesObject,
  place: Placement,
): Record<string, unknown> {
  const after = (desired as JobSetObject).spec?.replicatedJobs ?? [];
  const before = (existing as JobSetObject).spec?.replicatedJobs;
  // The list goes whole: what the cluster holds (with its defaults), only the placement changed.
  const base = before?.length ? before : after;
  return {
    suspend: false,
    replicatedJobs: base.map((rj) => {
      const want = after.find((a) => a.name === rj.name);
      const copy = structuredClone(rj);
      copy.template = { ...copy.template, spec: { ...copy.template?.spec } };
      copy.template.spec!.template = place.apply(rj.template?.spec?.template, want?.template?.spec?.template);
      return copy;
    }),
  };
}

function verdict(obj: KubernetesObject): ControllerVerdict {
  const js = obj as JobSetObject;
  const name = js.metadata?.name ?? '';
  const conditions = js.status?.conditions ?? [];
  const completed = conditions.some((c) => c.type === 'Completed' && c.status === 'True');
  const failed = conditions.find((c) => c.type === 'Failed' && c.status === 'True');
  const byDeadline =
    failed?.reason === FAIL_JOBSET_REASON &&
    (js.spec?.failurePolicy?.rules ?? []).some((r) => r.name === DEADLINE_RULE);
  const backoff = (js.spec?.replicatedJobs ?? []).map((rj) => rj.template?.spec?.backoffLimit ?? 0);
  return {
    succeeded: completed,
    failed: !failed
      ? null
      : byDeadline
        ? {
            reason: 'DeadlineExceeded',
            message: `a Job of JobSet ${name} ran longer than the job's maximum run time`,
          }
        : { reason: failed.reason || 'Failed', message: failed.message || `JobSet ${name} failed` },
    suspended: js.spec?.suspend ? `JobSet ${name} is suspended` : null,
    waiting: null,
    notReady: null,
    retries: backoff.length ? Math.min(...backoff) : 0,
    deletesPods: false,
  };
}

function indexOf(raw: string | undefined): number | null {
  if (raw === undefined || !/^\d+$/.test(raw)) return null;
  return Number(raw);
}
