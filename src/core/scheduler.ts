// The fair-share scheduler core. Pure: no I/O, no timers; time comes from the injected Clock.
// Phases of a cycle (see README.md): heads → snapshot → nominate → order → admit/preempt → requeue.
import { removeNode, upsertCohort, upsertFlavor, upsertNode, upsertQueue } from './configure.js';
import { SchedulerInputError } from './errors.js';
import { ETA_MAX_JOBS, type EtaResult, simulateEtas } from './eta.js';
import { buildJob, cancel, finish, submit } from './jobs.js';
import { type FlavorState, isFractional, type NodeState, type PodAlloc, reapplyAlloc, releaseAlloc } from './nodes.js';
import { pendingShapes } from './pending-shapes.js';
import { anyOverNominal, historyAt, historyChange, nominalOf, overNominal, usageOf, weightedShare, withinNominal } from './queue-usage.js';
import { dequeue, enqueue, knownPreemptFail, park, rememberPreemptFail, waitOn } from './queueing.js';
import { convertQuotas, rebuildQuotas, refreshWindows } from './quota-config.js';
import { available, CPU, GPU, MEM, potentialAvailable, QuotaNode, RESOURCE_COUNT } from './quota.js';
import { type CoreState, createCoreState, type JobState, type PodSetState, queueLess, type QueueState, type TreeView } from './state.js';
import { chargeQueue, rollback, tCharge, tPlace, tReadd, tRelease } from './trail.js';
import type { Admission, AdmissionMode, CohortSpec, CycleResult, FlavorSpec, JobExplanation, JobSpec, NodeFit, NodeSpec, NodeStatus, PendingDecision, PendingReasonCode, PendingShape, PodPlacement, Preemption, PreemptionReason, Preview, QueueResourceStatus, QueueSpec, QueueStatus, QuotaShortfall, ResourceName, RestoredAdmission, SchedulerOptions } from './types.js';
import { addVec, gpuOf, mapToObj, RES, structuredCloneSpec, toApi } from './units.js';
import { needMet, stillShort, wakeAfterRelease, wakeQueueIf } from './wake.js';
export { DEFAULT_PRIORITY_CLASSES } from './state.js';

// Assignment modes, ordered from best to worst.
export const FIT = 0;
export const BORROW = 1;
export const PREEMPT = 2;
export const PREEMPT_BORROW = 3;
export const NOFIT = 4;

export interface PodSetPlan {
  ps: PodSetState;
  flavor: string;
  count: number;
  allocs: PodAlloc[];
}

export interface Plan {
  ok: true;
  parts: PodSetPlan[];
  usage: Map<string, number[]>;
  victims: { job: JobState; reason: PreemptionReason }[];
  mode: AdmissionMode;
  borrowed: boolean;
}

export interface Fail {
  ok: false;
  reason: PendingReasonCode;
  message: string;
  shortfall?: QuotaShortfall;
  nodeFit?: NodeFit[];
  waitFlavors: string[];
}

export interface Candidate {
  job: JobState;
  other: boolean;
  reclaimOk: boolean;
  borrowOk: boolean;
}

/** Groups per-pod allocations by node, in placement order. */
export function groupPlacements(allocs: PodAlloc[]): PodPlacement[] {
  const out: PodPlacement[] = [];
  let cur: PodPlacement | null = null;
  let curNode: NodeState | null = null;
  for (const a of allocs) {
    if (a.node !== curNode) {
      cur = { node: a.node.spec.name, pods: 0 };
      out.push(cur);
      curNode = a.node;
    }
    const c = cur as PodPlacement;
    c.pods++;
    if (a.gpus.length > 0) (c.gpuIndices ??= []).push(...a.gpus);
  }
  return out;
}

export function eligibleFor(job: JobState): (n: NodeState) => boolean {
  const tenant = job.spec.tenant;
  const q = job.queue;
  const pool = q.spec.dedicatedPool;
  const dedicatedOnly = q.isolation === 'DEDICATED' && pool === undefined;
  return (n) => {
    const t = n.spec.dedicatedTenant;
    if (t !== undefined && t !== tenant) return false;
    if (pool !== undefined && n.spec.pool !== pool) return false;
    if (dedicatedOnly && t !== tenant) return false;
    return true;
  };
}

export function shortfall(q: QueueState, f: string, r: number, requested: number): QuotaShortfall {
  const fq = q.node.flavors.get(f);
  const bl = fq?.borrowingLimit[r];
  const s: QuotaShortfall = {
    flavor: f,
    resource: RES[r] as ResourceName,
    requested: toApi(r, requested),
    available: fq ? toApi(r, Math.max(0, available(q.node, f, r))) : 0,
    nominal: fq ? toApi(r, fq.nominal[r] as number) : 0,
    used: fq ? toApi(r, fq.usage[r] as number) : 0,
    maxAvailable: fq ? toApi(r, potentialAvailable(q.node, f, r)) : 0,
  };
  if (bl !== null && bl !== undefined) s.borrowingLimit = toApi(r, bl);
  return s;
}

/**
 * Quota mode of adding `vec` on flavor f to the queue, given what this job already charged
 * (`jobCharged`, counted in `available` but not in `potentialAvailable`).
 */
export function quotaMode(q: QueueState, f: string, vec: readonly number[], jobCharged: readonly number[] | undefined): { mode: number; r: number; requested: number } {
  const fq = q.node.flavors.get(f);
  if (!fq || !q.node.own.has(f)) return { mode: NOFIT, r: GPU, requested: vec[GPU] as number };
  let mode = FIT;
  let worstR = -1;
  for (let r = 0; r < RESOURCE_COUNT; r++) {
    const x = vec[r] as number;
    if (x === 0 || !fq.declared[r]) continue;
    const total = x + (jobCharged ? (jobCharged[r] as number) : 0);
    let m: number;
    if (total > potentialAvailable(q.node, f, r)) m = NOFIT;
    else {
      const borrow = (fq.usage[r] as number) + x > (fq.nominal[r] as number);
      if (x <= available(q.node, f, r)) m = borrow ? BORROW : FIT;
      else m = borrow ? PREEMPT_BORROW : PREEMPT;
    }
    if (m > mode || worstR < 0) {
      mode = Math.max(mode, m);
      worstR = r;
    }
  }
  const r = worstR < 0 ? GPU : worstR;
  return { mode, r, requested: (vec[r] as number) + (jobCharged ? (jobCharged[r] as number) : 0) };
}

/**
 * Fit → Borrow without preemption: per pod set, the flavors in preference order sorted by mode,
 * charging quota and placing pods on the trail. On failure everything is rolled back and a
 * diagnosis of the best option is returned.
 */
export function assignDirect(core: CoreState, job: JobState, counts: readonly number[]): { ok: true; parts: PodSetPlan[]; usage: Map<string, number[]> } | Fail {
  const q = job.queue;
  const mark = core.trail.length;
  const parts: PodSetPlan[] = [];
  const usage = new Map<string, number[]>();
  const eligible = eligibleFor(job);
  for (let i = 0; i < job.podSets.length; i++) {
    const ps = job.podSets[i] as PodSetState;
    const count = counts[i] as number;
    const vec = [ps.shape.gpu * count, ps.shape.cpu * count, ps.shape.mem * count];
    const options = ps.flavors.map((f, pref) => ({ f, pref, ...quotaMode(q, f, vec, usage.get(f)) }));
    const ordered = options.filter((o) => o.mode <= BORROW).sort((a, b) => a.mode - b.mode || a.pref - b.pref);
    let placed = false;
    const nodeFailed: string[] = [];
    for (const o of ordered) {
      const m = core.trail.length;
      const u = new Map([[o.f, vec]]);
      tCharge(core, q, u);
      const allocs = tPlace(core, core.flavors.get(o.f) as FlavorState, count, ps.shape, eligible);
      if (allocs) {
        parts.push({ ps, flavor: o.f, count, allocs });
        addVec(usage, o.f, vec, 1);
        placed = true;
        break;
      }
      rollback(core, m);
      nodeFailed.push(o.f);
    }
    if (placed) continue;
    rollback(core, mark);
    return diagnose(core, job, options, nodeFailed, ps, count);
  }
  return { ok: true, parts, usage };
}

export function diagnose(core: CoreState, 
  job: JobState,
  options: { f: string; mode: number; r: number; requested: number }[],
  nodeFailed: string[],
  ps: PodSetState,
  count: number,
): Fail {
  const q = job.queue;
  if (nodeFailed.length > 0) {
    const eligible = eligibleFor(job);
    const nodeFit: NodeFit[] = [];
    for (const f of nodeFailed) {
      let largest = 0;
      let free = 0;
      let any = false;
      for (const n of (core.flavors.get(f) as FlavorState).nodes) {
        if (!eligible(n)) continue;
        any = true;
        largest = Math.max(largest, n.freeGpuTotal);
        free += n.freeGpuTotal;
      }
      if (any) nodeFit.push({ flavor: f, largestFreeGpusOnOneNode: largest / 1000, freeGpus: free / 1000, podsNeeded: count, gpusPerPod: ps.shape.gpu / 1000 });
    }
    if (nodeFit.length === 0) {
      return {
        ok: false,
        reason: 'NoFittingNode',
        message: `quota allows it, but there is no eligible node of ${nodeFailed.join(', ')} for its pods`,
        waitFlavors: nodeFailed,
      };
    }
    const blocks = nodeFit.map((n) => `${n.flavor}: largest free on one node ${n.largestFreeGpusOnOneNode}, free in total ${n.freeGpus}`).join('; ');
    return {
      ok: false,
      reason: 'NoNodeFits',
      message: `quota allows it, but no set of eligible nodes has room for ${count} pod(s) of ${ps.shape.gpu / 1000} GPU (${blocks})`,
      nodeFit,
      waitFlavors: nodeFailed,
    };
  }
  const best = [...options].sort((a, b) => a.mode - b.mode)[0];
  if (!best) return { ok: false, reason: 'ExceedsMaxQuota', message: 'no flavor to try', waitFlavors: [] };
  const sf = shortfall(q, best.f, best.r, best.requested);
  if (best.mode === NOFIT) {
    if (windowWouldAllow(core, q, best.f, best.r, best.requested)) {
      return {
        ok: false,
        reason: 'WindowClosed',
        message: `${sf.resource} on ${sf.flavor}: requested ${sf.requested}, the queue gets at most ${sf.maxAvailable} outside its time window`,
        shortfall: sf,
        waitFlavors: [],
      };
    }
    return {
      ok: false,
      reason: 'ExceedsMaxQuota',
      message: `${sf.resource} on ${sf.flavor}: requested ${sf.requested} exceeds the most the queue can ever get (${sf.maxAvailable})`,
      shortfall: sf,
      waitFlavors: [],
    };
  }
  return {
    ok: false,
    reason: 'WaitingForQuota',
    message: `${sf.resource} on ${sf.flavor}: requested ${sf.requested}, available ${sf.available} (nominal ${sf.nominal}, used ${sf.used}${sf.borrowingLimit !== undefined ? `, borrowing limit ${sf.borrowingLimit}` : ''})`,
    shortfall: sf,
    waitFlavors: [],
  };
}

export function windowWouldAllow(core: CoreState, q: QueueState, f: string, r: number, requested: number): boolean {
  const ws = q.spec.timeWindows ?? [];
  for (let i = 0; i < ws.length; i++) {
    if (i === q.activeWindow) continue;
    const fq = convertQuotas(core, (ws[i] as (typeof ws)[number]).quotas, q.isolation, q.spec.name).get(f);
    if (!fq || !fq.declared[r]) continue;
    const bl = fq.borrowingLimit[r];
    if ((fq.nominal[r] as number) + (bl ?? Number.POSITIVE_INFINITY) >= requested) return true;
  }
  return false;
}

/** The full decision for one job; on success the trial changes stay applied (caller commits or rolls back). */
export function evaluate(core: CoreState, job: JobState, allowPreemption: boolean): Plan | Fail {
  job.releasable = null;
  const full = job.podSets.map((p) => p.count);
  const direct = assignDirect(core, job, full);
  if (direct.ok) return planFrom(job, direct.parts, direct.usage, []);
  // Gang minimum: the largest reduction step that fits without preemption.
  const maxStep = Math.max(...job.podSets.map((p) => p.count - p.minCount));
  if (maxStep > 0) {
    let lo = 1;
    let hi = maxStep;
    let found = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const counts = job.podSets.map((p) => Math.max(p.minCount, p.count - mid));
      const m = core.trail.length;
      const r = assignDirect(core, job, counts);
      if (r.ok) {
        found = mid;
        hi = mid - 1;
      } else lo = mid + 1;
      rollback(core, m);
    }
    if (found > 0) {
      const counts = job.podSets.map((p) => Math.max(p.minCount, p.count - found));
      const r = assignDirect(core, job, counts);
      if (r.ok) return planFrom(job, r.parts, r.usage, []);
    }
  }
  if (allowPreemption && direct.reason !== 'ExceedsMaxQuota' && direct.reason !== 'WindowClosed') {
    const p = preempting(core, job);
    if (p) return p;
  }
  return direct;
}

export function planFrom(job: JobState, parts: PodSetPlan[], usage: Map<string, number[]>, victims: Plan['victims']): Plan {
  let borrowed = false;
  for (const f of usage.keys()) for (let r = 0; r < RESOURCE_COUNT; r++) if (overNominal(job.queue, f, r)) borrowed = true;
  const mode: AdmissionMode = victims.length > 0 ? (borrowed ? 'preempt-borrow' : 'preempt') : borrowed ? 'borrow' : 'fit';
  return { ok: true, parts, usage, victims, mode, borrowed };
}

export function preempting(core: CoreState, job: JobState): Plan | null {
  const q = job.queue;
  job.releasable = new Map();
  // Flavor per pod set: the best quota mode up to preempt+borrow, preference order on ties.
  const choice: string[] = [];
  const request = new Map<string, number[]>();
  for (const ps of job.podSets) {
    const vec = [ps.shape.gpu * ps.count, ps.shape.cpu * ps.count, ps.shape.mem * ps.count];
    let best: { f: string; mode: number } | null = null;
    for (const f of ps.flavors) {
      const m = quotaMode(q, f, vec, request.get(f)).mode;
      if (m === NOFIT) continue;
      if (!best || m < best.mode) best = { f, mode: m };
    }
    if (!best) {
      for (const f of ps.flavors) job.releasable.set(f, [0, 0, 0]); // no option can ever be reached by preempting
      return null;
    }
    choice.push(best.f);
    addVec(request, best.f, vec, 1);
  }
  // The (flavor, resource) pairs short of quota; none means only node capacity is short.
  const need: [string, number][] = [];
  for (const [f, v] of request)
    for (let r = 0; r < RESOURCE_COUNT; r++) {
      const fq = q.node.flavors.get(f);
      if ((v[r] as number) > 0 && fq?.declared[r] && (v[r] as number) > available(q.node, f, r)) need.push([f, r]);
    }
  const underNominal = need.length > 0 ? need.every(([f, r]) => !overNominal(q, f, r) && usageOf(q, f, r) < nominalOf(q, f, r)) : true;
  // Which other queues can lose jobs to this one at all (decided once per queue, not per job):
  // with fair sharing only queues whose share is above the preemptor's share after admission;
  // otherwise only when reclaiming while under nominal, or with borrowWithinCohort.
  let otherOk: (v: QueueState) => boolean;
  if (core.fairSharing) {
    const m = core.trail.length;
    tCharge(core, q, request);
    const pAfter = weightedShare(q);
    rollback(core, m);
    otherOk = (v) => weightedShare(v) > pAfter;
  } else {
    const others = (underNominal && q.reclaim !== 'Never') || q.borrowPolicy !== 'Never';
    otherOk = () => others;
  }
  const cands = candidates(core, job, request, need, otherOk);
  for (const f of request.keys()) job.releasable.set(f, [0, 0, 0]);
  for (const c of cands) for (const [f, u] of c.job.usage) if (request.has(f)) addVec(job.releasable, f, u, 1);
  if (cands.length === 0) return null;
  // Even releasing every candidate would not free enough quota: skip the search.
  for (const [f, r] of need) {
    let releasable = 0;
    for (const c of cands) releasable += (c.job.usage.get(f)?.[r] as number | undefined) ?? 0;
    if (available(q.node, f, r) + releasable < ((request.get(f) as number[])[r] as number)) return null;
  }
  // Set when some trial had the quota but not the nodes: only then can a placement-aware retry help.
  let placementShort = false;
  const fits = (allowBorrowing: boolean): boolean => {
    for (const [f, v] of request) {
      const fq = q.node.flavors.get(f);
      if (!fq) return false;
      for (let r = 0; r < RESOURCE_COUNT; r++) {
        const x = v[r] as number;
        if (x === 0 || !fq.declared[r]) continue;
        if (x > available(q.node, f, r)) return false;
        if (!allowBorrowing && (fq.usage[r] as number) + x > (fq.nominal[r] as number)) return false;
      }
    }
    const m = core.trail.length;
    const eligible = eligibleFor(job);
    let ok = true;
    for (let i = 0; i < job.podSets.length && ok; i++) {
      const ps = job.podSets[i] as PodSetState;
      ok = tPlace(core, core.flavors.get(choice[i] as string) as FlavorState, ps.count, ps.shape, eligible) !== null;
    }
    rollback(core, m);
    if (!ok) placementShort = true;
    return ok;
  };
  // Candidates the searches actually took (they passed every rule): what a failed job can count on later.
  const taken = new Set<JobState>();
  const search = (ordered: Candidate[]): JobState[] | null => {
    const own = ordered.filter((c) => !c.other);
    if (own.length === ordered.length) return minimalSet(core, job, request, need, own, true, fits, taken);
    // Fair sharing decides between queues by share (see fairShareAllows), so borrowing is allowed.
    if (core.fairSharing) return minimalSet(core, job, request, need, ordered, true, fits, taken);
    if (q.borrowPolicy === 'LowerPriority') {
      const cs = underNominal ? ordered.filter((c) => !c.other || c.reclaimOk || c.borrowOk) : ordered.filter((c) => !c.other || c.borrowOk);
      return minimalSet(core, job, request, need, cs, true, fits, taken);
    }
    let found: JobState[] | null = null;
    if (underNominal) found = minimalSet(core, job, request, need, ordered.filter((c) => !c.other || c.reclaimOk), false, fits, taken);
    if (!found && own.length > 0) found = minimalSet(core, job, request, need, own, true, fits, taken);
    return found;
  };
  let victims = search(cands);
  // The policy order can free enough quota on the wrong nodes (scattered GPUs, no node with room
  // for a pod) and then run out of candidates (a queue is not pushed below its nominal). Retry with
  // the candidates grouped by the nodes that can most cheaply make room for the pods (only when
  // some trial had the quota but not the nodes, so quota-bound failures cost nothing more); the same
  // take-until-it-fits and walk-back keeps the set minimal for quota and placement both.
  // Only for quota owed to the job (it stays within its nominal): a job that would borrow, or win
  // by fair share, waits for capacity rather than evicting whole nodes of running work — on Philly
  // the retry for every preemptor doubled preemptions and tripled the GPU-hours thrown away.
  if (!victims && placementShort && withinNominal(q, request)) {
    const byNode = placementOrder(job, choice, cands);
    if (byNode) victims = search(byNode);
  }
  if (!victims) {
    job.releasable = new Map([...request.keys()].map((f) => [f, [0, 0, 0]]));
    for (const t of taken) for (const [f, u] of t.usage) if (request.has(f)) addVec(job.releasable, f, u, 1);
    return null;
  }
  // Victims stay released on the trail; now charge and place the preemptor for real.
  const eligible = eligibleFor(job);
  const parts: PodSetPlan[] = [];
  tCharge(core, q, request);
  for (let i = 0; i < job.podSets.length; i++) {
    const ps = job.podSets[i] as PodSetState;
    const allocs = tPlace(core, core.flavors.get(choice[i] as string) as FlavorState, ps.count, ps.shape, eligible);
    if (!allocs) return null; // cannot happen: fits() just placed the same pods on the same state
    parts.push({ ps, flavor: choice[i] as string, count: ps.count, allocs });
  }
  // Charged above: does the preemptor's queue end up above its nominal on what it asked for?
  const preemptorBorrows = [...request].some(([f, vec]) => vec.some((v, r) => (v as number) > 0 && overNominal(q, f, r)));
  const withReasons = victims.map((v) => ({ job: v, reason: preemptionReason(core, job, v, preemptorBorrows) }));
  return planFrom(job, parts, request, withReasons);
}

/**
 * Candidates regrouped by node: nodes of the chosen flavors where freeing the candidates could
 * hold a pod first, then those with the most free GPU already (least to evict), then the fewest
 * candidate GPUs, then name; within a node the policy order stays. Null if it changes nothing.
 */
export function placementOrder(job: JobState, choice: string[], cands: Candidate[]): Candidate[] | null {
  const podGpu = new Map<string, number>(); // per chosen flavor: the smallest GPU pod shape
  job.podSets.forEach((ps, i) => {
    const f = choice[i] as string;
    if (ps.shape.gpu > 0) podGpu.set(f, Math.min(podGpu.get(f) ?? Number.POSITIVE_INFINITY, ps.shape.gpu));
  });
  if (podGpu.size === 0) return null;
  const eligible = eligibleFor(job);
  const held = new Map<NodeState, number>();
  for (const c of cands)
    for (const a of c.job.allocs) {
      if (!podGpu.has(a.node.flavor.spec.name) || !eligible(a.node)) continue;
      held.set(a.node, (held.get(a.node) ?? 0) + a.gpuMilli.reduce((x, y) => x + y, 0));
    }
  const ranked = [...held.entries()]
    .map(([n, h]) => ({ n, h, useful: n.freeGpuTotal + h >= (podGpu.get(n.flavor.spec.name) as number) ? 0 : 1 }))
    .sort((a, b) => a.useful - b.useful || b.n.freeGpuTotal - a.n.freeGpuTotal || a.h - b.h || (a.n.spec.name < b.n.spec.name ? -1 : 1));
  const out: Candidate[] = [];
  const seen = new Set<Candidate>();
  for (const { n } of ranked)
    for (const c of cands)
      if (!seen.has(c) && c.job.allocs.some((a) => a.node === n)) {
        seen.add(c);
        out.push(c);
      }
  for (const c of cands) if (!seen.has(c)) out.push(c);
  return out.every((c, i) => c === cands[i]) ? null : out;
}

/**
 * Why a victim goes. Between queues: taking back unused nominal is a reclaim, with or
 * without fair sharing (Kueue's InCohortReclamation); only a preemptor that borrows wins
 * by share (InCohortFairSharing).
 */
export function preemptionReason(core: CoreState, preemptor: JobState, victim: JobState, preemptorBorrows: boolean): PreemptionReason {
  if (victim.queue === preemptor.queue) return 'priority';
  if (victim.queue.windowReclaimable) return 'window-closed';
  if (core.fairSharing && preemptorBorrows) return 'fair-share';
  return 'reclaim';
}

/** Is `v` using more than its nominal on a (flavor, resource) the preemptor needs? */
export function borrowingOnNeed(v: QueueState, request: Map<string, number[]>, need: [string, number][]): boolean {
  if (need.length > 0) return need.some(([f, r]) => overNominal(v, f, r));
  for (const [f, vec] of request) for (let r = 0; r < RESOURCE_COUNT; r++) if ((vec[r] as number) > 0 && overNominal(v, f, r)) return true;
  return false;
}

export function candidates(core: CoreState, job: JobState, request: Map<string, number[]>, need: [string, number][], otherOk: (v: QueueState) => boolean): Candidate[] {
  const q = job.queue;
  const out: Candidate[] = [];
  const uses = (c: JobState): boolean => {
    for (const f of c.usage.keys()) if (request.has(f)) return true;
    return false;
  };
  if (q.withinQueue !== 'Never') {
    for (const c of q.admitted) {
      if (c.preemptible !== 'yes' || !uses(c)) continue;
      const lower = c.priority < job.priority;
      const newerEqual =
        q.withinQueue === 'LowerOrNewerEqualPriority' &&
        c.priority === job.priority &&
        (c.spec.submitTime > job.spec.submitTime || (c.spec.submitTime === job.spec.submitTime && c.spec.id > job.spec.id));
      if (lower || newerEqual) out.push({ job: c, other: false, reclaimOk: false, borrowOk: false });
    }
  }
  if (q.node.parent && (q.reclaim !== 'Never' || q.borrowPolicy !== 'Never')) {
    for (const v of core.treeQueues.get(q.root) ?? []) {
      if (v === q || !borrowingOnNeed(v, request, need) || !otherOk(v)) continue;
      for (const c of v.admitted) {
        if (c.preemptible === 'no' || !uses(c)) continue;
        const lower = c.priority < job.priority;
        const reclaimOk = q.reclaim === 'Any' || (q.reclaim === 'LowerPriority' && (lower || v.isolation === 'BEST_EFFORT'));
        const borrowOk =
          q.borrowPolicy === 'LowerPriority' && c.preemptible === 'yes' && lower && (q.borrowThreshold === null || c.priority <= q.borrowThreshold);
        if (reclaimOk || borrowOk) out.push({ job: c, other: true, reclaimOk, borrowOk });
      }
    }
  }
  // Candidate order: other queues first (best-effort queues before them all), lower priority,
  // most recently admitted, id.
  out.sort(
    (a, b) =>
      Number(b.other) - Number(a.other) ||
      Number(b.job.queue.isolation === 'BEST_EFFORT') - Number(a.job.queue.isolation === 'BEST_EFFORT') ||
      a.job.priority - b.job.priority ||
      b.job.admitSeq - a.job.admitSeq ||
      (a.job.spec.id < b.job.spec.id ? -1 : a.job.spec.id > b.job.spec.id ? 1 : 0),
  );
  return out;
}

/**
 * Take candidates in order until the job fits, then walk the chosen set backwards and put back
 * every victim whose release turns out not to be needed. Victims stay released on the trail.
 */
export function minimalSet(core: CoreState, 
  job: JobState,
  request: Map<string, number[]>,
  need: [string, number][],
  cands: Candidate[],
  allowBorrowing: boolean,
  fits: (allowBorrowing: boolean) => boolean,
  taken?: Set<JobState>,
): JobState[] | null {
  const q = job.queue;
  const mark = core.trail.length;
  const removed: JobState[] = [];
  for (const c of cands) {
    const v = c.job.queue;
    // borrowWithinCohort covers only victims at or below its threshold: once another queue's
    // job outside it is taken, the preemptor must fit without borrowing (as in Kueue).
    if (c.other && !c.borrowOk && !core.fairSharing) allowBorrowing = false;
    // A queue is never pushed below its nominal by another queue's reclaim.
    if (v !== q && !borrowingOnNeed(v, request, need)) continue;
    if (core.fairSharing && v !== q && !fairShareAllows(core, q, request, c.job)) continue;
    tRelease(core, c.job);
    removed.push(c.job);
    taken?.add(c.job);
    if (!fits(allowBorrowing)) continue;
    const targets: JobState[] = [c.job];
    for (let i = removed.length - 2; i >= 0; i--) {
      const back = removed[i] as JobState;
      tReadd(core, back);
      if (fits(allowBorrowing)) continue;
      tRelease(core, back);
      targets.push(back);
    }
    return targets;
  }
  rollback(core, mark);
  return null;
}

/**
 * No ping-pong under fair sharing: after the move the preemptor's share must be ≤ the victim
 * queue's share, and strictly below the victim queue's share before it (so equal shares never
 * trade jobs back and forth).
 */
export function fairShareAllows(core: CoreState, q: QueueState, request: Map<string, number[]>, victim: JobState): boolean {
  const mark = core.trail.length;
  const vBefore = weightedShare(victim.queue);
  chargeQueue(victim.queue, victim.usage, -1);
  core.trail.push(() => chargeQueue(victim.queue, victim.usage, 1));
  const vAfter = weightedShare(victim.queue);
  tCharge(core, q, request);
  const pAfter = weightedShare(q);
  rollback(core, mark);
  return pAfter <= vAfter && pAfter < vBefore;
}

export function buildAdmission(job: JobState, plan: Plan, at: number): Admission {
  return {
    jobId: job.spec.id,
    queue: job.queue.spec.name,
    at,
    podSets: plan.parts.map((p) => ({ name: p.ps.name, flavor: p.flavor, count: p.count, placements: groupPlacements(p.allocs) })),
    borrowed: plan.borrowed,
    mode: plan.mode,
  };
}

/** Applies a plan whose trial changes are in place since `mark`: victims go back to pending, the job is admitted. */
export function commit(core: CoreState, job: JobState, plan: Plan, mark: number, now: number, preempted: Preemption[]): Admission {
  core.trail.length = mark; // the trial changes become the state
  core.stateVersion++;
  const q = job.queue;
  const freed = new Map<string, number[]>();
  for (const { job: v } of plan.victims) for (const [f, u] of v.usage) addVec(freed, f, u, 1);
  const freedNodes = [...new Set(plan.victims.flatMap((v) => v.job.allocs.map((a) => a.node)))];
  for (const { job: v, reason } of plan.victims) {
    const p: Preemption = { victimId: v.spec.id, victimQueue: v.queue.spec.name, preemptorId: job.spec.id, preemptorQueue: q.spec.name, reason, at: now };
    preempted.push(p);
    v.queue.admitted.delete(v);
    historyChange(core, v.queue, now, -(gpuOf(v.usage)), 0);
    v.usage = new Map();
    v.allocs = [];
    v.admission = null;
    v.preemptions++;
    v.lastPreemption = p;
    v.preemptedCycle = core.cycleNo;
    v.parkKind = 'any';
    v.preemptedBy = { jobId: job.spec.id, reason };
    v.decision = {
      jobId: v.spec.id,
      queue: v.queue.spec.name,
      reason: 'WaitingForQuota',
      message: `preempted (${reason}); requeued with its original submit time`,
      preemptedBy: { ...v.preemptedBy },
    };
    v.decisionVersion = -1; // diagnosed again against the state after this cycle
    enqueue(core, v);
    core.deferred.add(v.queue);
  }
  dequeue(core, job);
  job.status = 'admitted';
  job.decision = null;
  job.preemptedBy = null;
  job.usage = plan.usage;
  job.allocs = plan.parts.flatMap((p) => p.allocs);
  job.admittedAt = now;
  job.admitSeq = ++core.admitSeq;
  q.admitted.add(job);
  const gpu = gpuOf(plan.usage);
  historyChange(core, q, now, gpu, core.entryPenalty * (gpu / 1000));
  job.admission = buildAdmission(job, plan, now);
  for (const { job: v } of plan.victims) if (v.queue.windowReclaimable && !anyOverNominal(v.queue)) v.queue.windowReclaimable = false;
  if (plan.victims.length > 0 && freedMoreThanTaken(plan.victims.map((v) => v.job), plan.usage, freed)) {
    const queues = new Set(plan.victims.map((v) => v.job.queue));
    for (const vq of queues) wakeAfterRelease(core, vq, freed, freedNodes);
  }
  return job.admission;
}

/** Did the victims free more than the preemptor took? Only then can anyone else gain from it. */
export function freedMoreThanTaken(_victims: JobState[], taken: Map<string, number[]>, freed: Map<string, number[]>): boolean {
  for (const [f, v] of freed) {
    const t = taken.get(f);
    for (let r = 0; r < RESOURCE_COUNT; r++) if ((v[r] as number) > ((t?.[r] as number | undefined) ?? 0)) return true;
  }
  return false;
}

export function release(core: CoreState, j: JobState, now: number): void {
  const q = j.queue;
  core.stateVersion++;
  chargeQueue(q, j.usage, -1);
  for (let i = j.allocs.length - 1; i >= 0; i--) releaseAlloc(j.allocs[i] as PodAlloc);
  q.admitted.delete(j);
  historyChange(core, q, now, -gpuOf(j.usage), 0);
  const freed = j.usage;
  const freedNodes = [...new Set(j.allocs.map((a) => a.node))];
  j.usage = new Map();
  j.allocs = [];
  if (q.windowReclaimable && !anyOverNominal(q)) q.windowReclaimable = false;
  // Its own waiting jobs are retried like everyone's, by need: the release raised their available
  // quota. (A lower share could also widen their victim set; that is picked up at their next retry.)
  wakeAfterRelease(core, q, freed, freedNodes);
}

export function cycle(core: CoreState): CycleResult {
  const now = core.clock.now();
  core.cycleNo++;
  refreshWindows(core, now);
  if (core.rescanEveryCycle) rescanAll(core);
  for (const q of core.deferred) {
    const avail = new Map<string, number[]>();
    wakeQueueIf(core, q, (j) => needMet(j, avail));
  }
  core.deferred.clear();
  const result: CycleResult = { at: now, admitted: [], preempted: [], pending: [] };
  const pending = new Map<string, PendingDecision>();
  // Each pass takes one head per active queue; a head is admitted, parked (BestEffortFIFO) or
  // blocks its queue (StrictFIFO), so every pass shrinks the work and the loop ends.
  while (core.active.size > 0) {
    const heads: { job: JobState; share: number; borrow: number; hist: number }[] = [];
    for (const q of [...core.active]) {
      let h = q.heap.peek();
      while (h && q.strategy !== 'StrictFIFO') {
        if (h.preemptedCycle === core.cycleNo) {
          // Evicted in this cycle: it waits for the next one (the caller is suspending it).
          park(core, h, null);
        } else if (stillShort(core, h)) {
          // Woken by a release that a job ahead already took: re-park it untried, here rather
          // than one pass per job, so a burst of such jobs costs one loop, not a pass each.
          park(core, h, null, true);
        } else break;
        h = q.heap.peek();
      }
      if (!h || h.preemptedCycle === core.cycleNo) {
        core.active.delete(q);
        if (h) q.blocked = true;
        continue;
      }
      heads.push({
        job: h,
        share: core.fairSharing ? weightedShare(q) : 0,
        borrow: core.fairSharing ? 0 : headBorrows(h) ? 1 : 0,
        hist: core.halfLife !== null ? historyAt(core, q, now) / Math.max(q.weight, 1e-9) : 0,
      });
    }
    if (heads.length === 0) break;
    // Order: lowest weighted share (or non-borrowing first), then decayed usage, higher priority, earlier submit, id.
    heads.sort(
      (a, b) =>
        a.share - b.share ||
        a.borrow - b.borrow ||
        a.hist - b.hist ||
        b.job.priority - a.job.priority ||
        a.job.spec.submitTime - b.job.spec.submitTime ||
        (a.job.spec.id < b.job.spec.id ? -1 : 1),
    );
    for (const { job } of heads) {
      const q = job.queue;
      if (job.status !== 'pending' || q.heap.peek() !== job || q.blocked) continue;
      if (stillShort(core, job)) {
        // Woken by a release that someone ahead already took: still short of what it needs.
        park(core, job, null, true);
        continue;
      }
      const mark = core.trail.length;
      const known = knownPreemptFail(core, job);
      const res = evaluate(core, job, known === undefined);
      if (!res.ok) {
        if (known) job.releasable = known;
        else if (job.releasable) rememberPreemptFail(core, job);
      }
      if (res.ok) {
        result.admitted.push(commit(core, job, res, mark, now, result.preempted));
        pending.delete(job.spec.id);
        continue;
      }
      rollback(core, mark);
      const d = decisionFrom(job, res);
      job.decision = d;
      job.decisionVersion = core.stateVersion;
      pending.set(job.spec.id, d);
      if (q.strategy === 'StrictFIFO') {
        q.blocked = true;
        core.active.delete(q);
        for (const f of res.waitFlavors) waitOn(core, f, q);
      } else {
        park(core, job, res);
      }
    }
  }
  // A decision made before later admissions of this cycle may no longer be true: diagnose it
  // again against the state the cycle leaves (only those made at an older state version).
  result.pending = [...pending.values()].map((d) => {
    const j = core.jobs.get(d.jobId);
    return j && j.status === 'pending' ? currentDecision(core, j) : d;
  });
  return result;
}

export function decisionFrom(job: JobState, res: Fail): PendingDecision {
  const d: PendingDecision = { jobId: job.spec.id, queue: job.queue.spec.name, reason: res.reason, message: res.message };
  if (res.shortfall) d.shortfall = res.shortfall;
  if (res.nodeFit) d.nodeFit = res.nodeFit;
  if (job.preemptedBy) d.preemptedBy = { ...job.preemptedBy };
  return d;
}

/**
 * The job's pending decision as of the current state: the stored one if nothing changed since it
 * was made, else diagnosed again (a trial assignment, rolled back) and stored with the version.
 */
export function currentDecision(core: CoreState, j: JobState): PendingDecision {
  if (j.decision && j.decisionVersion === core.stateVersion) return j.decision;
  const mark = core.trail.length;
  const res = assignDirect(core, j, j.podSets.map((p) => p.count));
  rollback(core, mark);
  let d: PendingDecision;
  if (res.ok) {
    d = { jobId: j.spec.id, queue: j.queue.spec.name, reason: 'NotYetEvaluated', message: 'fits now; waits for the next admission cycle' };
    if (j.preemptedBy) d.preemptedBy = { ...j.preemptedBy };
  } else d = decisionFrom(j, res);
  j.decision = d;
  j.decisionVersion = core.stateVersion;
  return d;
}

/** The naive baseline: rebuild usage and node capacity from every running job, retry every pending job. */
export function rescanAll(core: CoreState): void {
  for (const f of core.flavors.values()) {
    f.freeGpu = 0;
    f.freeCpu = 0;
    f.freeMem = 0;
    f.withFreeGpu.clear();
    for (const n of f.nodes) {
      if (n.spec.gpus > 0) f.withFreeGpu.add(n);
      n.gpuFree.fill(f.perGpuMilli);
      n.freeGpuTotal = n.spec.gpus * f.perGpuMilli;
      n.cpuFree = Math.round(n.spec.cpu);
      n.memFree = Math.round(n.spec.memory);
      n.pods = 0;
      f.freeGpu += n.freeGpuTotal;
      f.freeCpu += n.cpuFree;
      f.freeMem += n.memFree;
    }
  }
  for (const j of core.jobs.values()) if (j.status === 'admitted') for (const a of j.allocs) reapplyAlloc(a);
  rebuildQuotas(core); // re-charges all running jobs and wakes every queue
}

/** Would the head exceed its queue's nominal on its first preferred flavor? (Non-borrowing heads go first without fair sharing, as in Kueue.) */
export function headBorrows(j: JobState): boolean {
  const q = j.queue;
  for (const ps of j.podSets) {
    const f = ps.flavors[0] as string;
    const fq = q.node.flavors.get(f);
    if (!fq) continue;
    const vec = [ps.shape.gpu * ps.count, ps.shape.cpu * ps.count, ps.shape.mem * ps.count];
    for (let r = 0; r < RESOURCE_COUNT; r++) if (fq.declared[r] && (fq.usage[r] as number) + (vec[r] as number) > (fq.nominal[r] as number)) return true;
  }
  return false;
}

export function preview(core: CoreState, spec: JobSpec): Preview {
  const job = buildJob(core, spec);
  const mark = core.trail.length;
  const res = evaluate(core, job, true);
  let out: Preview;
  if (res.ok) {
    const now = core.clock.now();
    out = {
      admissible: true,
      admission: buildAdmission(job, res, now),
      borrowed: res.borrowed,
      wouldPreempt: res.victims.map((v) => ({
        victimId: v.job.spec.id,
        victimQueue: v.job.queue.spec.name,
        preemptorId: spec.id,
        preemptorQueue: job.queue.spec.name,
        reason: v.reason,
        at: now,
      })),
    };
  } else {
    out = { admissible: false, borrowed: false, wouldPreempt: [], reason: res.reason, message: res.message };
    if (res.shortfall) out.shortfall = res.shortfall;
    if (res.nodeFit) out.nodeFit = res.nodeFit;
  }
  rollback(core, mark);
  return out;
}

export function explain(core: CoreState, jobId: string): JobExplanation {
  const j = core.jobs.get(jobId);
  if (!j) throw new SchedulerInputError('UNKNOWN_JOB', `unknown job ${jobId}`);
  const base: JobExplanation = { jobId, queue: j.queue.spec.name, state: j.status, preemptions: j.preemptions };
  if (j.lastPreemption) base.lastPreemption = j.lastPreemption;
  if (j.status === 'admitted') {
    base.admission = j.admission as Admission;
    base.expectedEnd = expectedEnd(j);
    return base;
  }
  const q = j.queue;
  const view = treeView(core, q.root);
  base.queuePending = q.heap.size + q.parked.size;
  base.positionInQueue = view.queuePos.get(j) ?? base.queuePending;
  const head = q.heap.peek();
  if (q.strategy === 'StrictFIFO' && q.blocked && head && head !== j) {
    base.reason = 'StrictFIFOBlocked';
    base.message = `StrictFIFO queue ${q.spec.name}: waiting behind the head of the queue, which cannot be admitted yet`;
    base.blockedBy = head.spec.id;
  } else if (j.decision) {
    const d = currentDecision(core, j);
    base.reason = d.reason;
    base.message = d.message;
    if (d.shortfall) base.shortfall = d.shortfall;
    if (d.nodeFit) base.nodeFit = d.nodeFit;
  } else {
    base.reason = 'NotYetEvaluated';
    base.message = 'waiting for the next admission cycle';
  }
  if (j.preemptedBy) base.preemptedBy = { ...j.preemptedBy };
  base.positionInCohort = (view.index.get(j) ?? view.order.length - 1) + 1;
  base.cohortPending = view.order.length;
  if (base.reason === 'ExceedsMaxQuota' || base.reason === 'WindowClosed') {
    base.eta = null;
    base.etaUnknownReason = base.reason === 'ExceedsMaxQuota' ? 'NeverFits' : 'WindowClosed';
  } else {
    const r = etaOf(core, view, j);
    base.eta = r.at === null ? null : Math.max(core.clock.now(), r.at);
    if (r.why) base.etaUnknownReason = r.why;
  }
  return base;
}

export function expectedEnd(j: JobState): number | null {
  const d = j.spec.expectedDurationMs ?? j.spec.maxRunMs;
  return d === undefined ? null : j.admittedAt + d;
}

export function pendingOf(q: QueueState): JobState[] {
  return [...q.heap.values(), ...q.parked];
}

/**
 * The tree's pending jobs in admission order, cached until running jobs, quotas, nodes or the
 * pending set change (explain runs per job per request: this keeps it a lookup).
 */
export function treeView(core: CoreState, root: QuotaNode): TreeView {
  const cur = core.treeViews.get(root);
  if (cur && cur.sv === core.stateVersion && cur.pv === core.pendingVersion) return cur;
  const order = cohortOrder(core, root);
  const index = new Map<JobState, number>();
  const queuePos = new Map<JobState, number>();
  const perQueue = new Map<QueueState, number>();
  order.forEach((j, i) => {
    index.set(j, i);
    const n = (perQueue.get(j.queue) ?? 0) + 1;
    perQueue.set(j.queue, n);
    queuePos.set(j, n);
  });
  const view: TreeView = { sv: core.stateVersion, pv: core.pendingVersion, order, index, queuePos, etas: null };
  core.treeViews.set(root, view);
  return view;
}

/** Queues' pending lists merged by (queue share — or non-borrowing first without fair sharing —, priority, submit, id). */
export function cohortOrder(core: CoreState, root: QuotaNode): JobState[] {
  const lists = (core.treeQueues.get(root) ?? []).map((q) => {
    const jobs = pendingOf(q).sort((a, b) => (queueLess(a, b) ? -1 : 1));
    return { q, jobs, i: 0, share: core.fairSharing ? weightedShare(q) : 0 };
  });
  const order: JobState[] = [];
  for (;;) {
    let best: (typeof lists)[number] | null = null;
    for (const l of lists) {
      const h = l.jobs[l.i];
      if (!h) continue;
      if (!best) {
        best = l;
        continue;
      }
      const b = best.jobs[best.i] as JobState;
      const ka = [l.share, core.fairSharing ? 0 : Number(headBorrows(h))];
      const kb = [best.share, core.fairSharing ? 0 : Number(headBorrows(b))];
      if (ka[0]! < kb[0]! || (ka[0] === kb[0] && (ka[1]! < kb[1]! || (ka[1] === kb[1] && queueLess(h, b))))) best = l;
    }
    if (!best) break;
    order.push(best.jobs[best.i++] as JobState);
  }
  return order;
}

/** The job's simulated admission time (see eta.ts), computed once per tree view. */
export function etaOf(core: CoreState, view: TreeView, j: JobState): EtaResult {
  if (!view.etas) view.etas = simulateTree(core, view.order);
  return view.etas.get(j) ?? { at: null, why: 'TooFarAhead' };
}

export function simulateTree(core: CoreState, all: JobState[]): Map<JobState, EtaResult> {
  const order = all.slice(0, ETA_MAX_JOBS);
  const roots = new Set(order.map((j) => j.queue.root));
  const flavors = new Set(order.flatMap((j) => j.podSets.flatMap((p) => p.flavors)));
  const running: { end: number | null; release: () => void }[] = [];
  for (const o of core.jobs.values()) {
    if (o.status !== 'admitted') continue;
    let relevant = roots.has(o.queue.root);
    if (!relevant) for (const f of o.usage.keys()) if (flavors.has(f)) relevant = true;
    if (relevant) running.push({ end: expectedEnd(o), release: () => tRelease(core, o) });
  }
  const mark = core.trail.length;
  const out = simulateEtas<JobState>({
    now: core.clock.now(),
    order,
    strictQueueOf: (j) => (j.queue.strategy === 'StrictFIFO' ? j.queue : null),
    durationOf: (j) => j.spec.expectedDurationMs ?? j.spec.maxRunMs,
    running,
    signatureOf: (j) => `${j.queue.spec.name}|${j.shapeKeys.join(';')}|${j.podSets.map((p) => `${p.count}/${p.minCount}`).join(',')}`,
    tryAdmit: (j) => trialAdmit(core, j),
  });
  rollback(core, mark);
  return out;
}

/** Admits a job on the snapshot (full gang, else its minimum) and returns the trial release of what it took. */
export function trialAdmit(core: CoreState, j: JobState): (() => void) | null {
  // Quick reject before a trial assignment: each pod set needs, at its gang minimum, a flavor the
  // quota admits without preemption and whose nodes have that much free in total.
  for (const ps of j.podSets) {
    const n = ps.minCount;
    const vec = [ps.shape.gpu * n, ps.shape.cpu * n, ps.shape.mem * n];
    const ok = ps.flavors.some((f) => {
      const fs = core.flavors.get(f) as FlavorState;
      return fs.freeGpu >= (vec[GPU] as number) && fs.freeCpu >= (vec[CPU] as number) && fs.freeMem >= (vec[MEM] as number) && quotaMode(j.queue, f, vec, undefined).mode <= BORROW;
    });
    if (!ok) return null;
  }
  let r = assignDirect(core, j, j.podSets.map((p) => p.count));
  if (!r.ok && j.podSets.some((p) => p.minCount < p.count)) r = assignDirect(core, j, j.podSets.map((p) => p.minCount));
  if (!r.ok) return null;
  const q = j.queue;
  const usage = r.usage;
  const allocs = r.parts.flatMap((p) => p.allocs);
  return () => {
    chargeQueue(q, usage, -1);
    for (let i = allocs.length - 1; i >= 0; i--) releaseAlloc(allocs[i] as PodAlloc);
    core.trail.push(() => {
      for (const a of allocs) reapplyAlloc(a);
      chargeQueue(q, usage, 1);
    });
  };
}

export function queueStatus(core: CoreState, name: string): QueueStatus {
  const q = core.queues.get(name);
  if (!q) throw new SchedulerInputError('UNKNOWN_QUEUE', `unknown queue ${name}`);
  const resources: QueueResourceStatus[] = [];
  const siblings = q.node.parent ? q.node.parent.children.filter((c) => c !== q.node) : [];
  for (const [f, fq] of q.node.flavors) {
    for (let r = 0; r < RESOURCE_COUNT; r++) {
      if (!fq.declared[r]) continue;
      const used = fq.usage[r] as number;
      const nominal = fq.nominal[r] as number;
      let siblingsBorrowed = 0;
      for (const s of siblings) {
        const sq = s.flavors.get(f);
        if (sq && sq.declared[r]) siblingsBorrowed += Math.max(0, (sq.usage[r] as number) - (sq.subtree[r] as number));
      }
      const ll = fq.lendingLimit[r];
      const lendableUnused = Math.max(0, Math.min(nominal - used, ll ?? Number.POSITIVE_INFINITY));
      const s: QueueResourceStatus = {
        flavor: f,
        resource: RES[r] as ResourceName,
        nominal: toApi(r, nominal),
        used: toApi(r, used),
        borrowed: toApi(r, Math.max(0, used - nominal)),
        lent: q.node.parent ? toApi(r, Math.min(lendableUnused, siblingsBorrowed)) : 0,
      };
      const bl = fq.borrowingLimit[r];
      if (bl !== null && bl !== undefined) s.borrowingLimit = toApi(r, bl);
      if (ll !== null && ll !== undefined) s.lendingLimit = toApi(r, ll);
      resources.push(s);
    }
  }
  const st: QueueStatus = {
    name,
    tenant: q.spec.tenant,
    weight: q.weight,
    isolation: q.isolation,
    queueingStrategy: q.strategy,
    activeWindow: q.activeWindow,
    resources,
    weightedShare: weightedShare(q),
    pendingCount: q.heap.size + q.parked.size,
    admittedCount: q.admitted.size,
  };
  if (q.spec.cohort !== undefined) st.cohort = q.spec.cohort;
  return st;
}

export function nodeStatus(core: CoreState): NodeStatus[] {
  const out: NodeStatus[] = [];
  for (const n of [...core.nodes.values()].sort((a, b) => (a.spec.name < b.spec.name ? -1 : 1))) {
    const per = n.flavor.perGpuMilli;
    const s: NodeStatus = {
      name: n.spec.name,
      pool: n.spec.pool,
      flavor: n.spec.flavor,
      kind: n.flavor.spec.kind,
      capacity: { gpu: (n.spec.gpus * per) / 1000, cpu: Math.round(n.spec.cpu), memory: Math.round(n.spec.memory) },
      free: { gpu: n.freeGpuTotal / 1000, cpu: n.cpuFree, memory: n.memFree },
      gpus: n.gpuFree.map((f, index) => ({ index, capacity: per / 1000, free: f / 1000 })),
    };
    if (n.spec.dedicatedTenant !== undefined) s.dedicatedTenant = n.spec.dedicatedTenant;
    out.push(s);
  }
  return out;
}

/** The admission of a running job, or undefined. */
export function admissionOf(core: CoreState, jobId: string): Admission | undefined {
  return core.jobs.get(jobId)?.admission ?? undefined;
}

/** 'pending' | 'admitted' for a live job, undefined once finished/cancelled or never seen. */
export function jobState(core: CoreState, jobId: string): 'pending' | 'admitted' | undefined {
  return core.jobs.get(jobId)?.status;
}

/** Rebuilds running jobs after a restart from persisted admissions, exactly as recorded (no decisions are made). */
export function restore(core: CoreState, admitted: RestoredAdmission[]): void {
  for (const { job, admission } of admitted) {
    if (core.jobs.has(job.id)) throw new SchedulerInputError('DUPLICATE_JOB', `job ${job.id} already exists`);
    const j = buildJob(core, job);
    const usage = new Map<string, number[]>();
    const allocs: PodAlloc[] = [];
    for (const pa of admission.podSets) {
      const ps = j.podSets.find((p) => p.name === pa.name);
      const flavor = core.flavors.get(pa.flavor);
      if (!ps || !flavor) throw new SchedulerInputError('INVALID_SPEC', `restore ${job.id}: pod set ${pa.name} or flavor ${pa.flavor} unknown`);
      addVec(usage, pa.flavor, [ps.shape.gpu, ps.shape.cpu, ps.shape.mem], pa.count);
      const frac = isFractional(flavor, ps.shape.gpu);
      const unitsPerPod = ps.shape.gpu === 0 ? 0 : frac ? 1 : ps.shape.gpu / 1000;
      const perUnit = frac ? ps.shape.gpu : 1000;
      for (const pl of pa.placements) {
        const node = core.nodes.get(pl.node);
        if (!node) throw new SchedulerInputError('UNKNOWN_NODE', `restore ${job.id}: unknown node ${pl.node}`);
        const idx = pl.gpuIndices ?? [];
        for (let p = 0; p < pl.pods; p++) {
          const gpus = idx.slice(p * unitsPerPod, (p + 1) * unitsPerPod);
          allocs.push({ node, cpu: ps.shape.cpu, mem: ps.shape.mem, gpus, gpuMilli: gpus.map(() => perUnit) });
        }
      }
    }
    for (const a of allocs) reapplyAlloc(a);
    chargeQueue(j.queue, usage, 1);
    j.status = 'admitted';
    j.usage = usage;
    j.allocs = allocs;
    j.admittedAt = admission.at;
    j.admitSeq = ++core.admitSeq;
    j.admission = structuredCloneSpec(admission);
    core.jobs.set(job.id, j);
    j.queue.admitted.add(j);
    core.stateVersion++;
    historyChange(core, j.queue, admission.at, gpuOf(usage), 0);
  }
}

/** A plain, deep copy of every piece of state a decision depends on; tests compare it before/after a what-if. */
export function debugState(core: CoreState): unknown {
  const quota: unknown[] = [];
  for (const q of core.queues.values()) quota.push(['queue', q.spec.name, mapToObj(q.node.flavors)]);
  for (const c of core.cohorts.values()) quota.push(['cohort', c.spec.name, mapToObj(c.node.flavors)]);
  return structuredCloneSpec({
    quota,
    nodes: [...core.nodes.values()].map((n) => [n.spec.name, [...n.gpuFree], n.freeGpuTotal, n.cpuFree, n.memFree, n.pods]),
    flavors: [...core.flavors.values()].map((f) => [f.spec.name, f.freeGpu, f.freeCpu, f.freeMem, f.nodes.map((n) => n.spec.name)]),
    queues: [...core.queues.values()].map((q) => ({
      name: q.spec.name,
      heap: q.heap.values().map((j) => j.spec.id).sort(),
      parked: [...q.parked].map((j) => j.spec.id).sort(),
      blocked: q.blocked,
      admitted: [...q.admitted].map((j) => j.spec.id).sort(),
      history: { ...q.history },
      windowReclaimable: q.windowReclaimable,
    })),
    jobs: [...core.jobs.values()].map((j) => [j.spec.id, j.status, j.admission, mapToObj(j.usage), j.allocs.map((a) => [a.node.spec.name, a.gpus, a.gpuMilli])]),
    active: [...core.active].map((q) => q.spec.name).sort(),
    shapes: [...core.shapes.entries()],
    trail: core.trail.length,
  });
}

/**
 * The public face of the core: owns the state and delegates each call to the module that does it
 * (README.md, "Files", says which module holds which phase).
 */
export class Scheduler {
  private readonly state: CoreState;

  constructor(opts: SchedulerOptions) {
    this.state = createCoreState(opts);
  }

  // ───────────────────────────── configuration (configure.ts) ─────────────────────────────

  upsertFlavor(f: FlavorSpec): void {
    upsertFlavor(this.state, f);
  }

  upsertNode(n: NodeSpec): void {
    upsertNode(this.state, n);
  }

  removeNode(name: string): void {
    removeNode(this.state, name);
  }

  upsertCohort(c: CohortSpec): void {
    upsertCohort(this.state, c);
  }

  upsertQueue(q: QueueSpec): void {
    upsertQueue(this.state, q);
  }

  // ───────────────────────────── jobs (jobs.ts) ─────────────────────────────

  submit(job: JobSpec): void {
    submit(this.state, job);
  }

  finish(jobId: string): void {
    finish(this.state, jobId);
  }

  cancel(jobId: string): void {
    cancel(this.state, jobId);
  }

  // ───────────────────────────── the cycle (cycle.ts) ─────────────────────────────

  cycle(): CycleResult {
    return cycle(this.state);
  }

  // ───────────────────────────── queries (views.ts, explain.ts, restore.ts) ─────────────────────────────

  preview(spec: JobSpec): Preview {
    return preview(this.state, spec);
  }

  explain(jobId: string): JobExplanation {
    return explain(this.state, jobId);
  }

  queueStatus(name: string): QueueStatus {
    return queueStatus(this.state, name);
  }

  nodeStatus(): NodeStatus[] {
    return nodeStatus(this.state);
  }

  pendingShapes(): PendingShape[] {
    return pendingShapes(this.state);
  }

  /** The admission of a running job, or undefined. */
  admissionOf(jobId: string): Admission | undefined {
    return admissionOf(this.state, jobId);
  }

  /** 'pending' | 'admitted' for a live job, undefined once finished/cancelled or never seen. */
  jobState(jobId: string): 'pending' | 'admitted' | undefined {
    return jobState(this.state, jobId);
  }

  /** Rebuilds running jobs after a restart from persisted admissions, exactly as recorded (no decisions are made). */
  restore(admitted: RestoredAdmission[]): void {
    restore(this.state, admitted);
  }

  /** A plain, deep copy of every piece of state a decision depends on; tests compare it before/after a what-if. */
  debugState(): unknown {
    return debugState(this.state);
  }
}
