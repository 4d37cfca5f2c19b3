/**
 * Which pods a ReplicaSet removes first when it has too many (pkg/controller/replicaset getPodsToDelete,
 * controller.ActivePodsWithRanks with PodDeletionCost and LogarithmicScaleDown on, their defaults since
 * Kubernetes 1.22): unscheduled before scheduled; Pending < Unknown < Running; not ready before ready;
 * lower `controller.kubernetes.io/pod-deletion-cost` first; more pods of the same owner on its node first;
 * more recently ready first (by the power of two of the time since: within one bucket the lower uid); more
 * container restarts first; newer first (likewise bucketed).
 */
import { deletionCost } from './apps.js';

const PHASE_ORDER: Record<string, number> = { Pending: 0, Unknown: 1, Running: 2 };

const readyCondition = (pod: any) =>
  (pod.status?.conditions ?? []).find((c: any) => c.type === 'Ready' && c.status === 'True');
export const isPodReady = (pod: any) => readyCondition(pod) !== undefined;
/** IsPodActive: not Succeeded or Failed, and not being deleted. */
export const isPodActive = (pod: any) =>
  pod.status?.phase !== 'Succeeded' && pod.status?.phase !== 'Failed' && !pod.metadata.deletionTimestamp;

/** When the pod became ready (0: not ready, or no time). */
export function readyTime(pod: any): number {
  const at = readyCondition(pod)?.lastTransitionTime;
  return at ? Date.parse(at) : 0;
}

/** logarithmicRankDiff: floor(log2(ns since)) of each, compared. */
function logRankDiff(t1: number, t2: number, now: number): number {
  const rank = (t: number) => (now - t > 0 ? Math.floor(Math.log2((now - t) * 1e6)) : -1);
  return rank(t1) - rank(t2);
}

/** afterOrZero: a zero time first, else the later one first. */
const afterOrZero = (t1: number, t2: number) => (t1 === 0 || t2 === 0 ? t1 === 0 : t1 > t2);

function maxRestarts(pod: any): [number, number] {
  const sidecars = new Set(
    (pod.spec?.initContainers ?? []).filter((c: any) => c.restartPolicy === 'Always').map((c: any) => c.name),
  );
  const max = (statuses: any[]) => statuses.reduce((m, s) => Math.max(m, s.restartCount ?? 0), 0);
  return [
    max(pod.status?.containerStatuses ?? []),
    max((pod.status?.initContainerStatuses ?? []).filter((s: any) => sidecars.has(s.name))),
  ];
}

/** Negative when `a` should be deleted before `b`. */
function compare(a: any, b: any, rankA: number, rankB: number, now: number): number {
  const less = (yes: boolean) => (yes ? -1 : 1);
  const nodeA = a.spec?.nodeName ?? '';
  const nodeB = b.spec?.nodeName ?? '';
  if (nodeA !== nodeB && (!nodeA || !nodeB)) return less(!nodeA);
  const phaseA = PHASE_ORDER[a.status?.phase] ?? 0;
  const phaseB = PHASE_ORDER[b.status?.phase] ?? 0;
  if (phaseA !== phaseB) return less(phaseA < phaseB);
  const readyA = isPodReady(a);
  if (readyA !== isPodReady(b)) return less(!readyA);
  const costA = deletionCost(a.metadata.annotations) ?? 0;
  const costB = deletionCost(b.metadata.annotations) ?? 0;
  if (costA !== costB) return less(costA < costB);
  if (rankA !== rankB) return less(rankA > rankB);
  const byUid = () => less(a.metadata.uid < b.metadata.uid);
  if (readyA && isPodReady(b)) {
    const [t1, t2] = [readyTime(a), readyTime(b)];
    if (t1 !== t2) {
      if (t1 === 0 || t2 === 0) return less(afterOrZero(t1, t2));
      const diff = logRankDiff(t1, t2, now);
      return diff === 0 ? byUid() : less(diff < 0);
    }
  }
  const [regularA, sidecarA] = maxRestarts(a);
  const [regularB, sidecarB] = maxRestarts(b);
  if (regularA !== regularB) return less(regularA > regularB);
  if (sidecarA !== sidecarB) return less(sidecarA > sidecarB);
  const [c1, c2] = [
    Date.parse(a.metadata.creationTimestamp) || 0,
    Date.parse(b.metadata.creationTimestamp) || 0,
  ];
  if (c1 !== c2) {
    if (c1 === 0 || c2 === 0) return less(afterOrZero(c1, c2));
    const diff = logRankDiff(c1, c2, now);
    return diff === 0 ? byUid() : less(diff < 0);
  }
  return 0;
}

/**
 * The `count` pods of `pods` (a ReplicaSet's active ones) to delete, in order; `related`: the active pods of
 * every ReplicaSet of the same owner, whose count on a pod's node ranks it.
 */
export function podsToDelete(pods: any[], related: any[], count: number, now = Date.now()): any[] {
  if (count >= pods.length) return [...pods];
  const onNode = new Map<string, number>();
  for (const p of related)
    if (isPodActive(p)) onNode.set(p.spec?.nodeName ?? '', (onNode.get(p.spec?.nodeName ?? '') ?? 0) + 1);
  const rank = (p: any) => onNode.get(p.spec?.nodeName ?? '') ?? 0;
  return [...pods].sort((a, b) => compare(a, b, rank(a), rank(b), now)).slice(0, count);
}
