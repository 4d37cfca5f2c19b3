// A queue's parked jobs indexed by why they wait, so that a release visits only the jobs it can
// wake instead of every parked job of its tree (wake.ts): 'quota' jobs sorted by the GPU need of
// each flavor option (a release visits the prefix its available GPU quota reaches), 'node' jobs
// per flavor their pod sets may use (a release of a flavor's nodes visits only those). The index
// only narrows whom the wake predicates are evaluated on: they, and so the decisions, are unchanged.
import { GPU } from './quota.js';
import type { JobState, QueueState } from './state.js';

/** One flavor option of a 'quota' job: `key` is its GPU need (−∞ when GPU is not quota-limited there). */
interface NeedEntry {
  key: number;
  seq: number;
  job: JobState;
}

export interface ParkIndex {
  /** A partition of the queue's `parked` set by `parkKind` (which does not change while a job is parked). */
  byKind: Record<JobState['parkKind'], Set<JobState>>;
  /** 'quota' jobs, per flavor option, ascending by (key, parkSeq). */
  quotaNeeds: Map<string, NeedEntry[]>;
  /** 'node' jobs, per flavor one of their pod sets may use. */
  nodeByFlavor: Map<string, Set<JobState>>;
  /** Gives each parking its `parkSeq`. */
  seq: number;
}

export function newParkIndex(): ParkIndex {
  return { byKind: { any: new Set(), quota: new Set(), node: new Set(), never: new Set() }, quotaNeeds: new Map(), nodeByFlavor: new Map(), seq: 0 };
}

/** First position whose entry is not before (key, seq). */
function lowerBound(list: NeedEntry[], key: number, seq: number): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    const e = list[mid] as NeedEntry;
    if (e.key < key || (e.key === key && e.seq < seq)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function podSetFlavors(j: JobState): Set<string> {
  const fs = new Set<string>();
  for (const ps of j.podSets) for (const f of ps.flavors) fs.add(f);
  return fs;
}

/** Parks `j` in its queue under its current `parkKind` and `parkNeeds` (neither may change until it leaves). */
export function addParked(q: QueueState, j: JobState): void {
  const ix = q.parkIndex;
  q.parked.add(j);
  j.parked = true;
  j.parkSeq = ++ix.seq;
  ix.byKind[j.parkKind].add(j);
  if (j.parkKind === 'quota') {
    for (const d of j.parkNeeds) {
      let list = ix.quotaNeeds.get(d.flavor);
      if (!list) {
        list = [];
        ix.quotaNeeds.set(d.flavor, list);
      }
      const key = d.need[GPU] as number;
      list.splice(lowerBound(list, key, j.parkSeq), 0, { key, seq: j.parkSeq, job: j });
    }
  } else if (j.parkKind === 'node') {
    for (const f of podSetFlavors(j)) {
      let set = ix.nodeByFlavor.get(f);
      if (!set) {
        set = new Set();
        ix.nodeByFlavor.set(f, set);
      }
      set.add(j);
    }
  }
}

export function deleteParked(q: QueueState, j: JobState): void {
  const ix = q.parkIndex;
  q.parked.delete(j);
  j.parked = false;
  ix.byKind[j.parkKind].delete(j);
  if (j.parkKind === 'quota') {
    for (const d of j.parkNeeds) {
      const list = ix.quotaNeeds.get(d.flavor) as NeedEntry[];
      const i = lowerBound(list, d.need[GPU] as number, j.parkSeq);
      if (list[i]?.job === j) list.splice(i, 1);
    }
  } else if (j.parkKind === 'node') {
    for (const f of podSetFlavors(j)) ix.nodeByFlavor.get(f)?.delete(j);
  }
}

/** Every job leaves the parked set (a configuration change wakes them all). */
export function clearParked(q: QueueState): void {
  for (const j of q.parked) j.parked = false;
  q.parked.clear();
  const ix = q.parkIndex;
  for (const set of Object.values(ix.byKind)) set.clear();
  ix.quotaNeeds.clear();
  ix.nodeByFlavor.clear();
}

/**
 * The 'quota' jobs that may have an option whose GPU need is within `gpuAvail(flavor)`: a superset
 * of those whose need is met (each is in the list of the option that meets it, within the prefix).
 */
export function quotaWakeCandidates(q: QueueState, gpuAvail: (flavor: string) => number): JobState[] {
  const out: JobState[] = [];
  for (const [f, list] of q.parkIndex.quotaNeeds) {
    if (list.length === 0) continue;
    const a = gpuAvail(f);
    for (const e of list) {
      if (e.key > a) break;
      out.push(e.job);
    }
  }
  return out;
}
