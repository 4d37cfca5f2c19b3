// A queue's parked jobs indexed by why they wait, so that a release visits only the jobs it can
// wake instead of every parked job of its tree (wake.ts): 'quota' jobs per flavor option sorted
// by that option's GPU need (a release visits the prefix its available GPU quota reaches), 'node'
// jobs per flavor sorted by their GPU per pod there (a node release visits the prefix the released
// nodes' free GPU reaches). The index only narrows whom the wake predicates are
// evaluated on: the predicates, and so the decisions, are unchanged.
import { GPU } from './quota.js';
import type { JobState, QueueState } from './state.js';

/** A job in one flavor's list: `key` is a lower bound of what it needs there (GPU); `seq` its `parkSeq`. */
interface Entry {
  key: number;
  seq: number;
  job: JobState;
}

export interface ParkIndex {
  /** The queue's parked 'any' jobs (every release wakes them). */
  any: Set<JobState>;
  /** How many of the queue's parked jobs are of each other kind (`parkKind` does not change while a job is parked). */
  quotaCount: number;
  nodeCount: number;
  /** 'quota' jobs per flavor option, ascending by (GPU need of the option, parkSeq); −∞ when GPU is not
   * quota-limited there.
   */
  quotaNeeds: Map<string, Entry[]>;
  /** 'node' jobs per flavor one of their pod sets may use, ascending by (GPU per pod of that pod set,
   * parkSeq).
   */
  nodeWaits: Map<string, Entry[]>;
  /** Gives each job that gets index entries its `parkSeq` (0: it has none). */
  seq: number;
}

export function newParkIndex(): ParkIndex {
  return { any: new Set(), quotaCount: 0, nodeCount: 0, quotaNeeds: new Map(), nodeWaits: new Map(), seq: 0 };
}

/** First position whose entry is not before (key, seq). */
function lowerBound(list: Entry[], key: number, seq: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const e = list[mid] as Entry;
    if (e.key < key || (e.key === key && e.seq < seq)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function insert(lists: Map<string, Entry[]>, flavor: string, key: number, j: JobState): void {
  let list = lists.get(flavor);
  if (!list) {
    list = [];
    lists.set(flavor, list);
  }
  list.splice(lowerBound(list, key, j.parkSeq), 0, { key, seq: j.parkSeq, job: j });
}

function remove(lists: Map<string, Entry[]>, flavor: string, key: number, j: JobState): void {
  const list = lists.get(flavor);
  if (!list) return;
  const i = lowerBound(list, key, j.parkSeq);
  if (list[i]?.job === j) list.splice(i, 1);
}

/**
 * Parks `j` in its queue under its current `parkKind` and `parkNeeds` (neither may change while it
 * is parked). A job re-parked untried keeps the entries it had (see `deleteParked`).
 */
export function addParked(q: QueueState, j: JobState): void {
  const ix = q.parkIndex;
  q.parked.add(j);
  j.parked = true;
  if (j.parkKind === 'any') ix.any.add(j);
  else if (j.parkKind === 'quota') ix.quotaCount++;
  else if (j.parkKind === 'node') ix.nodeCount++;
  if (j.parkSeq !== 0 || (j.parkKind !== 'quota' && j.parkKind !== 'node')) return;
  j.parkSeq = ++ix.seq;
  if (j.parkKind === 'quota')
    for (const d of j.parkNeeds) insert(ix.quotaNeeds, d.flavor, d.need[GPU] as number, j);
  else for (const ps of j.podSets) for (const f of ps.flavors) insert(ix.nodeWaits, f, ps.shape.gpu, j);
}

/**
 * Out of the parked set. A woken job (`keepEntries`) keeps its index entries while it waits in the
 * heap — the scans skip jobs that are not parked — so that re-parking it untried (the capacity it
 * woke for was taken first) costs no index update; `dropEntries` removes them when it is admitted,
 * leaves, or is parked again with a new reason.
 */
export function deleteParked(q: QueueState, j: JobState, keepEntries = false): void {
  const ix = q.parkIndex;
  q.parked.delete(j);
  j.parked = false;
  if (j.parkKind === 'any') ix.any.delete(j);
  else if (j.parkKind === 'quota') ix.quotaCount--;
  else if (j.parkKind === 'node') ix.nodeCount--;
  if (!keepEntries) dropEntries(q, j);
}

/** Removes `j`'s index entries (made under its current `parkKind`, `parkNeeds` and pod sets, which do not change while it has entries). */
export function dropEntries(q: QueueState, j: JobState): void {
  if (j.parkSeq === 0) return;
  const ix = q.parkIndex;
  if (j.parkKind === 'quota')
    for (const d of j.parkNeeds) remove(ix.quotaNeeds, d.flavor, d.need[GPU] as number, j);
  else if (j.parkKind === 'node')
    for (const ps of j.podSets) for (const f of ps.flavors) remove(ix.nodeWaits, f, ps.shape.gpu, j);
  j.parkSeq = 0;
}

/** Every job leaves the parked set (a configuration change wakes them all). */
export function clearParked(q: QueueState): void {
  for (const j of q.parked) j.parked = false;
  q.parked.clear();
  const ix = q.parkIndex;
  for (const lists of [ix.quotaNeeds, ix.nodeWaits])
    for (const list of lists.values()) for (const e of list) e.job.parkSeq = 0;
  ix.any.clear();
  ix.quotaCount = 0;
  ix.nodeCount = 0;
  ix.quotaNeeds.clear();
  ix.nodeWaits.clear();
}

/**
 * Calls `visit` on every 'quota' job with an option whose GPU need is within `gpuAvail(flavor)`: a
 * superset of those whose need is met (each is in the list of the option that meets it, within the
 * prefix), including woken jobs that kept their entries (not parked: the caller skips them). A job
 * with several options may be visited more than once. `visit` must not park or drop entries.
 */
export function visitQuotaCandidates(
  q: QueueState,
  gpuAvail: (flavor: string) => number,
  visit: (j: JobState) => void,
): void {
  for (const [f, list] of q.parkIndex.quotaNeeds) {
    if (list.length === 0) continue;
    const max = gpuAvail(f);
    for (const e of list) {
      if (e.key > max) break;
      visit(e.job);
    }
  }
}

/** Likewise for the 'node' jobs of flavor `f` with a pod set there whose GPU per pod is at most `maxFreeGpu` (a superset of those a pod of which fits a node with that much free GPU). */
export function visitNodeCandidates(
  q: QueueState,
  f: string,
  maxFreeGpu: number,
  visit: (j: JobState) => void,
): void {
  const list = q.parkIndex.nodeWaits.get(f);
  if (!list) return;
  for (const e of list) {
    if (e.key > maxFreeGpu) break;
    visit(e.job);
  }
}
