// Wake-ups: which parked jobs a change can help. A release wakes, in its quota tree only, the
// jobs whose need the available quota now meets and node waiters whose pods fit a released node;
// configuration changes wake everything.
import { fitsPod, flavorPodCapacity, type NodeState } from './nodes.js';
import { clearParked, deleteParked, visitNodeCandidates, visitQuotaCandidates } from './park-index.js';
import { available, GPU, RESOURCE_COUNT } from './quota.js';
import type { CoreState, JobState, QueueState } from './state.js';

export function wakeQueue(core: CoreState, q: QueueState): void {
  if (q.parked.size > 0) {
    const all = [...q.parked];
    clearParked(q);
    for (const j of all) {
      j.parkKind = 'any'; // configuration may have changed: what it needed is no longer known
      q.heap.push(j);
    }
  }
  q.blocked = false;
  if (q.heap.size > 0) core.active.add(q);
}

/** Unparks the parked jobs of `q` that `pred` selects; a StrictFIFO head gets another try. */
export function wakeQueueIf(core: CoreState, q: QueueState, pred: (j: JobState) => boolean): void {
  for (const j of q.parked) {
    if (!pred(j)) continue;
    deleteParked(q, j, true);
    q.heap.push(j);
  }
  reactivate(core, q);
}

/** Unparks `j` (a job of `q`) if it is still parked and `pred` selects it; the caller ends with `reactivate`. */
function wakeIf(q: QueueState, j: JobState, pred: (j: JobState) => boolean): void {
  if (!j.parked || !pred(j)) return;
  deleteParked(q, j, true);
  q.heap.push(j);
}

/** Unparks the queue's parked 'any' jobs (every release wakes them). */
function wakeAny(q: QueueState): void {
  for (const j of q.parkIndex.any) {
    deleteParked(q, j, true);
    q.heap.push(j);
  }
}

/** As after `wakeQueueIf`: a StrictFIFO head gets another try, and the queue is looked at if it has a head. */
function reactivate(core: CoreState, q: QueueState): void {
  q.blocked = false;
  if (q.heap.size > 0) core.active.add(q);
}

/**
 * Node capacity came free on `nodes` (null: unknown, e.g. a configuration change). A job parked
 * for lack of nodes can only gain if one of its pods now fits one of those nodes (nodes gain
 * capacity only through releases), so only those are retried.
 */
export function wakeFlavor(core: CoreState, f: string, nodes: NodeState[] | null): void {
  const ws = core.flavorWaiters.get(f);
  if (!ws || ws.size === 0) return;
  const gains = (j: JobState): boolean => {
    if (j.parkKind === 'any' || nodes === null) return true;
    if (j.parkKind !== 'node') return false;
    for (const ps of j.podSets) {
      if (!ps.flavors.includes(f)) continue;
      for (const n of nodes)
        if (n.flavor.spec.name === f && fitsPod(n, ps.shape)) {
          j.wakeNodes = nodes;
          return gangCouldFit(core, j);
        }
    }
    return false;
  };
  // A pod fits a node only if the node has at least its GPU free: node waiters whose smallest GPU
  // pod on f is above what the released nodes of f have free cannot gain (park-index.ts).
  let maxFreeGpu = Number.NEGATIVE_INFINITY;
  if (nodes !== null)
    for (const n of nodes) if (n.flavor.spec.name === f) maxFreeGpu = Math.max(maxFreeGpu, n.freeGpuTotal);
  for (const q of [...ws]) {
    if (nodes === null) wakeQueueIf(core, q, gains);
    else {
      // gains() is true for 'any' jobs, false for 'quota' and 'never' ones: only node waiters of f are
      // tested.
      wakeAny(q);
      if (q.parkIndex.nodeCount > 0) visitNodeCandidates(q, f, maxFreeGpu, (j) => wakeIf(q, j, gains));
      reactivate(core, q);
    }
    if (q.parkIndex.nodeCount === 0) ws.delete(q);
  }
}

/**
 * Capacity came free in this queue's tree and on these nodes. Only jobs that can gain are
 * retried: node waiters whose pods now fit a released node, and quota waiters whose queue's
 * available quota now reaches what they need (their request minus what their preemption
 * candidates could release).
 */
export function wakeAfterRelease(
  core: CoreState,
  q: QueueState,
  freed: Map<string, number[]>,
  nodes: NodeState[],
): void {
  for (const other of core.treeQueues.get(q.root) ?? []) {
    if (other.parked.size > 0 || other.blocked) {
      // needMet() is true for 'any' jobs, false for 'node' and 'never' ones: only 'quota' jobs are
      // tested, and of those only the ones the available GPU quota could reach (park-index.ts).
      const ix = other.parkIndex;
      wakeAny(other);
      if (ix.quotaCount > 0) {
        const avail = new Map<string, number[]>(); // per flavor, computed once per queue
        const met = (j: JobState): boolean => needMet(j, avail);
        visitQuotaCandidates(
          other,
          (f) => availOf(other, f, avail)[GPU] as number,
          (j) => wakeIf(other, j, met),
        );
      }
      reactivate(core, other);
    }
  }
  for (const f of freed.keys()) wakeFlavor(core, f, nodes);
}

export function needMet(j: JobState, avail: Map<string, number[]>): boolean {
  if (j.parkKind === 'any') return true;
  if (j.parkKind !== 'quota') return false;
  const q = j.queue;
  for (const d of j.parkNeeds) {
    const a = availOf(q, d.flavor, avail);
    let ok = true;
    for (let r = 0; r < RESOURCE_COUNT && ok; r++) ok = (d.need[r] as number) <= (a[r] as number);
    if (ok) return true;
  }
  return false;
}

/** The queue's available quota on `flavor`, per resource, computed once per `avail` map. */
function availOf(q: QueueState, flavor: string, avail: Map<string, number[]>): number[] {
  let a = avail.get(flavor);
  if (!a) {
    a = [available(q.node, flavor, 0), available(q.node, flavor, 1), available(q.node, flavor, 2)];
    avail.set(flavor, a);
  }
  return a;
}

export function canPreempt(q: QueueState): boolean {
  return (
    q.withinQueue !== 'Never' ||
    (q.node.parent !== null && (q.reclaim !== 'Never' || q.borrowPolicy !== 'Never'))
  );
}

/** A woken job that is still short of what it waited for (quota need or node room). */
export function stillShort(core: CoreState, j: JobState): boolean {
  return (
    (j.parkKind === 'quota' && !quotaNeedMetNow(j)) || (j.parkKind === 'node' && !wakeNodesStillFit(core, j))
  );
}

/** `needMet` of a 'quota' job against the quota of now, computing only the resources its need limits (an unlimited one is −∞, met by any amount). */
export function quotaNeedMetNow(j: JobState): boolean {
  const node = j.queue.node;
  for (const d of j.parkNeeds) {
    let ok = true;
    for (let r = 0; r < RESOURCE_COUNT && ok; r++) {
      const need = d.need[r] as number;
      if (need !== Number.NEGATIVE_INFINITY) ok = need <= available(node, d.flavor, r);
    }
    if (ok) return true;
  }
  return false;
}

export function wakeNodesStillFit(core: CoreState, j: JobState): boolean {
  if (!j.wakeNodes) return true;
  for (const n of j.wakeNodes)
    for (const ps of j.podSets)
      if (ps.flavors.includes(n.flavor.spec.name) && fitsPod(n, ps.shape)) return gangCouldFit(core, j);
  return false;
}

/** Necessary for a node waiter: every pod set has room for its gang minimum on some flavor's free nodes
 * (counted over nodes with free GPU, so cheap when the cluster is full).
 */
export function gangCouldFit(core: CoreState, j: JobState): boolean {
  for (const ps of j.podSets) {
    let ok = false;
    for (const f of ps.flavors) {
      const fs = core.flavors.get(f);
      if (fs && flavorPodCapacity(fs, ps.shape, ps.minCount) >= ps.minCount) {
        ok = true;
        break;
      }
    }
    if (!ok) return false;
  }
  return true;
}
