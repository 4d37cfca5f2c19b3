// Fairway's placement is what the cluster runs: every pod of an admitted job is created behind a
// scheduling gate, and the backend releases each one to the node the scheduler chose for it by
// adding a hostname nodeSelector to the gated pod and removing the gate (a real API server allows
// exactly that on a gated pod). kube-scheduler then only binds; its own scoring (LeastAllocated
// spreads) cannot scatter a gang that Fairway packed. Pods the Job controller makes again (a
// retry) are released to the same node, by their completion index.
import type { V1Pod, V1PodSchedulingGate } from '@kubernetes/client-node';
import type { PodSetAdmission } from '../../core/scheduling/index.js';
import { ANNOTATION_ADMISSION, labelValue } from './naming.js';

export const PLACEMENT_GATE = 'fairway.dev/placement';
/** The node label a released pod is held to (the hostname label equals the node name on most clusters). */
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';
const COMPLETION_INDEX = 'batch.kubernetes.io/job-completion-index';

export const placementGate = (): V1PodSchedulingGate[] => [{ name: PLACEMENT_GATE }];

/** The node of pod `index` of a pod set: its placements in order, each node as many times as its pods. */
export function nodeOfIndex(admitted: PodSetAdmission, index: number): string | undefined {
  let seen = 0;
  for (const p of admitted.placements) {
    if (p.pods <= 0) continue;
    if (index < seen + p.pods) return p.node;
    seen += p.pods;
  }
  return undefined;
}

export function isGated(pod: V1Pod): boolean {
  return (pod.spec?.schedulingGates ?? []).some((g) => g.name === PLACEMENT_GATE);
}

/** A pod's completion index (0 for a pod of a non-Indexed Job). */
export function completionIndexOf(pod: V1Pod): number {
  const raw = pod.metadata?.annotations?.[COMPLETION_INDEX] ?? pod.metadata?.labels?.[COMPLETION_INDEX];
  const index = raw === undefined ? 0 : Number(raw);
  return Number.isInteger(index) && index >= 0 ? index : 0;
}

/**
 * The merge patch that releases a gated pod to `node`: the nodeSelector gains the hostname (maps
 * merge) and the gate list loses only Fairway's gate (another controller's gates stay).
 */
export function releasePatch(pod: V1Pod, node: string): Record<string, unknown> {
  return {
    spec: {
      nodeSelector: { [HOSTNAME_LABEL]: node },
      schedulingGates: (pod.spec?.schedulingGates ?? []).filter((g) => g.name !== PLACEMENT_GATE),
    },
  };
}

/** What the release needs of a tracked run: its admission, and the pod set names by index. */
export interface GatedRun {
  jobId: string;
  admissionAt: string;
  admissions: PodSetAdmission[];
  /** A pod's index within its pod set (default: its completion index; null: it has none). */
  indexOf?: (pod: V1Pod) => number | null;
}

export interface ReleaseOutcome {
  /** Pods whose index the admission gives no node: left gated. */
  stuck: V1Pod[];
  /** Why a pod's node cannot take it any more (cordoned, gone, not ready): the admission is stale. */
  unavailable: string | null;
}

/**
 * Releases the run's gated pods of its current admission, each to its node; pods already asked for
 * (`asked`, uid → node) are not patched twice. A pod whose node the admission does not name stays gated
 * (`stuck`); one whose node `unusable` refuses is not released and its reason returned: the cluster
 * changed since the admission (a drained or lost node) and the job must be placed again.
 */
export async function releaseGatedPods(
  patch: (pod: V1Pod, body: Record<string, unknown>) => Promise<unknown>,
  run: GatedRun,
  pods: readonly V1Pod[],
  asked: Map<string, string>,
  podSetOf: (pod: V1Pod) => string | undefined,
  unusable: (node: string) => string | null = () => null,
  indexOf: (pod: V1Pod) => number | null = completionIndexOf,
): Promise<ReleaseOutcome> {
  const stuck: V1Pod[] = [];
  let unavailable: string | null = null;
  // Pods already held to a node, per pod set: a pod that has no index (a Ray worker) takes a node
  // whose planned pods are not all there yet.
  const placed = new Map<string, Map<string, number>>();
  for (const pod of pods) {
    const uid = pod.metadata?.uid ?? pod.metadata?.name ?? '';
    // A pod asked for still shows its gate until the informer sees the release: it counts where it goes.
    const node = pod.spec?.nodeSelector?.[HOSTNAME_LABEL] ?? pod.spec?.nodeName ?? asked.get(uid);
    const set = podSetOf(pod);
    if (!node || set === undefined || (isGated(pod) && !asked.has(uid)) || pod.metadata?.deletionTimestamp)
      continue;
    if (pod.metadata?.annotations?.[ANNOTATION_ADMISSION] !== run.admissionAt) continue;
    const counts = placed.get(set) ?? new Map<string, number>();
    counts.set(node, (counts.get(node) ?? 0) + 1);
    placed.set(set, counts);
  }
  for (const pod of pods) {
    const uid = pod.metadata?.uid ?? pod.metadata?.name ?? '';
    if (!isGated(pod) || asked.has(uid) || pod.metadata?.deletionTimestamp) continue;
    if (pod.metadata?.annotations?.[ANNOTATION_ADMISSION] !== run.admissionAt) continue;
    const set = podSetOf(pod);
    const admitted = run.admissions.find((a) => labelValue(a.name) === set);
    const index = indexOf(pod);
    const counts = placed.get(set ?? '') ?? new Map<string, number>();
    const node =
      admitted &&
      (index !== null
        ? nodeOfIndex(admitted, index)
        : admitted.placements.find((p) => p.pods > (counts.get(p.node) ?? 0))?.node);
    if (!node) {
      stuck.push(pod);
      continue;
    }
    const why = unusable(node);
    if (why) {
      unavailable ??= why;
      continue;
    }
    asked.set(uid, node);
    counts.set(node, (counts.get(node) ?? 0) + 1);
    placed.set(set ?? '', counts);
    try {
      await patch(pod, releasePatch(pod, node));
    } catch (error) {
      asked.delete(uid);
      throw error;
    }
  }
  return { stuck, unavailable };
}
