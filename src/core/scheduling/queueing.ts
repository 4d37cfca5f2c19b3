// Pending lists: enqueue/dequeue (heap per queue plus the shape index), park a job with why it
// waits (which decides what wakes it), and the memo of failed preemption searches.
import type { Fail } from './assignment/plan.js';
import { nominalOnly } from './assignment/quota-mode.js';
import { addParked, deleteParked, dropEntries } from './park-index.js';
import { addPendingShapes, removePendingShapes } from './pending-shapes.js';
import { RESOURCE_COUNT } from './quota.js';
import type { CoreState, JobState, PodSetState, QueueState } from './state.js';
import { canPreempt, quotaNeedMetNow } from './wake.js';

/** Into its queue's heap (and the pending shape index). */
export function enqueue(core: CoreState, j: JobState): void {
  core.pendingVersion++;
  j.status = 'pending';
  j.queue.heap.push(j);
  addPendingShapes(core, j);
}

/** Out of its queue's heap or parked set (and the pending shape index). */
export function dequeue(core: CoreState, j: JobState): void {
  core.pendingVersion++;
  const q = j.queue;
  q.heap.remove(j);
  if (j.parked) deleteParked(q, j);
  else dropEntries(q, j); // woken, waiting in the heap
  removePendingShapes(core, j);
}

/**
 * A new (or returning) pending job joins its queue: into the heap, and the queue gets a look at the
 * next cycle. A StrictFIFO queue blocked behind its head stays blocked unless this job is the new head.
 */
export function joinQueue(core: CoreState, j: JobState): void {
  enqueue(core, j);
  const q = j.queue;
  if (q.strategy === 'StrictFIFO' && q.blocked) {
    // A new job that overtakes the blocked head becomes the head: give it its try.
    if (q.heap.peek() === j) {
      q.blocked = false;
      core.active.add(q);
    }
  } else {
    core.active.add(q);
  }
}

/** A pending job leaves its queue (cancelled, finished, or held); a StrictFIFO queue blocked behind it gets
 * its next head tried.
 */
export function withdraw(core: CoreState, j: JobState): void {
  const q = j.queue;
  const wasHead = q.heap.peek() === j;
  dequeue(core, j);
  if (wasHead && q.blocked) {
    q.blocked = false;
    if (q.heap.size > 0) core.active.add(q);
  }
}

export function park(core: CoreState, j: JobState, fail: Fail | null, keepClass = false): void {
  const q = j.queue;
  if (j.parked) deleteParked(q, j); // its kind and needs may change below
  // Re-parked untried with the same reason: the index entries it kept while woken are valid again.
  if (!keepClass) dropEntries(q, j);
  if (!keepClass) classifyPark(j, fail);
  j.wakeNodes = null;
  const waitFlavors = keepClass && j.parkKind === 'node' ? null : (fail?.waitFlavors ?? []);
  q.heap.remove(j);
  addParked(q, j);
  if (waitFlavors) for (const f of waitFlavors) waitOn(core, f, q);
  if (j.parkKind === 'node' && (waitFlavors === null || waitFlavors.length === 0))
    for (const p of j.podSets) for (const f of p.flavors) waitOn(core, f, q);
  if (q.heap.size === 0) core.active.delete(q);
}

export function knownPreemptFail(core: CoreState, j: JobState): Map<string, number[]> | undefined {
  const q = j.queue;
  if (j.podSets.length !== 1 || q.preemptFails.length === 0) return undefined;
  const ps = j.podSets[0] as PodSetState;
  const key = ps.flavors.join(',');
  for (const m of q.preemptFails) {
    if (m.version !== core.stateVersion || m.flavors !== key) continue;
    if (
      ps.shape.gpu >= m.shape.gpu &&
      ps.shape.cpu >= m.shape.cpu &&
      ps.shape.mem >= m.shape.mem &&
      ps.minCount >= m.minCount &&
      j.priority <= m.priority &&
      nominalOnly(j) === m.nominalOnly &&
      j.spec.submitTime >= m.submit
    )
      return m.releasable;
  }
  return undefined;
}

export function rememberPreemptFail(core: CoreState, j: JobState): void {
  const q = j.queue;
  if (j.podSets.length !== 1 || !j.releasable) return;
  const ps = j.podSets[0] as PodSetState;
  const fails = q.preemptFails.filter((m) => m.version === core.stateVersion);
  fails.push({
    version: core.stateVersion,
    flavors: ps.flavors.join(','),
    shape: ps.shape,
    minCount: ps.minCount,
    priority: j.priority,
    submit: j.spec.submitTime,
    nominalOnly: nominalOnly(j),
    releasable: j.releasable,
  });
  q.preemptFails = fails.slice(-8);
}

/** Records why a job is parked and, for quota waits, how much must be released in its tree before a retry
 * can succeed.
 */
export function classifyPark(j: JobState, fail: Fail | null): void {
  j.parkNeeds = [];
  if (!fail) {
    j.parkKind = 'any';
    return;
  }
  if (fail.reason === 'NoFittingNode' || fail.reason === 'NoNodeFits') {
    // Another flavor waits for quota: a release there may admit it, so any release wakes it.
    j.parkKind = fail.quotaWaitToo ? 'any' : 'node';
    return;
  }
  if (fail.reason === 'ExceedsMaxQuota' || fail.reason === 'WindowClosed') {
    j.parkKind = 'never';
    return;
  }
  const ps = j.podSets[0] as PodSetState;
  const q = j.queue;
  if (j.podSets.length !== 1) {
    j.parkKind = 'any';
    return;
  }
  // The smallest request the job could be admitted with (gang minimum).
  const vec = [ps.shape.gpu * ps.minCount, ps.shape.cpu * ps.minCount, ps.shape.mem * ps.minCount];
  for (const f of ps.flavors) {
    const fq = q.node.flavors.get(f);
    if (!fq) continue;
    const releasable = j.releasable?.get(f);
    // (A job that is never preempted can always preempt: its queue's own preemptible jobs, candidates.ts.)
    if (!releasable && (canPreempt(q) || nominalOnly(j))) {
      j.parkKind = 'any'; // this option was not searched for victims: no bound on what a retry needs
      return;
    }
    // The available quota at which a retry could succeed (by fitting, or by preempting the candidates it
    // had).
    const need = [Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY, Number.NEGATIVE_INFINITY];
    for (let r = 0; r < RESOURCE_COUNT; r++) {
      if (!fq.declared[r]) continue;
      need[r] = (vec[r] as number) - ((releasable?.[r] as number | undefined) ?? 0);
    }
    j.parkNeeds.push({ flavor: f, need });
  }
  j.parkKind = 'quota';
  // The quota numbers say it could fit (by preempting what it found) yet it did not: nodes are what
  // it waits for (its victims' GPUs do not make room for its pods). Not so for a job that is never
  // preempted: it may also wait for its queue's guaranteed usage to leave it room in the nominal
  // (guaranteed.ts), which the available quota does not show, so any release in its tree retries it.
  if (quotaNeedMetNow(j)) j.parkKind = nominalOnly(j) ? 'any' : 'node';
}

export function waitOn(core: CoreState, f: string, q: QueueState): void {
  let s = core.flavorWaiters.get(f);
  if (!s) {
    s = new Set();
    core.flavorWaiters.set(f, s);
  }
  s.add(q);
}
