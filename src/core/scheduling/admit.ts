// Commit: a plan's trial changes become the state; victims go back to pending with their original
// submit time; a running job's release frees quota and nodes and wakes who can gain.
import type { Plan } from './assignment/plan.js';
import { neverPreempted } from './guaranteed.js';
import { type NodeState, type PodAlloc, releaseAlloc } from './nodes.js';
import { lostGpuMs } from './preemption/lost-work.js';
import { anyOverNominal, historyChange } from './queue-usage.js';
import { dequeue, enqueue } from './queueing.js';
import { RESOURCE_COUNT } from './quota.js';
import type { CoreState, JobState } from './state.js';
import { chargeQueue } from './trail.js';
import type { Admission, PodPlacement, Preemption } from './types.js';
import { addVec, gpuOf } from './units.js';
import { wakeAfterRelease } from './wake.js';

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

export function buildAdmission(job: JobState, plan: Plan, at: number): Admission {
  return {
    jobId: job.spec.id,
    queue: job.queue.spec.name,
    at,
    podSets: plan.parts.map((p) => ({
      name: p.ps.name,
      flavor: p.flavor,
      count: p.count,
      placements: groupPlacements(p.allocs),
    })),
    borrowed: plan.borrowed,
    mode: plan.mode,
  };
}

/** Applies a plan whose trial changes are in place since `mark`: victims go back to pending, the job is admitted. */
export function commit(
  core: CoreState,
  job: JobState,
  plan: Plan,
  mark: number,
  now: number,
  preempted: Preemption[],
): Admission {
  core.trail.length = mark; // the trial changes become the state
  core.stateVersion++;
  const q = job.queue;
  const freed = new Map<string, number[]>();
  for (const { job: v } of plan.victims) for (const [f, u] of v.usage) addVec(freed, f, u, 1);
  const freedNodes = [...new Set(plan.victims.flatMap((v) => v.job.allocs.map((a) => a.node)))];
  for (const { job: v, reason } of plan.victims) {
    const p: Preemption = {
      victimId: v.spec.id,
      victimQueue: v.queue.spec.name,
      preemptorId: job.spec.id,
      preemptorQueue: q.spec.name,
      reason,
      at: now,
      lostGpuMs: lostGpuMs(v, now),
    };
    preempted.push(p);
    v.queue.admitted.delete(v);
    historyChange(core, v.queue, now, -gpuOf(v.usage), 0);
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
  for (const { job: v } of plan.victims)
    if (v.queue.windowReclaimable && !anyOverNominal(v.queue)) v.queue.windowReclaimable = false;
  if (
    plan.victims.length > 0 &&
    freedMoreThanTaken(
      plan.victims.map((v) => v.job),
      plan.usage,
      freed,
    )
  ) {
    const queues = new Set(plan.victims.map((v) => v.job.queue));
    for (const vq of queues) wakeAfterRelease(core, vq, freed, freedNodes);
  }
  return job.admission;
}

/** Did the victims free more than the preemptor took? Only then can anyone else gain from it. */
export function freedMoreThanTaken(
  _victims: JobState[],
  taken: Map<string, number[]>,
  freed: Map<string, number[]>,
): boolean {
  for (const [f, v] of freed) {
    const t = taken.get(f);
    for (let r = 0; r < RESOURCE_COUNT; r++)
      if ((v[r] as number) > ((t?.[r] as number | undefined) ?? 0)) return true;
  }
  return false;
}

export function release(core: CoreState, j: JobState, now: number): void {
  const q = j.queue;
  core.stateVersion++;
  chargeQueue(q, j.usage, -1, neverPreempted(j));
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
