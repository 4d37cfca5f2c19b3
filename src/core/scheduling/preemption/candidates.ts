// Preemption candidates and their order: who may be a victim (withinQueue, reclaimWithinCohort,
// borrowWithinCohort, priority classes), policy order, and the by-node order of the placement retry.
import { eligibleFor } from '../assignment/eligible.js';
import { neverPreempted } from '../guaranteed.js';
import type { NodeState } from '../nodes.js';
import { overNominal } from '../queue-usage.js';
import { GPU, RESOURCE_COUNT } from '../quota.js';
import type { CoreState, JobState, QueueState } from '../state.js';
import { lostGpuMs, tooCostlyForFairShare, tooYoungForReclaim, victimCost } from './lost-work.js';

export interface Candidate {
  job: JobState;
  other: boolean;
  reclaimOk: boolean;
  borrowOk: boolean;
}

/**
 * Candidates regrouped by node: nodes of the chosen flavors where freeing the candidates could
 * hold a pod first, then those with the most free GPU already (least to evict), then the least
 * GPU-time its candidates would lose, then the fewest candidate GPUs, then name; within a node the
 * policy order stays. Null if it changes nothing.
 */
export function placementOrder(
  job: JobState,
  choice: string[],
  cands: Candidate[],
  now: number,
): Candidate[] | null {
  const podGpu = new Map<string, number>(); // per chosen flavor: the smallest GPU pod shape
  job.podSets.forEach((ps, i) => {
    const f = choice[i] as string;
    if (ps.shape.gpu > 0) podGpu.set(f, Math.min(podGpu.get(f) ?? Number.POSITIVE_INFINITY, ps.shape.gpu));
  });
  if (podGpu.size === 0) return null;
  const eligible = eligibleFor(job);
  const held = new Map<NodeState, number>();
  // GPU-time the candidates on a node would lose (a job on several nodes counts on each)
  const cost = new Map<NodeState, number>();
  for (const c of cands) {
    const lost = lostGpuMs(c.job, now);
    const seen = new Set<NodeState>();
    for (const a of c.job.allocs) {
      if (!podGpu.has(a.node.flavor.spec.name) || !eligible(a.node)) continue;
      held.set(a.node, (held.get(a.node) ?? 0) + a.gpuMilli.reduce((x, y) => x + y, 0));
      if (!seen.has(a.node)) cost.set(a.node, (cost.get(a.node) ?? 0) + lost);
      seen.add(a.node);
    }
  }
  const ranked = [...held.entries()]
    .map(([n, h]) => ({
      n,
      h,
      lost: cost.get(n) ?? 0,
      useful: n.freeGpuTotal + h >= (podGpu.get(n.flavor.spec.name) as number) ? 0 : 1,
    }))
    .sort(
      (a, b) =>
        a.useful - b.useful ||
        b.n.freeGpuTotal - a.n.freeGpuTotal ||
        a.lost - b.lost ||
        a.h - b.h ||
        (a.n.spec.name < b.n.spec.name ? -1 : 1),
    );
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

/** Is `v` using more than its nominal on a (flavor, resource) the preemptor needs? */
export function borrowingOnNeed(
  v: QueueState,
  request: Map<string, number[]>,
  need: [string, number][],
): boolean {
  if (need.length > 0) return need.some(([f, r]) => overNominal(v, f, r));
  for (const [f, vec] of request)
    for (let r = 0; r < RESOURCE_COUNT; r++) if ((vec[r] as number) > 0 && overNominal(v, f, r)) return true;
  return false;
}

/** May `job` preempt `c`, a job of its own queue, by its queue's withinQueue policy (priority)? */
export function withinQueueAllows(job: JobState, c: JobState): boolean {
  const q = job.queue;
  if (q.withinQueue === 'Never' || c.preemptible !== 'yes') return false;
  const lower = c.priority < job.priority;
  const newerEqual =
    q.withinQueue === 'LowerOrNewerEqualPriority' &&
    c.priority === job.priority &&
    (c.spec.submitTime > job.spec.submitTime ||
      (c.spec.submitTime === job.spec.submitTime && c.spec.id > job.spec.id));
  return lower || newerEqual;
}

/**
 * The guaranteed floor (guaranteed.ts): a job that is never preempted takes its queue's nominal back
 * from the queue's own lower-priority jobs that can be preempted at all ('yes' or 'reclaim-only'),
 * whatever withinQueue says — to them the nominal's room for never-preempted jobs is lent, as a
 * lender's nominal is to its borrowers. Its preemption reason is 'reclaim'.
 */
export function floorAllows(job: JobState, c: JobState): boolean {
  return neverPreempted(job) && c.preemptible !== 'no' && c.priority < job.priority;
}

/**
 * Who may be a victim of `job`, in policy order. Jobs of other queues younger than their queue's
 * minRunBeforeReclaimMs are left out and counted in `young` (the search may succeed once they age);
 * when the preemption would be by fair share (`fairShare`: the preemptor ends up borrowing), so are
 * jobs that would lose more run time than their queue's fairShareMaxLostRunMs.
 */
export function candidates(
  core: CoreState,
  job: JobState,
  request: Map<string, number[]>,
  need: [string, number][],
  otherOk: (v: QueueState) => boolean,
  young?: { count: number },
  fairShare = false,
): Candidate[] {
  const q = job.queue;
  const now = core.clock.now();
  const out: Candidate[] = [];
  const uses = (c: JobState): boolean => {
    for (const f of c.usage.keys()) if (request.has(f)) return true;
    return false;
  };
  if (q.withinQueue !== 'Never' || neverPreempted(job)) {
    for (const c of q.admitted) {
      if (!uses(c) || !(withinQueueAllows(job, c) || floorAllows(job, c))) continue;
      out.push({ job: c, other: false, reclaimOk: false, borrowOk: false });
    }
  }
  if (q.node.parent && (q.reclaim !== 'Never' || q.borrowPolicy !== 'Never')) {
    for (const v of core.treeQueues.get(q.root) ?? []) {
      if (v === q || !borrowingOnNeed(v, request, need) || !otherOk(v)) continue;
      for (const c of v.admitted) {
        if (c.preemptible === 'no' || !uses(c)) continue;
        if (tooYoungForReclaim(c, now)) {
          if (young) young.count++;
          continue;
        }
        if (fairShare && tooCostlyForFairShare(c, now)) continue;
        const lower = c.priority < job.priority;
        const reclaimOk =
          q.reclaim === 'Any' || (q.reclaim === 'LowerPriority' && (lower || v.isolation === 'BEST_EFFORT'));
        const borrowOk =
          q.borrowPolicy === 'LowerPriority' &&
          c.preemptible === 'yes' &&
          lower &&
          (q.borrowThreshold === null || c.priority <= q.borrowThreshold);
        if (reclaimOk || borrowOk) out.push({ job: c, other: true, reclaimOk, borrowOk });
      }
    }
  }
  // Candidate order: other queues first (best-effort queues before them all), lower priority,
  // least work lost per GPU of the request it can cover (lost-work.ts, victimCost), most recently
  // admitted, id.
  let needGpu = 0;
  for (const v of request.values()) needGpu += v[GPU] as number;
  const lost = new Map<JobState, number>();
  for (const c of out) lost.set(c.job, victimCost(c.job, now, needGpu));
  out.sort(
    (a, b) =>
      Number(b.other) - Number(a.other) ||
      Number(b.job.queue.isolation === 'BEST_EFFORT') - Number(a.job.queue.isolation === 'BEST_EFFORT') ||
      a.job.priority - b.job.priority ||
      (lost.get(a.job) as number) - (lost.get(b.job) as number) ||
      b.job.admitSeq - a.job.admitSeq ||
      (a.job.spec.id < b.job.spec.id ? -1 : a.job.spec.id > b.job.spec.id ? 1 : 0),
  );
  return out;
}
