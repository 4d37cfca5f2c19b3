// A pod set's pod spec: the container (image, command, environment, datasets), its resources in
// the flavor's device-plugin units, the security context Pod Security "restricted" asks for, and the
// placement of the admission (tolerations, pool nodeSelector, the placement gate or node pinning).
import type {
  V1Container,
  V1EnvVar,
  V1PodSpec,
  V1Toleration,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';
import type { FlavorSpec, PodSetAdmission, PodSetSpec } from '../../core/scheduling/index.js';
import type { BackendJob } from '../port.js';
import { type Rendezvous, rendezvousEnv } from './distributed.js';
import { TAINT_DEDICATED } from './naming.js';
import { placementGate } from './placement-gates.js';
import type { FlavorMapping, KubernetesSettings } from './settings.js';
import { type KubeTenant, WORKLOAD_SERVICE_ACCOUNT } from './tenant-objects.js';

export interface JobBuildContext {
  namespace: string;
  tenant: KubeTenant;
  /** flavor name → its mapping (the resource name and units per GPU); a flavor without mapping → throws. */
  flavors: Map<string, FlavorMapping>;
  /** node name → its pool (from the inventory), for pool nodeSelector / dedicated tolerations. */
  nodePools: Map<string, string>;
  /**
   * flavor name → the core's flavor spec. Needed to read `perPod.gpu` right: for 'mig' and
   * 'timeslice' flavors it counts slices/shares, for 'gpu' flavors whole (or fractional) GPUs.
   * Absent (or flavor missing): a MIG resource (`…/mig-…`) counts slices, anything else GPUs.
   */
  flavorSpecs?: Map<string, Pick<FlavorSpec, 'kind' | 'slicesPerGpu'>>;
}

/** What the builder reads from `job.workload.container` (the submitted JobContainer). */
export interface WorkloadContainer {
  image: string;
  command?: string[];
  args?: string[];
  env?: { name: string; value: string }[];
  datasets?: { location: string; mountPath: string; readOnly?: boolean }[];
  artifactStore?: string | null;
  securityContext?: { runAsUser?: number; runAsGroup?: number };
}

/** A job without a container (a scheduler demo or test) runs this image, sleeping for its declared duration.
 *
 */
export const PLACEHOLDER_IMAGE = 'busybox:1.36';
// busybox runs as root by default, which runAsNonRoot refuses: the placeholder runs as "nobody".
const NOBODY = 65534;
// No declared duration: sleep "forever" (until suspended, cancelled or activeDeadlineSeconds).
const SLEEP_FOREVER_SECONDS = 2147483647;

const GPU_TOLERATION: V1Toleration = { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' };

function checkpointEnv(job: BackendJob): V1EnvVar[] {
  const c = job.checkpoint;
  return [
    ...(c?.intervalMs
      ? [{ name: 'FAIRWAY_CHECKPOINT_INTERVAL_SECONDS', value: String(Math.round(c.intervalMs / 1000)) }]
      : []),
    ...(c?.resumable ? [{ name: 'FAIRWAY_CHECKPOINT_RESUMABLE', value: 'true' }] : []),
  ];
}

export function podSpec(
  job: BackendJob,
  index: number,
  podSet: PodSetSpec,
  admitted: PodSetAdmission,
  container: WorkloadContainer | null,
  rendezvous: Rendezvous | null,
  ctx: JobBuildContext,
  s: KubernetesSettings,
): V1PodSpec {
  const { volumes, mounts, env: datasetEnv } = datasetsOf(job, container);
  const runAs = container ? (container.securityContext ?? {}) : { runAsUser: NOBODY, runAsGroup: NOBODY };
  if (runAs.runAsUser === 0)
    throw new Error(`job ${job.jobId}: the container may not run as root (runAsUser 0)`);
  const ours: V1EnvVar[] = [{ name: 'FAIRWAY_JOB_ID', value: job.jobId }, ...datasetEnv];
  if (container?.artifactStore) ours.push({ name: 'FAIRWAY_ARTIFACT_STORE', value: container.artifactStore });
  ours.push(...checkpointEnv(job));
  if (rendezvous) ours.push(...rendezvousEnv(rendezvous, index, job.jobId));
  // The user's variables cannot override Fairway's (a later duplicate would win in Kubernetes).
  const userEnv = (container?.env ?? []).filter((e) => !ours.some((o) => o.name === e.name));
  const main: V1Container = {
    name: 'main',
    image: container?.image ?? PLACEHOLDER_IMAGE,
    ...commandOf(job, container),
    env: [...userEnv.map((e) => ({ name: e.name, value: e.value })), ...ours],
    resources: resourcesOf(job, podSet, admitted, ctx),
    securityContext: {
      allowPrivilegeEscalation: false,
      privileged: false,
      capabilities: { drop: ['ALL'] },
      runAsNonRoot: true,
    },
    ...(mounts.length ? { volumeMounts: mounts } : {}),
  };
  const spec: V1PodSpec = {
    restartPolicy: 'Never',
    serviceAccountName: WORKLOAD_SERVICE_ACCOUNT,
    automountServiceAccountToken: false,
    // A preempted or reclaimed job's pods get its policy's grace to checkpoint before they are killed.
    terminationGracePeriodSeconds: job.graceSeconds ?? s.preemptionGraceSeconds,
    ...(rendezvous ? { subdomain: rendezvous.serviceName } : {}),
    securityContext: {
      runAsNonRoot: true,
      seccompProfile: { type: 'RuntimeDefault' },
      ...(runAs.runAsUser !== undefined ? { runAsUser: runAs.runAsUser } : {}),
      ...(runAs.runAsGroup !== undefined ? { runAsGroup: runAs.runAsGroup } : {}),
    },
    containers: [main],
    ...(volumes.length ? { volumes } : {}),
    ...placementOf(podSet, admitted, ctx, s),
  };
  if (ctx.tenant.isolationLevel === 'BEST_EFFORT') spec.priorityClassName = s.bestEffortPriorityClass;
  return spec;
}

export function containerOf(job: BackendJob): WorkloadContainer | null {
  const raw = job.workload?.container;
  if (raw === undefined || raw === null) return null;
  const c = raw as WorkloadContainer;
  if (typeof c !== 'object' || typeof c.image !== 'string' || !c.image)
    throw new Error(`job ${job.jobId}: workload.container has no image`);
  return c;
}

function commandOf(
  job: BackendJob,
  container: WorkloadContainer | null,
): Pick<V1Container, 'command' | 'args'> {
  if (!container) {
    const seconds =
      job.expectedDurationMs !== undefined
        ? Math.max(1, Math.ceil(job.expectedDurationMs / 1000))
        : SLEEP_FOREVER_SECONDS;
    return { command: ['sleep', String(seconds)] };
  }
  return {
    ...(container.command?.length ? { command: [...container.command] } : {}),
    ...(container.args?.length ? { args: [...container.args] } : {}),
  };
}

function datasetsOf(
  job: BackendJob,
  container: WorkloadContainer | null,
): { volumes: V1Volume[]; mounts: V1VolumeMount[]; env: V1EnvVar[] } {
  const volumes: V1Volume[] = [];
  const mounts: V1VolumeMount[] = [];
  const env: V1EnvVar[] = [];
  (container?.datasets ?? []).forEach((d, i) => {
    const name = `dataset-${i}`;
    const readOnly = d.readOnly ?? true;
    const pvc = /^pvc:\/\/([^/]+)\/?(.*)$/.exec(d.location);
    if (pvc) {
      const claimName = pvc[1] as string;
      const subPath = (pvc[2] ?? '').replace(/\/+$/, '');
      if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(claimName))
        throw new Error(`job ${job.jobId}: "${d.location}" does not name a valid PVC`);
      if (subPath.split('/').includes('..'))
        throw new Error(`job ${job.jobId}: dataset path "${d.location}" may not contain ".."`);
      volumes.push({ name, persistentVolumeClaim: { claimName, readOnly } });
      mounts.push({ name, mountPath: d.mountPath, readOnly, ...(subPath ? { subPath } : {}) });
      return;
    }
    // s3://, gs://, nfs://…: the job's own code fetches them; it gets the location and an empty directory to
    // put them in.
    volumes.push({ name, emptyDir: {} });
    mounts.push({ name, mountPath: d.mountPath });
    env.push(
      { name: `FAIRWAY_DATASET_${i}`, value: d.location },
      { name: `FAIRWAY_DATASET_${i}_PATH`, value: d.mountPath },
    );
  });
  return { volumes, mounts, env };
}

function resourcesOf(
  job: BackendJob,
  podSet: PodSetSpec,
  admitted: PodSetAdmission,
  ctx: JobBuildContext,
): V1Container['resources'] {
  const amounts: Record<string, string> = {};
  const { cpu, memory, gpu } = podSet.perPod;
  if (cpu !== undefined && cpu > 0) amounts.cpu = `${Math.ceil(cpu)}m`;
  if (memory !== undefined && memory > 0) amounts.memory = `${Math.ceil(memory)}Mi`;
  const limits: Record<string, string> = { ...amounts };
  if (gpu !== undefined && gpu > 0) {
    const mapping = ctx.flavors.get(admitted.flavor);
    if (!mapping)
      throw new Error(`job ${job.jobId}: flavor "${admitted.flavor}" has no Kubernetes resource mapping`);
    limits[mapping.resource] = String(gpuUnits(job, gpu, admitted.flavor, mapping, ctx));
  }
  // requests = limits: Guaranteed QoS for cpu/memory; extended resources take their request from the limit.
  return { requests: amounts, limits };
}

/**
 * Device-plugin units of `amount` in the flavor's own units (whole GPUs; slices or shares for
 * MIG and time-sliced flavors), unrounded. Used for a pod's request and a tenant's quota.
 */
export function deviceUnits(
  amount: number,
  mapping: FlavorMapping,
  spec: Pick<FlavorSpec, 'kind' | 'slicesPerGpu'> | undefined,
): number {
  const unitsPerGpu = mapping.unitsPerGpu ?? 1;
  const countsSlices = spec ? spec.kind !== 'gpu' : mapping.resource.includes('/mig-');
  // Slice-counted flavors: the core's slices per GPU and the node's units per GPU describe the same split.
  const slicesPerGpu = spec && spec.kind !== 'gpu' ? (spec.slicesPerGpu ?? unitsPerGpu) : unitsPerGpu;
  return countsSlices ? (amount * unitsPerGpu) / slicesPerGpu : amount * unitsPerGpu;
}

/** Device-plugin units per pod of `gpu` flavor units. */
function gpuUnits(
  job: BackendJob,
  gpu: number,
  flavor: string,
  mapping: FlavorMapping,
  ctx: JobBuildContext,
): number {
  const units = deviceUnits(gpu, mapping, ctx.flavorSpecs?.get(flavor));
  const rounded = Math.round(units);
  if (Math.abs(units - rounded) > 1e-9 || rounded < 1) {
    throw new Error(
      `job ${job.jobId}: ${gpu} GPU per pod of flavor "${flavor}" is ${units} units of ${mapping.resource}, not a whole number ≥ 1`,
    );
  }
  return rounded;
}

function placementOf(
  podSet: PodSetSpec,
  admitted: PodSetAdmission,
  ctx: JobBuildContext,
  s: KubernetesSettings,
): Partial<V1PodSpec> {
  const placement: Partial<V1PodSpec> = {};
  const tolerations: V1Toleration[] = [];
  const gpuPod = (podSet.perPod.gpu ?? 0) > 0;
  if (gpuPod) tolerations.push({ ...GPU_TOLERATION });
  // Nodes tainted for this tenant are the scheduler's to give it (a dedicated pool, whatever the
  // tenant's isolation level); the toleration only allows them, the node selector below chooses.
  tolerations.push({ key: TAINT_DEDICATED, operator: 'Equal', value: ctx.tenant.id, effect: 'NoSchedule' });
  if (tolerations.length) placement.tolerations = tolerations;

  const nodeSelector: Record<string, string> = {};
  const mapping = ctx.flavors.get(admitted.flavor);
  if (gpuPod && mapping?.gpuProduct) nodeSelector[s.gpuProductLabel] = mapping.gpuProduct;
  const nodes = [...new Set(admitted.placements.filter((p) => p.pods > 0).map((p) => p.node))];
  const pools = new Set(nodes.map((n) => ctx.nodePools.get(n)));
  const [pool] = pools;
  if (nodes.length > 0 && pools.size === 1 && pool !== undefined) nodeSelector[s.poolLabel] = pool;
  if (Object.keys(nodeSelector).length) placement.nodeSelector = nodeSelector;

  if (s.exactPlacement) {
    // Each pod waits behind the gate until the backend holds it to its own node (placement-gates.ts).
    placement.schedulingGates = placementGate();
  } else if (s.pinToNodes && nodes.length > 0) {
    // The hostname label equals the node name on most clusters; the test API server matches on it.
    placement.affinity = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            { matchExpressions: [{ key: 'kubernetes.io/hostname', operator: 'In', values: nodes.sort() }] },
          ],
        },
      },
    };
  }
  return placement;
}
