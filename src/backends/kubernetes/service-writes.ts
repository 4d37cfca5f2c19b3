// The writes behind inference replicas (service-runs.ts): a revision's workload at its count with the
// service's Service, a retired revision, HorizontalPodAutoscalers that would fight Fairway's count,
// and the objects and pods of services Fairway no longer runs.
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import type { BackendJob } from '../port.js';
import { apiMessage, type KubeClient, type ObjectRef, statusOf } from './client.js';
import { LABEL_JOB_ID, LABEL_SERVICE_ID, LABEL_SERVICE_REVISION, MANAGED_BY } from './naming.js';
import type { JobBuildContext } from './pod-spec.js';
import {
  LWS,
  type ReplicaOfService,
  revisionObjectName,
  revisionWorkload,
  serviceObject,
} from './service-objects.js';
import type { KubernetesSettings } from './settings.js';

/** A replica job the backend runs, under its admission. */
export interface ReplicaRun {
  job: BackendJob;
  replica: ReplicaOfService;
  ctx: JobBuildContext;
  admissionAt: string;
  started: boolean;
}

/** `namespace/service/revision`: the workload a replica counts in. */
export const revisionKey = (run: Pick<ReplicaRun, 'ctx' | 'replica'>) =>
  `${run.ctx.namespace}/${run.replica.serviceId}/${run.replica.revision}`;

const MANAGED_SELECTOR = Object.entries(MANAGED_BY)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

export function refOf(o: KubernetesObject, apiVersion: string, kind: string): ObjectRef {
  return { apiVersion, kind, metadata: { name: o.metadata?.name ?? '', namespace: o.metadata?.namespace } };
}

/** The revision's workload at `count` and the service's Service; why the cluster refuses them, or null. */
export async function writeRevision(
  client: KubeClient,
  settings: KubernetesSettings,
  run: ReplicaRun,
  count: number,
  log: (message: string) => void,
): Promise<string | null> {
  let desired: ReturnType<typeof revisionWorkload>;
  try {
    desired = revisionWorkload(run.job, run.replica, run.ctx, settings, count);
  } catch (error) {
    return `cannot run on this Kubernetes cluster: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (desired.kind === LWS.kind && !(await client.serves(LWS.apiVersion, LWS.kind)))
    return `a replica of ${run.job.podSets[0]?.count} pods spans several hosts, which needs a LeaderWorkerSet, and this cluster does not serve ${LWS.crdName}`;
  try {
    // Read first: at every interval this is a check that finds both in place.
    const service = serviceObject(run.replica, run.ctx);
    if (!(await client.read(service))) await client.createOrGet(service);
    const existing = await client.read<typeof desired>(desired);
    if (!existing) await client.createOrGet(desired);
    else if (existing.spec?.replicas !== desired.spec?.replicas)
      await client.mergePatch(desired as ObjectRef, { spec: { replicas: desired.spec?.replicas } });
    await removeAutoscalers(client, log, run, desired.kind, desired.metadata.name);
    return null;
  } catch (error) {
    const status = statusOf(error);
    if (status !== 400 && status !== 422) throw error;
    return `the Kubernetes API refused the service's ${desired.kind} (${status}): ${apiMessage(error)}`;
  }
}

/** Fairway sets the count: an HPA aimed at the workload would fight it, so it is removed (and said). */
async function removeAutoscalers(
  client: KubeClient,
  log: (message: string) => void,
  run: ReplicaRun,
  kind: string,
  name: string,
): Promise<void> {
  if (!(await client.serves('autoscaling/v2', 'HorizontalPodAutoscaler').catch(() => false))) return;
  const hpas = await client.list<
    KubernetesObject & { spec?: { scaleTargetRef?: { kind?: string; name?: string } } }
  >('autoscaling/v2', 'HorizontalPodAutoscaler', '', run.ctx.namespace);
  for (const hpa of hpas) {
    const target = hpa.spec?.scaleTargetRef;
    if (target?.kind !== kind || target.name !== name) continue;
    await client.deleteIfPresent(refOf(hpa, 'autoscaling/v2', 'HorizontalPodAutoscaler'));
    log(
      `removed HorizontalPodAutoscaler ${run.ctx.namespace}/${hpa.metadata?.name}: Fairway sets the replicas of ${kind} ${name} (service ${run.replica.serviceId})`,
    );
  }
}

/** A revision whose last replica left: deleted (an older revision rolled out) or kept at 0 (a scale to zero). */
export async function retireRevision(
  client: KubeClient,
  run: ReplicaRun,
  how: 'delete' | 'scale-to-zero',
): Promise<void> {
  const kind = (run.job.podSets[0]?.count ?? 1) > 1 ? LWS : { apiVersion: 'apps/v1', kind: 'Deployment' };
  const ref: ObjectRef = {
    apiVersion: kind.apiVersion,
    kind: kind.kind,
    metadata: {
      name: revisionObjectName(run.replica.serviceId, run.replica.revision),
      namespace: run.ctx.namespace,
    },
  };
  if (how === 'delete') {
    await client.deleteIfPresent(ref);
    return;
  }
  await client.mergePatch(ref, { spec: { replicas: 0 } }).catch((error: unknown) => {
    if (statusOf(error) !== 404) throw error;
  });
}

/** The workloads, Services and pods of services none of whose replicas is live; the count removed. */
export async function removeServiceOrphans(
  client: KubeClient,
  keep: {
    services: ReadonlySet<string>;
    revisions: ReadonlySet<string>;
    pods: readonly V1Pod[];
    live: (jobId: string) => boolean;
    problems: unknown[];
  },
): Promise<number> {
  let removed = 0;
  const remove = (ref: ObjectRef) =>
    client
      .deleteIfPresent(ref)
      .then((gone) => void (gone && removed++))
      .catch((error: unknown) => void keep.problems.push(error));
  const kinds: [string, string][] = [
    ['apps/v1', 'Deployment'],
    ['v1', 'Service'],
  ];
  if (await client.serves(LWS.apiVersion, LWS.kind).catch(() => false))
    kinds.push([LWS.apiVersion, LWS.kind]);
  for (const [apiVersion, kind] of kinds) {
    const objects = await client
      .list<KubernetesObject>(apiVersion, kind, `${MANAGED_SELECTOR},${LABEL_SERVICE_ID}`)
      .catch((error: unknown) => {
        keep.problems.push(error);
        return [];
      });
    for (const o of objects) {
      const labels = o.metadata?.labels ?? {};
      const service = labels[LABEL_SERVICE_ID] ?? '';
      const key = `${o.metadata?.namespace}/${service}/${labels[LABEL_SERVICE_REVISION]}`;
      if (kind === 'Service' ? keep.services.has(service) : keep.revisions.has(key)) continue;
      await remove(refOf(o, apiVersion, kind));
    }
  }
  // A pod given to a replica Fairway no longer runs (its count was lowered while no one watched).
  for (const pod of keep.pods) {
    const jobId = pod.metadata?.labels?.[LABEL_JOB_ID];
    if (!jobId || !pod.metadata?.labels?.[LABEL_SERVICE_ID] || keep.live(jobId)) continue;
    if (!pod.metadata.deletionTimestamp) await remove(refOf(pod, 'v1', 'Pod'));
  }
  return removed;
}
