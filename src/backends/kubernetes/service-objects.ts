// An inference service's objects: per revision, a Deployment (one pod per replica) or, when a replica
// spans several hosts, a LeaderWorkerSet (one group per replica), whose replica count Fairway sets; per
// service, a ClusterIP Service over the ready pods of every revision. The pods are the replicas'
// template without any one replica in it: each is created behind the placement gate, and the backend
// gives it to one admitted replica job (its job-id label and admission) and releases it to that job's
// node (service-runs.ts). Pure: builds objects and patches, calls nothing.
import type { V1Deployment, V1Pod, V1PodSpec, V1Service } from '@kubernetes/client-node';
import type { BackendJob } from '../port.js';
import { podSetTemplates } from './job-objects.js';
import {
  ANNOTATION_ADMISSION,
  LABEL_JOB_ID,
  LABEL_SERVICE_ID,
  LABEL_SERVICE_REVISION,
  labelValue,
} from './naming.js';
import { HOSTNAME_LABEL, PLACEMENT_GATE, placementGate } from './placement-gates.js';
import type { JobBuildContext } from './pod-spec.js';
import type { KubernetesSettings } from './settings.js';
import { tenantLabels } from './tenant-objects.js';

/** What a replica job carries of its service (services/inference replica-jobs.ts replicaJobInput). */
export interface ReplicaOfService {
  serviceId: string;
  name: string;
  port: number;
  slot: number;
  revision: number;
}

/** The ReplicaSet controller removes pods with the lowest cost first (Kubernetes ≥ 1.22). */
export const ANNOTATION_POD_DELETION_COST = 'controller.kubernetes.io/pod-deletion-cost';
/** The cost a leaving replica's pod is given, below every other pod's (default 0). */
export const LEAVING_COST = '-1000';
/** LeaderWorkerSet's label naming a pod's group (one group per replica). */
export const LWS_GROUP_INDEX = 'leaderworkerset.sigs.k8s.io/group-index';
export const LWS = {
  apiVersion: 'leaderworkerset.x-k8s.io/v1',
  kind: 'LeaderWorkerSet',
  crdName: 'leaderworkersets.leaderworkerset.x-k8s.io',
} as const;

/** The replica's service, or null for a job that is no service's replica. */
export function replicaOf(job: Pick<BackendJob, 'workload'>): ReplicaOfService | null {
  const s = job.workload?.service as
    | Partial<{ id: string; name: string; port: number; slot: number; revision: number }>
    | undefined;
  if (!s || typeof s.id !== 'string' || !s.id) return null;
  return {
    serviceId: s.id,
    name: String(s.name ?? ''),
    port: Number(s.port),
    slot: Number(s.slot ?? 0),
    revision: Number(s.revision ?? 1),
  };
}

const idPart = (id: string) => {
  const lower = id.toLowerCase();
  if (!/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(lower))
    throw new Error(`service id "${id}" cannot be part of a Kubernetes name`);
  return lower;
};
/** `fw-<service id>-r<revision>`: the workload of one revision. */
export const revisionObjectName = (serviceId: string, revision: number) =>
  `fw-${idPart(serviceId)}-r${revision}`;
/** `fw-<service id>`: the Service (a DNS-1035 label: it starts with a letter). */
export const serviceObjectName = (serviceId: string) => `fw-${idPart(serviceId)}`;

export const serviceSelector = (serviceId: string) => ({ [LABEL_SERVICE_ID]: labelValue(serviceId) });
export const revisionSelector = (serviceId: string, revision: number) => ({
  ...serviceSelector(serviceId),
  [LABEL_SERVICE_REVISION]: String(revision),
});

export type RevisionWorkload = (V1Deployment | LeaderWorkerSetObject) & {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string };
};

export interface LeaderWorkerSetObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace: string; labels?: Record<string, string> };
  spec: {
    replicas: number;
    startupPolicy: 'LeaderCreated' | 'LeaderReady';
    rolloutStrategy: {
      type: 'RollingUpdate';
      rollingUpdateConfiguration: { maxSurge: number; maxUnavailable: number };
    };
    leaderWorkerTemplate: {
      size: number;
      restartPolicy: 'RecreateGroupOnPodRestart';
      leaderTemplate: { metadata: { labels: Record<string, string> }; spec: V1PodSpec };
      workerTemplate: { metadata: { labels: Record<string, string> }; spec: V1PodSpec };
    };
  };
}

/**
 * The pod template of a revision, from one of its replica jobs: the replicas' container, resources and
 * flavor, restarted in place (a serving process that crashes comes back; it is no job failure), its port
 * and a readiness probe on it (the Service sends traffic only to ready pods), drained over the queue's
 * reclaim grace when removed, gated until the backend gives it to a replica. Nothing of one replica:
 * no job id, admission, node or pool.
 */
export function revisionPodTemplate(
  job: BackendJob,
  replica: ReplicaOfService,
  ctx: JobBuildContext,
  s: KubernetesSettings,
): { metadata: { labels: Record<string, string> }; spec: V1PodSpec } {
  const [first] = podSetTemplates(job, ctx, s);
  if (!first) throw new Error(`job ${job.jobId}: the admission has no pods`);
  const { [LABEL_JOB_ID]: _job, ...labels } = first.template.metadata.labels;
  const spec: V1PodSpec = { ...first.template.spec };
  spec.restartPolicy = 'Always';
  spec.schedulingGates = placementGate();
  delete spec.affinity;
  if (spec.nodeSelector) {
    const { [s.poolLabel]: _pool, [HOSTNAME_LABEL]: _host, ...flavorLevel } = spec.nodeSelector;
    spec.nodeSelector = Object.keys(flavorLevel).length ? flavorLevel : undefined;
    if (!spec.nodeSelector) delete spec.nodeSelector;
  }
  spec.containers = spec.containers.map((c, i) =>
    i > 0
      ? c
      : {
          ...c,
          env: [
            ...(c.env ?? []).filter((e) => e.name !== 'FAIRWAY_JOB_ID'),
            { name: 'FAIRWAY_SERVICE_ID', value: replica.serviceId },
            { name: 'FAIRWAY_SERVICE_REVISION', value: String(replica.revision) },
          ],
          ports: [{ name: 'serve', containerPort: replica.port, protocol: 'TCP' }],
          readinessProbe: { tcpSocket: { port: replica.port }, periodSeconds: 5, failureThreshold: 3 },
        },
  );
  return {
    metadata: { labels: { ...labels, ...revisionSelector(replica.serviceId, replica.revision) } },
    spec,
  };
}

/** The workload of a revision with `replicas` replicas: a Deployment, or a LeaderWorkerSet when a replica has several pods. */
export function revisionWorkload(
  job: BackendJob,
  replica: ReplicaOfService,
  ctx: JobBuildContext,
  s: KubernetesSettings,
  replicas: number,
): RevisionWorkload {
  const template = revisionPodTemplate(job, replica, ctx, s);
  const name = revisionObjectName(replica.serviceId, replica.revision);
  const labels = { ...tenantLabels(ctx.tenant), ...revisionSelector(replica.serviceId, replica.revision) };
  const pods = job.podSets[0]?.count ?? 1;
  if (pods > 1) {
    const lws: LeaderWorkerSetObject = {
      apiVersion: LWS.apiVersion,
      kind: LWS.kind,
      metadata: { name, namespace: ctx.namespace, labels },
      spec: {
        replicas,
        startupPolicy: 'LeaderCreated',
        // Fairway rolls revisions itself (a new revision's workload beside the old one): none in place.
        rolloutStrategy: {
          type: 'RollingUpdate',
          rollingUpdateConfiguration: { maxSurge: 0, maxUnavailable: 1 },
        },
        leaderWorkerTemplate: {
          size: pods,
          restartPolicy: 'RecreateGroupOnPodRestart',
          leaderTemplate: { metadata: { labels: { ...template.metadata.labels } }, spec: template.spec },
          workerTemplate: { metadata: { labels: { ...template.metadata.labels } }, spec: template.spec },
        },
      },
    };
    return lws as RevisionWorkload;
  }
  const deployment: V1Deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: ctx.namespace, labels },
    spec: {
      replicas,
      selector: { matchLabels: revisionSelector(replica.serviceId, replica.revision) },
      // The template of a revision never changes (a change is a new revision, rolled by Fairway within
      // quota); should it, no pod beyond the count is made and one at a time is replaced.
      strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } },
      revisionHistoryLimit: 2,
      template,
    },
  };
  return deployment as RevisionWorkload;
}

/** The service's ClusterIP Service: every revision's ready pods on the service's port. */
export function serviceObject(
  replica: ReplicaOfService,
  ctx: Pick<JobBuildContext, 'namespace' | 'tenant'>,
): V1Service & { apiVersion: string; kind: string; metadata: { name: string; namespace: string } } {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: serviceObjectName(replica.serviceId),
      namespace: ctx.namespace,
      labels: { ...tenantLabels(ctx.tenant), ...serviceSelector(replica.serviceId) },
    },
    spec: {
      type: 'ClusterIP',
      selector: serviceSelector(replica.serviceId),
      ports: [{ name: 'serve', port: replica.port, targetPort: replica.port, protocol: 'TCP' }],
    },
  };
}

/** The merge patch that gives a gated pod to a replica job and holds it to that job's node. */
export function assignPatch(
  pod: V1Pod,
  jobId: string,
  admissionAt: string,
  node: string,
): Record<string, unknown> {
  return {
    metadata: {
      labels: { [LABEL_JOB_ID]: labelValue(jobId) },
      annotations: { [ANNOTATION_ADMISSION]: admissionAt },
    },
    spec: {
      nodeSelector: { [HOSTNAME_LABEL]: node },
      schedulingGates: (pod.spec?.schedulingGates ?? []).filter((g) => g.name !== PLACEMENT_GATE),
    },
  };
}

/** The merge patch that makes a pod the first its ReplicaSet removes on the next scale-down. */
export const leavingPatch = (): Record<string, unknown> => ({
  metadata: { annotations: { [ANNOTATION_POD_DELETION_COST]: LEAVING_COST } },
});

/** Whether the pod is serving: Ready, not terminating. */
export function podReady(pod: V1Pod): boolean {
  if (pod.metadata?.deletionTimestamp) return false;
  return (pod.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
}
