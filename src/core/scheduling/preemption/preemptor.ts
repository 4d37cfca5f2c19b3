// The preemption search (Kueue's preemptor): flavor choice, candidates, victim search under the
// classical or fair-sharing rules, the placement-aware retry, and each victim's reason.
import { eligibleFor } from '../assignment/eligible.js';
import { type Plan, type PodSetPlan, planFrom } from '../assignment/plan.js';
import { NOFIT, nominalOnly, quotaMode } from '../assignment/quota-mode.js';
import { guaranteedFits } from '../guaranteed.js';
import type { FlavorState } from '../nodes.js';
import { nominalOf, overNominal, usageOf, withinNominal } from '../queue-usage.js';
import { available, RESOURCE_COUNT } from '../quota.js';
import type { CoreState, JobState, PodSetState } from '../state.js';
import { rollback, tCharge, tPlace } from '../trail.js';
import type { PreemptionReason } from '../types.js';
import { addVec } from '../units.js';
import { type Candidate, candidates, floorAllows, placementOrder, withinQueueAllows } from './candidates.js';
import { classicalOtherQueues, classicalSearch } from './classical.js';
import { fairShareOtherQueues } from './fair-sharing.js';
import { lostGpuMs, tooCostlyForFairShare } from './lost-work.js';
import { minimalSet } from './minimal-set.js';

/**
 * The preemption search for a job that fits nowhere without it (Kueue's preemptor): pick the
 * flavor per pod set by quota mode, list the candidates (candidates.ts), take the minimal set of
 * victims (minimal-set.ts) under the classical or fair-sharing rules, with a placement-aware retry.
 * On success the victims are released and the job charged and placed on the trail.
 */
export function preempting(core: CoreState, job: JobState): Plan | null {
  const q = job.queue;
  job.releasable = new Map();
  // A job that is never preempted (quota-mode.ts, nominalOnly) may only take a flavor where its queue's
  // guaranteed usage plus the job stays within the nominal (guaranteed.ts): no victim can change that.
  const noBorrowing = nominalOnly(job);
  let guaranteedShort = false;
  // Flavor per pod set: the best quota mode up to preempt+borrow, preference order on ties.
  const choice: string[] = [];
  const request = new Map<string, number[]>();
  for (const ps of job.podSets) {
    const vec = [ps.shape.gpu * ps.count, ps.shape.cpu * ps.count, ps.shape.mem * ps.count];
    let best: { f: string; mode: number } | null = null;
    for (const f of ps.flavors) {
      const m = quotaMode(q, f, vec, request.get(f), noBorrowing).mode;
      if (m === NOFIT) continue;
      if (noBorrowing) {
        const asked = new Map([[f, [...(request.get(f) ?? [0, 0, 0])]]]);
        addVec(asked, f, vec, 1);
        if (!guaranteedFits(q, asked)) {
          guaranteedShort = true;
          continue;
        }
      }
      if (!best || m < best.mode) best = { f, mode: m };
    }
    if (!best) {
      // No option can be reached by preempting. Held back only by its queue's guaranteed usage, the job
      // waits for a guaranteed job to end, which any release in its tree may be: no bound (classifyPark).
      if (guaranteedShort) job.releasable = new Map();
      else for (const f of ps.flavors) job.releasable.set(f, [0, 0, 0]);
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
      const x = v[r] as number;
      if (x > 0 && fq?.declared[r] && x > available(q.node, f, r)) need.push([f, r]);
    }
  const underNominal =
    need.length > 0
      ? need.every(([f, r]) => !overNominal(q, f, r) && usageOf(q, f, r) < nominalOf(q, f, r))
      : true;
  // Which other queues can lose jobs to this one at all (decided once per queue, not per job):
  // with fair sharing only queues whose share is above the preemptor's share after admission
  // (fair-sharing.ts); otherwise only when reclaiming while under nominal, or with
  // borrowWithinCohort (classical.ts).
  const shareOk = core.fairSharing ? fairShareOtherQueues(core, q, request) : null;
  // A preemptor that ends up borrowing under fair sharing wins by share: fairShareMaxLostRunMs applies.
  const byShare = core.fairSharing && !withinNominal(q, request);
  // With fair sharing, a job that is never preempted first reclaims within its queue's nominal, where
  // neither share rule applies (its queue ends within the nominal); they apply to its second search
  // (searchVictims, `shareStage`). So its candidates are listed without them.
  const otherOk = shareOk ? (noBorrowing ? () => true : shareOk) : classicalOtherQueues(q, underNominal);
  const shareStage =
    shareOk && noBorrowing
      ? (c: Candidate) =>
          !c.other || (shareOk(c.job.queue) && !(byShare && tooCostlyForFairShare(c.job, core.clock.now())))
      : null;
  // Jobs of other queues younger than their queue's minRunBeforeReclaimMs are left out (lost-work.ts).
  const young = { count: 0 };
  const cands = candidates(core, job, request, need, otherOk, young, byShare && !noBorrowing);
  // While some are left out for youth, a retry may succeed once they age: what the job waits for is
  // not bounded by what it can release now, so it is parked to retry at every release (the core has
  // no timers; classifyPark reads a flavor with no releasable entry as "any").
  const failed = (): null => {
    if (young.count > 0) job.releasable = new Map();
    return null;
  };
  for (const f of request.keys()) job.releasable.set(f, [0, 0, 0]);
  for (const c of cands)
    for (const [f, u] of c.job.usage) if (request.has(f)) addVec(job.releasable, f, u, 1);
  if (cands.length === 0) return failed();
  // Even releasing every candidate would not free enough quota: skip the search.
  for (const [f, r] of need) {
    let releasable = 0;
    for (const c of cands) releasable += (c.job.usage.get(f)?.[r] as number | undefined) ?? 0;
    if (available(q.node, f, r) + releasable < ((request.get(f) as number[])[r] as number)) return failed();
  }
  // Set when some trial had the quota but not the nodes: only then can a placement-aware retry help.
  let placementShort = false;
  // A job that is never preempted was checked against its queue's guaranteed usage above: whether its queue
  // may end above the nominal (its preemptible jobs borrowing) is the stage's `allowBorrowing`, as for any job.
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
      ok =
        tPlace(core, core.flavors.get(choice[i] as string) as FlavorState, ps.count, ps.shape, eligible) !==
        null;
    }
    rollback(core, m);
    if (!ok) placementShort = true;
    return ok;
  };
  // Candidates the searches actually took (they passed every rule): what a failed job can count on later.
  const taken = new Set<JobState>();
  const mark0 = core.trail.length;
  const search = (ordered: Candidate[], into: Set<JobState>): JobState[] | null =>
    searchVictims(core, job, request, need, ordered, underNominal, fits, into, shareStage);
  // Quota owed to the job: it stays within its nominal (a job that is never preempted: by its queue's
  // guaranteed usage, checked above).
  const owed = (): boolean => noBorrowing || withinNominal(q, request);
  let victims = search(cands, taken);
  // Owed quota found in the policy order while some trial was short of nodes: the by-node order
  // may make room on a node whose jobs lose less. Both searches run on the trail; the cheaper set
  // (GPU-time lost; ties: the policy order's) is kept, the other rolled back.
  if (victims && placementShort && owed()) {
    const now = core.clock.now();
    const byNode = placementOrder(job, choice, cands, now);
    if (byNode) {
      const cost = (vs: JobState[]): number => vs.reduce((a, v) => a + lostGpuMs(v, now), 0);
      const first = cost(victims);
      rollback(core, mark0);
      const alt = search(byNode, new Set());
      if (alt && cost(alt) < first) victims = alt;
      else {
        rollback(core, mark0);
        victims = search(cands, new Set());
      }
    }
  }
  // The policy order can free enough quota on the wrong nodes (scattered GPUs, no node with room
  // for a pod) and then run out of candidates (a queue is not pushed below its nominal). Retry with
  // the candidates grouped by the nodes that can most cheaply make room for the pods (only when
  // some trial had the quota but not the nodes, so quota-bound failures cost nothing more); the same
  // take-until-it-fits and walk-back keeps the set minimal for quota and placement both.
  // Only for quota owed to the job (it stays within its nominal): a job that would borrow, or win
  // by fair share, waits for capacity rather than evicting whole nodes of running work — on Philly
  // the retry for every preemptor doubled preemptions and tripled the GPU-hours thrown away.
  if (!victims && placementShort && owed()) {
    const byNode = placementOrder(job, choice, cands, core.clock.now());
    if (byNode) victims = search(byNode, taken);
  }
  if (!victims) {
    job.releasable = new Map([...request.keys()].map((f) => [f, [0, 0, 0]]));
    for (const t of taken) for (const [f, u] of t.usage) if (request.has(f)) addVec(job.releasable, f, u, 1);
    return failed();
  }
  // Victims stay released on the trail; now charge and place the preemptor for real.
  const eligible = eligibleFor(job);
  const parts: PodSetPlan[] = [];
  tCharge(core, q, request, noBorrowing);
  for (let i = 0; i < job.podSets.length; i++) {
    const ps = job.podSets[i] as PodSetState;
    const allocs = tPlace(
      core,
      core.flavors.get(choice[i] as string) as FlavorState,
      ps.count,
      ps.shape,
      eligible,
    );
    if (!allocs) return null; // cannot happen: fits() just placed the same pods on the same state
    parts.push({ ps, flavor: choice[i] as string, count: ps.count, allocs });
  }
  // Charged above: does the preemptor's queue end up above its nominal on what it asked for?
  const preemptorBorrows = [...request].some(([f, vec]) =>
    vec.some((v, r) => (v as number) > 0 && overNominal(q, f, r)),
  );
  const withReasons = victims.map((v) => ({
    job: v,
    reason: preemptionReason(core, job, v, preemptorBorrows),
  }));
  return planFrom(job, parts, request, withReasons);
}

/**
 * Victims from the candidates in this order, or null: own-queue candidates alone when there are
 * no others; with fair sharing every candidate (the share rule in minimalSet decides between
 * queues); otherwise Kueue's staged search (classical.ts). With fair sharing, a job that is never
 * preempted (`shareStage` set) first reclaims within its queue's nominal — reclaimable candidates,
 * its queue ending within the nominal, no share rule (as for any preemptor within its nominal) — and
 * only then searches by share among the candidates `shareStage` keeps.
 */
function searchVictims(
  core: CoreState,
  job: JobState,
  request: Map<string, number[]>,
  need: [string, number][],
  ordered: Candidate[],
  underNominal: boolean,
  fits: (allowBorrowing: boolean) => boolean,
  taken: Set<JobState>,
  shareStage: ((c: Candidate) => boolean) | null,
): JobState[] | null {
  const own = ordered.filter((c) => !c.other);
  if (own.length === ordered.length) return minimalSet(core, job, request, need, own, true, fits, taken);
  if (core.fairSharing && shareStage) {
    const reclaimable = ordered.filter((c) => !c.other || c.reclaimOk);
    const found = minimalSet(core, job, request, need, reclaimable, false, fits, taken, false);
    if (found) return found;
    return minimalSet(core, job, request, need, ordered.filter(shareStage), true, fits, taken);
  }
  // Fair sharing decides between queues by share (see fairShareAllows), so borrowing is allowed.
  if (core.fairSharing) return minimalSet(core, job, request, need, ordered, true, fits, taken);
  return classicalSearch(core, job, request, need, ordered, own, underNominal, fits, taken);
}

/**
 * Why a victim goes. Between queues: taking back unused nominal is a reclaim, with or
 * without fair sharing (Kueue's InCohortReclamation); only a preemptor that borrows wins
 * by share (InCohortFairSharing).
 */
export function preemptionReason(
  core: CoreState,
  preemptor: JobState,
  victim: JobState,
  preemptorBorrows: boolean,
): PreemptionReason {
  // In its own queue: by priority (withinQueue), or a never-preempted job taking back the nominal's room
  // for such jobs from a preemptible one (candidates.ts, floorAllows).
  if (victim.queue === preemptor.queue)
    return floorAllows(preemptor, victim) && !withinQueueAllows(preemptor, victim) ? 'reclaim' : 'priority';
  if (victim.queue.windowReclaimable) return 'window-closed';
  if (core.fairSharing && preemptorBorrows) return 'fair-share';
  return 'reclaim';
}
