// The pods of one run (one admission of a Fairway job) as the log readers name them: their pod set
// and index. The pod set is the pod's `fairway.dev/pod-set` label; the index is what its controller
// says (a JobSet's completion index, a PyTorchJob's replica index, a Ray head; an Indexed Job's
// completion index), or, where nothing says (a Ray worker, a one-pod Job), a stable order. Only pods
// of the run's namespace with the run's admission count: another tenant's pod never is one.
import type { V1Pod } from '@kubernetes/client-node';
import type { BackendLogPod } from '../port.js';
import { ANNOTATION_ADMISSION, LABEL_POD_SET, labelValue } from './naming.js';
import { CUSTOM_WORKLOADS } from './workload-kinds.js';

const COMPLETION_INDEX = 'batch.kubernetes.io/job-completion-index';

export interface RunScope {
  namespace: string;
  /** String(admission.at): the pods' admission annotation. */
  admissionAt: string;
  /** The run's pod sets in the job's order, with their admitted pod counts. */
  podSets: readonly { name: string; count: number }[];
}

export interface RunPod {
  position: BackendLogPod;
  pod: V1Pod;
  /**
   * The newest pod at its position: a pod retried in place (a new pod for the same index, or for a
   * one-pod Job) leaves the old one behind, which only the archive still reads.
   */
  current: boolean;
}

const createdAt = (p: V1Pod) => String(toIso(p.metadata?.creationTimestamp) ?? '');
const byAge = (a: V1Pod, b: V1Pod) =>
  createdAt(a).localeCompare(createdAt(b)) ||
  String(a.metadata?.name).localeCompare(String(b.metadata?.name));

/** Timestamps are Dates in listed objects and strings in watched ones (client-node deserializes only lists). */
export function toIso(value: Date | string | undefined): string | undefined {
  if (value === undefined || value === null) return undefined;
  return value instanceof Date ? value.toISOString() : String(value);
}

function explicitIndex(pod: V1Pod): number | null {
  for (const workload of Object.values(CUSTOM_WORKLOADS)) {
    const position = workload.podPosition(pod);
    if (position) return position.index;
  }
  const raw =
    pod.metadata?.annotations?.[COMPLETION_INDEX] ?? pod.metadata?.labels?.[COMPLETION_INDEX] ?? undefined;
  return raw !== undefined && /^\d+$/.test(raw) ? Number(raw) : null;
}

/** Every pod of the run with its position, in pod set order then index then age. */
export function runPods(pods: Iterable<V1Pod>, scope: RunScope): RunPod[] {
  const bySet = new Map<string, V1Pod[]>();
  for (const pod of pods) {
    const meta = pod.metadata;
    if (meta?.namespace !== scope.namespace || meta.annotations?.[ANNOTATION_ADMISSION] !== scope.admissionAt)
      continue;
    const label = meta.labels?.[LABEL_POD_SET];
    const podSet = scope.podSets.find((s) => labelValue(s.name) === label);
    if (!podSet) continue;
    let list = bySet.get(podSet.name);
    if (!list) bySet.set(podSet.name, (list = []));
    list.push(pod);
  }
  const out: RunPod[] = [];
  for (const podSet of scope.podSets) {
    const pods = (bySet.get(podSet.name) ?? []).sort(byAge);
    const placed: { index: number; pod: V1Pod }[] = [];
    const unindexed: V1Pod[] = [];
    for (const pod of pods) {
      const index = explicitIndex(pod);
      if (index === null) unindexed.push(pod);
      else placed.push({ index, pod });
    }
    // Pods no controller numbers take the indexes left, oldest first; replacements wrap around, so
    // the newest pod at an index is the one that runs now.
    const taken = new Set(placed.map((p) => p.index));
    const free = Array.from({ length: Math.max(podSet.count, 1) }, (_v, i) => i).filter((i) => !taken.has(i));
    if (free.length === 0) free.push(Math.max(podSet.count, 1));
    unindexed.forEach((pod, i) => placed.push({ index: free[i % free.length]!, pod }));
    const newest = new Map<number, V1Pod>();
    for (const p of placed) newest.set(p.index, p.pod); // oldest first: the last one wins
    placed.sort((a, b) => a.index - b.index || byAge(a.pod, b.pod));
    for (const p of placed)
      out.push({
        position: { podSet: podSet.name, index: p.index },
        pod: p.pod,
        current: newest.get(p.index) === p.pod,
      });
  }
  return out;
}

export function samePosition(a: BackendLogPod, b: BackendLogPod): boolean {
  return a.podSet === b.podSet && a.index === b.index;
}

/** The container whose log is the pod's: the first (Fairway's main container in every kind). */
export function mainContainer(pod: V1Pod): string | undefined {
  return pod.spec?.containers?.[0]?.name;
}

function mainStatus(pod: V1Pod) {
  const name = mainContainer(pod);
  return pod.status?.containerStatuses?.find((s) => s.name === name);
}

/** Whether the pod's output is complete: it ended, or its main container ended and will not run again. */
export function podOver(pod: V1Pod): boolean {
  const phase = pod.status?.phase;
  if (phase === 'Succeeded' || phase === 'Failed') return true;
  const terminated = mainStatus(pod)?.state?.terminated;
  if (!terminated) return false;
  const policy = pod.spec?.restartPolicy ?? 'Always';
  return policy === 'Never' || (policy === 'OnFailure' && terminated.exitCode === 0);
}

/** Whether the pod's output ends now: it is over, or it is being stopped after it started. */
export function podEnding(pod: V1Pod): boolean {
  if (podOver(pod)) return true;
  if (!pod.metadata?.deletionTimestamp) return false;
  const status = mainStatus(pod);
  return Boolean(status?.state?.running || status?.state?.terminated || status?.lastState?.terminated);
}
