// Read-only views and the what-if: preview (rolled back), queueStatus, nodeStatus, admissionOf,
// jobState, debugState.

import { buildAdmission } from './admit.js';
import { evaluate } from './assignment/nominate.js';
import { SchedulerInputError } from './errors.js';
import { holdInfo, holdMessage, matchingHold } from './holds.js';
import { buildJob } from './jobs.js';
import { lostGpuMs } from './preemption/lost-work.js';
import { weightedShare } from './queue-usage.js';
import { RESOURCE_COUNT } from './quota.js';
import type { CoreState, QueueState } from './state.js';
import { rollback } from './trail.js';
import type {
  Admission,
  JobSpec,
  NodeStatus,
  Preview,
  QueueResourceStatus,
  QueueStatus,
  ResourceName,
} from './types.js';
import { mapToObj, RES, structuredCloneSpec, toApi } from './units.js';

export function preview(core: CoreState, spec: JobSpec): Preview {
  const job = buildJob(core, spec);
  const hold = matchingHold(core, spec);
  if (hold)
    return {
      admissible: false,
      borrowed: false,
      wouldPreempt: [],
      reason: 'BudgetExhausted',
      message: holdMessage(hold),
      hold: holdInfo(hold),
    };
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
        lostGpuMs: lostGpuMs(v.job, now),
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
        if (sq?.declared[r])
          siblingsBorrowed += Math.max(0, (sq.usage[r] as number) - (sq.subtree[r] as number));
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
    pendingCount: q.heap.size + q.parked.size + heldIn(core, q),
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
      capacity: {
        gpu: (n.spec.gpus * per) / 1000,
        cpu: Math.round(n.spec.cpu),
        memory: Math.round(n.spec.memory),
      },
      free: { gpu: n.freeGpuTotal / 1000, cpu: n.cpuFree, memory: n.memFree },
      gpus: n.gpuFree.map((f, index) => ({ index, capacity: per / 1000, free: f / 1000 })),
    };
    if (n.spec.dedicatedTenant !== undefined) s.dedicatedTenant = n.spec.dedicatedTenant;
    out.push(s);
  }
  return out;
}

/** Held jobs are pending too (only out of the admission order). */
function heldIn(core: CoreState, q: QueueState): number {
  let n = 0;
  for (const j of core.held) if (j.queue === q) n++;
  return n;
}

/** The admission of a running job, or undefined. */
export function admissionOf(core: CoreState, jobId: string): Admission | undefined {
  return core.jobs.get(jobId)?.admission ?? undefined;
}

/** 'pending' | 'admitted' for a live job, undefined once finished/cancelled or never seen. */
export function jobState(core: CoreState, jobId: string): 'pending' | 'admitted' | undefined {
  return core.jobs.get(jobId)?.status;
}

/** A plain, deep copy of every piece of state a decision depends on; tests compare it before/after a
 * what-if.
 */
export function debugState(core: CoreState): unknown {
  const quota: unknown[] = [];
  for (const q of core.queues.values()) quota.push(['queue', q.spec.name, mapToObj(q.node.flavors)]);
  for (const c of core.cohorts.values()) quota.push(['cohort', c.spec.name, mapToObj(c.node.flavors)]);
  return structuredCloneSpec({
    quota,
    nodes: [...core.nodes.values()].map((n) => [
      n.spec.name,
      [...n.gpuFree],
      n.freeGpuTotal,
      n.cpuFree,
      n.memFree,
      n.pods,
    ]),
    flavors: [...core.flavors.values()].map((f) => [
      f.spec.name,
      f.freeGpu,
      f.freeCpu,
      f.freeMem,
      f.nodes.map((n) => n.spec.name),
    ]),
    queues: [...core.queues.values()].map((q) => ({
      name: q.spec.name,
      heap: q.heap
        .values()
        .map((j) => j.spec.id)
        .sort(),
      parked: [...q.parked].map((j) => j.spec.id).sort(),
      blocked: q.blocked,
      admitted: [...q.admitted].map((j) => j.spec.id).sort(),
      history: { ...q.history },
      windowReclaimable: q.windowReclaimable,
      guaranteed: mapToObj(q.guaranteed),
    })),
    jobs: [...core.jobs.values()].map((j) => [
      j.spec.id,
      j.status,
      j.admission,
      mapToObj(j.usage),
      j.allocs.map((a) => [a.node.spec.name, a.gpus, a.gpuMilli]),
    ]),
    active: [...core.active].map((q) => q.spec.name).sort(),
    shapes: [...core.shapes.entries()],
    holds: [...core.holds.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)),
    held: [...core.held].map((j) => j.spec.id).sort(),
    reclaims: [...core.reclaims].map(([id, r]) => [id, r.reason, r.holdUntil]),
    reclaimHeld: [...core.reclaimHeld]
      .map((j) => [j.spec.id, j.reclaimHoldUntil])
      .sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
    trail: core.trail.length,
  });
}
