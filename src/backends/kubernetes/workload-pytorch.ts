// A job as a Kubeflow PyTorchJob (kubeflow.org/v1, Training Operator v1), as Kueue runs one
// (pkg/controller/jobs/kubeflow/jobs/pytorchjob): pod set "master" is replica type Master (1 pod,
// rank 0), pod set "worker" is Worker. The operator names pods and Services `<job>-<type>-<index>`
// (`fw-<uuid>-worker-12`: well inside 63 characters) and gives every pod torchrun's rendezvous
// environment itself; nprocPerNode says how many processes each pod starts.
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import type { BackendJob } from '../port.js';
import { RENDEZVOUS_PORT } from './distributed.js';
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

interface ReplicaSpec {
  replicas?: number;
  restartPolicy?: string;
  template?: PodTemplate;
}

interface PyTorchJobObject extends KubernetesObject {
  spec?: {
    runPolicy?: { suspend?: boolean; backoffLimit?: number };
    pytorchReplicaSpecs?: Record<string, ReplicaSpec>;
  };
  status?: { conditions?: Condition[] };
}

const MASTER = 'master';
const WORKER = 'worker';
/** Replica types in pod-set order. */
const REPLICA_TYPES = ['Master', 'Worker'] as const;
/** The port the operator reads MASTER_PORT from (it adds it with another number when absent). */
const PORT_NAME = 'pytorchjob-port';
const REPLICA_INDEX = 'training.kubeflow.org/replica-index';
/** What the operator's condition says when runPolicy.activeDeadlineSeconds stopped the job. */
const DEADLINE_MESSAGE = /active longer than specified deadline/;

export const PYTORCH_JOB: KindParts = {
  kind: 'PYTORCH_JOB',
  group: 'kubeflow.org',
  version: 'v1',
  crdKind: 'PyTorchJob',
  plural: 'pytorchjobs',
  containerName: 'pytorch',
  mutable: ['nodeSelector', 'tolerations', 'schedulingGates', 'affinity'],
  problems(podSets) {
    const other = podSets.find((p) => p.name !== MASTER && p.name !== WORKER);
    if (other) return `a PYTORCH_JOB has pod sets "master" and "worker" only; "${other.name}" is neither`;
    const master = podSets.find((p) => p.name === MASTER);
    if (!master)
      return 'a PYTORCH_JOB needs a pod set "master" (1 pod: rank 0), and its other pods in a pod set "worker"';
    if (master.count !== 1)
      return `the "master" pod set of a PYTORCH_JOB has exactly 1 pod (got ${master.count}); put the others in "worker"`;
    const worker = podSets.find((p) => p.name === WORKER);
    const [m, w] = [master.perPod.gpu ?? 0, worker?.perPod.gpu ?? 0];
    if (worker && worker.count > 0 && m > 0 && w > 0 && m !== w)
      return `a PYTORCH_JOB starts as many processes in every pod (nprocPerNode): "master" and "worker" need the same GPUs per pod (got ${m} and ${w})`;
    return null;
  },
  spec: pytorchSpec,
  templates: (obj) =>
    REPLICA_TYPES.flatMap((type) => {
      const template = (obj as PyTorchJobObject).spec?.pytorchReplicaSpecs?.[type]?.template;
      return template ? [template] : [];
    }),
  isSuspended: (obj) => (obj as PyTorchJobObject).spec?.runPolicy?.suspend === true,
  suspendSpec: () => ({ runPolicy: { suspend: true } }),
  resumeSpec,
  verdict,
  podPosition(pod: V1Pod) {
    const podSet = pod.metadata?.labels?.[LABEL_POD_SET];
    const raw = pod.metadata?.labels?.[REPLICA_INDEX];
    return podSet && raw !== undefined && /^\d+$/.test(raw) ? { podSet, index: Number(raw) } : null;
  },
};

function pytorchSpec(
  job: BackendJob,
  templates: PodSetTemplate[],
  _name: string,
  s: KubernetesSettings,
): Record<string, unknown> {
  const master = templates.find((t) => t.podSet.name === MASTER);
  if (!master) throw new Error(`job ${job.jobId}: a PYTORCH_JOB has no admitted "master" pod set`);
  const worker = templates.find((t) => t.podSet.name === WORKER);
  const retries = job.maxRetries ?? 0;
  // With Never the operator fails the job at the first failed pod and backoffLimit counts nothing;
  // OnFailure restarts the container in place (same pod, same node) and backoffLimit counts restarts.
  const restartPolicy = retries > 0 ? 'OnFailure' : 'Never';
  const replica = (t: PodSetTemplate) => ({
    replicas: t.admitted.count,
    restartPolicy,
    template: template(t, restartPolicy),
  });
  const gpu = [master, worker].map((t) => t?.podSet.perPod.gpu ?? 0).find((g) => g > 0);
  return {
    runPolicy: {
      suspend: false,
      backoffLimit: retries,
      // On success the master is done; workers still running would hold their GPUs.
      cleanPodPolicy: 'Running',
      ttlSecondsAfterFinished: s.finishedJobTtlSeconds,
      ...(job.maxRunMs !== undefined
        ? { activeDeadlineSeconds: Math.max(1, Math.ceil(job.maxRunMs / 1000)) }
        : {}),
    },
    ...(gpu ? { nprocPerNode: String(Math.max(1, Math.round(gpu))) } : {}),
    pytorchReplicaSpecs: { Master: replica(master), ...(worker ? { Worker: replica(worker) } : {}) },
  };
}

function template(t: PodSetTemplate, restartPolicy: string): PodTemplate {
  const out = structuredClone(t.template);
  out.spec.restartPolicy = restartPolicy;
  const main = out.spec.containers[0];
  if (main && !(main.ports ?? []).some((p) => p.name === PORT_NAME))
    main.ports = [
      ...(main.ports ?? []),
      { name: PORT_NAME, containerPort: RENDEZVOUS_PORT, protocol: 'TCP' },
    ];
  return out;
}

function resumeSpec(
  existing: KubernetesObject,
  desired: KubernetesObject,
  place: Placement,
): Record<string, unknown> {
  const before = (existing as PyTorchJobObject).spec?.pytorchReplicaSpecs ?? {};
  const after = (desired as PyTorchJobObject).spec?.pytorchReplicaSpecs ?? {};
  const replicas: Record<string, unknown> = {};
  for (const type of REPLICA_TYPES) {
    if (after[type])
      replicas[type] = { template: place.patch(before[type]?.template, after[type]?.template) };
  }
  return { runPolicy: { suspend: false }, pytorchReplicaSpecs: replicas };
}

function verdict(obj: KubernetesObject): ControllerVerdict {
  const job = obj as PyTorchJobObject;
  const name = job.metadata?.name ?? '';
  const conditions = job.status?.conditions ?? [];
  const has = (type: string) => conditions.find((c) => c.type === type && c.status === 'True');
  const failed = has('Failed');
  const message = failed?.message || `PyTorchJob ${name} failed`;
  const inPlace = Object.values(job.spec?.pytorchReplicaSpecs ?? {}).some(
    (r) => r.restartPolicy === 'OnFailure',
  );
  return {
    succeeded: !!has('Succeeded'),
    failed: failed
      ? { reason: DEADLINE_MESSAGE.test(message) ? 'DeadlineExceeded' : failed.reason || 'Failed', message }
      : null,
    suspended: job.spec?.runPolicy?.suspend ? `PyTorchJob ${name} is suspended` : null,
    waiting: has('Restarting')
      ? `Restarting: ${has('Restarting')?.message ?? `PyTorchJob ${name} is restarting`}`
      : null,
    notReady: null,
    retries: inPlace ? (job.spec?.runPolicy?.backoffLimit ?? 0) : 0,
    deletesPods: false,
  };
}
