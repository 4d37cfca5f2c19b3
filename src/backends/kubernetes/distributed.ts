// How the pods of one multi-pod job find each other on plain Kubernetes: one headless Service
// named after the job selects all its pods; every pod set is an Indexed Job whose pods get the
// Service as `subdomain` and a stable hostname (`<kube job name>-<index>`, set by the Job
// controller), so `<hostname>.<service>` resolves through cluster DNS. Every pod gets the
// environment launchers read (torchrun's PET_* variables included).
//
// Ranks: rank 0 is pod 0 of the first pod set with more than one pod (or of the first pod set);
// the other pod sets follow in their order. Kubernetes cannot add an offset to a completion
// index, so NODE_RANK is the completion index for the pod set at offset 0 and a literal for
// single-pod sets; a further multi-pod set gets no static NODE_RANK (its pods still get the c10d
// rendezvous variables, with which torchrun assigns ranks itself) and FAIRWAY_NODE_RANK_OFFSET.
import type { V1EnvVar, V1Service } from '@kubernetes/client-node';
import type { PodSetAdmission, PodSetSpec } from '../../core/scheduling/index.js';
import type { BackendJob } from '../port.js';
import { LABEL_JOB_ID, labelValue } from './naming.js';

/** The rendezvous port every pod is told (torchrun's default). */
export const RENDEZVOUS_PORT = 29500;

/** Where the Job controller writes a pod's completion index (read through the downward API). */
const COMPLETION_INDEX_ANNOTATION = "metadata.annotations['batch.kubernetes.io/job-completion-index']";

export interface PodSetRanks {
  /** The pod set's rank of its pod 0. */
  offset: number;
  /** Processes per pod: its GPUs per pod (at least 1). */
  processesPerPod: number;
  pods: number;
}

export interface Rendezvous {
  serviceName: string;
  /** Pod 0's DNS name, as the pods resolve it (relative to their namespace). */
  masterAddress: string;
  totalPods: number;
  worldSize: number;
  /** By pod set index; null for pod sets admitted with no pod. */
  ranks: (PodSetRanks | null)[];
}

/** The headless Service's name: `fw-<jobId>` (a DNS-1035 label of 39 characters). */
export function serviceName(jobId: string): string {
  return `fw-${jobId.toLowerCase()}`;
}

/**
 * The job's rendezvous, or null for a job of one pod (it needs none, and its objects stay as
 * they were). `kubeJobName(i)` names pod set i's Job.
 */
export function rendezvousOf(
  job: BackendJob,
  kubeJobName: (podSetIndex: number) => string,
): Rendezvous | null {
  const admitted = job.podSets.map((ps) => admittedOf(job, ps));
  const pods = admitted.map((a) => a?.count ?? 0);
  const totalPods = pods.reduce((n, c) => n + c, 0);
  if (totalPods <= 1) return null;
  const firstGang = pods.findIndex((c) => c > 1);
  const lead = firstGang >= 0 ? firstGang : pods.findIndex((c) => c > 0);
  const order = [lead, ...pods.map((_c, i) => i).filter((i) => i !== lead && pods[i]! > 0)];
  const ranks: (PodSetRanks | null)[] = pods.map(() => null);
  let offset = 0;
  let worldSize = 0;
  for (const i of order) {
    const processesPerPod = Math.max(1, Math.round(job.podSets[i]!.perPod.gpu ?? 0));
    ranks[i] = { offset, processesPerPod, pods: pods[i]! };
    offset += pods[i]!;
    worldSize += pods[i]! * processesPerPod;
  }
  const name = serviceName(job.jobId);
  return { serviceName: name, masterAddress: `${kubeJobName(lead)}-0.${name}`, totalPods, worldSize, ranks };
}

function admittedOf(job: BackendJob, podSet: PodSetSpec): PodSetAdmission | undefined {
  return job.admission.podSets.find((a) => a.name === podSet.name);
}

/** The launcher environment of pod set `index`'s pods. */
export function rendezvousEnv(r: Rendezvous, index: number, jobId: string): V1EnvVar[] {
  const ranks = r.ranks[index];
  if (!ranks) return [];
  const literal = (name: string, value: string | number): V1EnvVar => ({ name, value: String(value) });
  const env: V1EnvVar[] = [
    literal('MASTER_ADDR', r.masterAddress),
    literal('MASTER_PORT', RENDEZVOUS_PORT),
    literal('NNODES', r.totalPods),
    literal('PET_NNODES', r.totalPods),
    literal('NPROC_PER_NODE', ranks.processesPerPod),
    literal('PET_NPROC_PER_NODE', ranks.processesPerPod),
    literal('WORLD_SIZE', r.worldSize),
    literal('PET_RDZV_BACKEND', 'c10d'),
    literal('PET_RDZV_ENDPOINT', `${r.masterAddress}:${RENDEZVOUS_PORT}`),
    literal('PET_RDZV_ID', jobId),
    literal('FAIRWAY_NODE_RANK_OFFSET', ranks.offset),
  ];
  if (ranks.pods === 1) env.push(literal('NODE_RANK', ranks.offset), literal('PET_NODE_RANK', ranks.offset));
  else if (ranks.offset === 0) {
    const index = { valueFrom: { fieldRef: { fieldPath: COMPLETION_INDEX_ANNOTATION } } };
    env.push({ name: 'NODE_RANK', ...index }, { name: 'PET_NODE_RANK', ...index });
  }
  return env;
}

/**
 * The headless Service that gives the job's pods their DNS names. Addresses are published
 * before the pods are ready: a rendezvous happens before any pod could pass a readiness check.
 */
export function headlessService(
  job: BackendJob,
  r: Rendezvous,
  namespace: string,
  labels: Record<string, string>,
): V1Service & { apiVersion: string; kind: string } {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: r.serviceName, namespace, labels: { ...labels } },
    spec: {
      clusterIP: 'None',
      publishNotReadyAddresses: true,
      selector: { [LABEL_JOB_ID]: labelValue(job.jobId) },
      ports: [{ name: 'rendezvous', port: RENDEZVOUS_PORT, protocol: 'TCP', targetPort: RENDEZVOUS_PORT }],
    },
  };
}
