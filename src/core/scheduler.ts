// The fair-share scheduler core. Pure: no I/O, no timers; time comes from the injected Clock.
// Phases of a cycle (see README.md): heads → snapshot → nominate → order → admit/preempt → requeue.
import { currentDecision, decisionFrom } from './assignment/decision.js';
import { assignDirect } from './assignment/direct.js';
import { evaluate } from './assignment/nominate.js';
import type { Plan } from './assignment/plan.js';
import { BORROW, headBorrows, quotaMode } from './assignment/quota-mode.js';
import { removeNode, upsertCohort, upsertFlavor, upsertNode, upsertQueue } from './configure.js';
import { SchedulerInputError } from './errors.js';
import { ETA_MAX_JOBS, type EtaResult, simulateEtas } from './eta.js';
import { buildJob, cancel, finish, submit } from './jobs.js';
import { type FlavorState, isFractional, type NodeState, type PodAlloc, reapplyAlloc, releaseAlloc } from './nodes.js';
import { pendingShapes } from './pending-shapes.js';
import { anyOverNominal, historyAt, historyChange, weightedShare } from './queue-usage.js';
import { dequeue, enqueue, knownPreemptFail, park, rememberPreemptFail, waitOn } from './queueing.js';
import { rebuildQuotas, refreshWindows } from './quota-config.js';
import { CPU, GPU, MEM, QuotaNode, RESOURCE_COUNT } from './quota.js';
import { type CoreState, createCoreState, type JobState, queueLess, type QueueState, type TreeView } from './state.js';
import { chargeQueue, rollback, tRelease, tReleaseHeld } from './trail.js';
import type { Admission, CohortSpec, CycleResult, FlavorSpec, JobExplanation, JobSpec, NodeSpec, NodeStatus, PendingDecision, PendingShape, PodPlacement, Preemption, Preview, QueueResourceStatus, QueueSpec, QueueStatus, ResourceName, RestoredAdmission, SchedulerOptions } from './types.js';
import { addVec, gpuOf, mapToObj, RES, structuredCloneSpec, toApi } from './units.js';
import { needMet, stillShort, wakeAfterRelease, wakeQueueIf } from './wake.js';
export { DEFAULT_PRIORITY_CLASSES } from './state.js';

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
  return () => tReleaseHeld(core, q, usage, allocs);
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
