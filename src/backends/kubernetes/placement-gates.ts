// Fairway's placement is what the cluster runs: every pod of an admitted job is created behind a
// scheduling gate, and the backend releases each one to the node the scheduler chose for it by
// adding a hostname nodeSelector to the gated pod and removing the gate (a real API server allows
// exactly that on a gated pod). kube-scheduler then only binds; its own scoring (LeastAllocated
// spreads) cannot scatter a gang that Fairway packed. Pods the Job controller makes again (a
// retry) are released to the same node, by their completion index.
import type { V1Pod, V1PodSchedulingGate } from '@kubernetes/client-node';
import type { PodSetAdmission } from '../../core/scheduling/index.js';
import { labelValue } from './naming.js';

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
}

export interface ReleaseOutcome {
  /** Pods whose index the admission gives no node: left gated. */
  stuck: V1Pod[];
  /** Why a pod's node cannot take it any more (cordoned, gone, not ready): the admission is stale. */
  unavailable: string | null;
}

/**
 * Releases the run's gated pods of its current admission, each to its node; pods already asked for
 * (`asked`, by uid) are not patched twice. A pod whose node the admission does not name stays gated
 * (`stuck`); one whose node `unusable` refuses is not released and its reason returned: the cluster
 * changed since the admission (a drained or lost node) and the job must be placed again.
 */
export async function releaseGatedPods(
  patch: (pod: V1Pod, body: Record<string, unknown>) => Promise<unknown>,
  run: GatedRun,
  pods: readonly V1Pod[],
  asked: Set<string>,
  podSetOf: (pod: V1Pod) => string | undefined,
  unusable: (node: string) => string | null = () => null,
): Promise<ReleaseOutcome> {
  const stuck: V1Pod[] = [];
  let unavailable: string | null = null;
  for (const pod of pods) {
    const uid = pod.metadata?.uid ?? pod.metadata?.name ?? '';
    if (!isGated(pod) || asked.has(uid) || pod.metadata?.deletionTimestamp) continue;
    if (pod.metadata?.annotations?.['fairway.dev/admission-at'] !== run.admissionAt) continue;
    const admitted = run.admissions.find((a) => labelValue(a.name) === podSetOf(pod));
    const node = admitted && nodeOfIndex(admitted, completionIndexOf(pod));
    if (!node) {
      stuck.push(pod);
      continue;
    }
    const why = unusable(node);
    if (why) {
      unavailable ??= why;
      continue;
    }
    asked.add(uid);
    try {
      await patch(pod, releasePatch(pod, node));
    } catch (error) {
      asked.delete(uid);
      throw error;
    }
  }
  return { stuck, unavailable };
}
