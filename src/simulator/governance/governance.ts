// Governance in a trace replay: probes (a seeded utilization profile per job), idle
// reclaim on the virtual clock, and the controller's windows. The replay calls the hooks below when
// a job is submitted, starts and stops; everything here is deterministic (seeded, no wall clock).

import {
  type AdjustmentReason,
  type ControllerAdjustment,
  type ControllerQueueInput,
  type ControllerSettings,
  controllerStep,
  DEFAULT_CONTROLLER_SETTINGS,
  type IsolationPolicy,
  type LimitSetting,
  meanUtilization,
  type UtilizationProfile,
  utilizationProfile,
  type WorkloadType,
} from '../../core/governance/index.js';
import type { Scheduler } from '../../core/scheduling/index.js';
import { IndexedHeap } from '../../core/scheduling/index.js';
import { round6 } from '../engine.js';
import { nominalGpus, type SimQueue } from '../queues.js';
import { type BuiltScheduler, governedQueueSpec } from '../scheduling-policies.js';
import { jobGpus, type TraceJob } from '../trace.js';
import { jobWorkloadType } from './policy.js';
import type { GovernanceOptions, GovernanceOutcome, IdleCounts, IdleFlag, ProbeSegment } from './types.js';

interface IdleEvent {
  t: number;
  seq: number;
  job: number;
  gen: number;
  heapIndex: number;
}
const eventsFirst = (a: IdleEvent, b: IdleEvent): boolean => a.t < b.t || (a.t === b.t && a.seq < b.seq);

/** Per queue: what the controller reads, integrated over the current window. */
interface QueueMeter {
  queue: SimQueue;
  policy: IsolationPolicy | null;
  nominal: number;
  used: number;
  at: number;
  usedInt: number;
  borrowedInt: number;
  unusedInt: number;
  busyInt: number;
  pending: Map<number, number>;
  pendingGpus: number;
  /** Eligible jobs in submit order; `slaNext` is the first whose deadline has not passed a window end. */
  sla: number[];
  slaNext: number;
}

const emptyCounts = (): IdleCounts => ({ flagged: 0, notified: 0, reclaimed: 0, freedGpuMs: 0 });

export class GovernanceRun {
  private readonly types: WorkloadType[];
  private readonly profiles: UtilizationProfile[];
  private readonly gpus: number[];
  private readonly meterOf: QueueMeter[];
  private readonly meters: QueueMeter[];
  private readonly runStart: number[];
  private readonly offset: number[];
  private readonly accounted: number[];
  private readonly firstStart: number[];
  private readonly gen: number[];
  private readonly running = new Set<number>();
  private readonly segments: ProbeSegment[] = [];
  private readonly heap = new IndexedHeap<IdleEvent>(eventsFirst);
  private seq = 0;
  private readonly idle = emptyCounts();
  private readonly idleByPolicy: Record<string, IdleCounts> = {};
  private readonly flags: IdleFlag[] = [];
  private readonly settings: ControllerSettings;
  private readonly slaMs: number;
  private nextTick: number;
  private windows = 0;
  private readonly adjustments: ControllerAdjustment[] = [];
  private readonly current = new Map<string, LimitSetting>();
  private readonly policyByName = new Map<string, IsolationPolicy>();
  /** Σ borrowed and Σ unused nominal over all queues now, and their integrals over the window. */
  private borrowedNow = 0;
  private unusedNow = 0;
  private totalsAt: number;
  private borrowedTotalInt = 0;
  private unusedTotalInt = 0;

  constructor(
    private readonly trace: readonly TraceJob[],
    jobQueues: readonly SimQueue[],
    queues: readonly SimQueue[],
    private readonly built: BuiltScheduler,
    private readonly opts: GovernanceOptions,
    start: number,
  ) {
    this.types = trace.map((j) => jobWorkloadType(opts.seed, j));
    this.profiles = trace.map((j, i) => utilizationProfile(opts.seed, j.id, this.types[i]!, j.durationMs));
    this.gpus = trace.map(jobGpus);
    const byName = new Map<string, QueueMeter>();
    this.meters = queues.map((q) => {
      const policy = built.governed.get(q.name)?.policy ?? null;
      if (policy) this.policyByName.set(policy.name, policy);
      // a best-effort queue's nominal is 0 in the core, whatever the file says
      const nominal = policy?.level === 'BEST_EFFORT' ? 0 : nominalGpus(q);
      const m: QueueMeter = {
        queue: q,
        policy,
        nominal,
        used: 0,
        at: start,
        usedInt: 0,
        borrowedInt: 0,
        unusedInt: 0,
        busyInt: 0,
        pending: new Map(),
        pendingGpus: 0,
        sla: [],
        slaNext: 0,
      };
      byName.set(q.name, m);
      return m;
    });
    this.meterOf = jobQueues.map((q) => byName.get(q.name)!);
    for (const m of this.meters) this.unusedNow += m.nominal;
    const n = trace.length;
    this.runStart = new Array<number>(n).fill(-1);
    this.offset = new Array<number>(n).fill(0);
    this.accounted = new Array<number>(n).fill(0);
    this.firstStart = new Array<number>(n).fill(-1);
    this.gen = new Array<number>(n).fill(0);
    this.settings = { ...DEFAULT_CONTROLLER_SETTINGS, ...(opts.controllerSettings ?? {}) };
    this.slaMs = opts.slaMs ?? 60_000;
    this.totalsAt = start;
    this.nextTick = opts.controller ? start + this.settings.windowMs : Number.POSITIVE_INFINITY;
  }

  // ------------------------------------------------------------ hooks

  /** A job entered its queue (accepted by the core); `eligible`: it fitted its queue's unused nominal. */
  submitted(i: number, t: number, eligible: boolean): void {
    const m = this.meterOf[i]!;
    m.pending.set(i, t);
    m.pendingGpus += this.gpus[i]!;
    if (eligible) m.sla.push(i);
  }

  /** A job started at `t` with `doneMs` of its work already kept. */
  started(i: number, t: number, doneMs: number): void {
    const m = this.meterOf[i]!;
    this.setUsed(m, t, this.gpus[i]!);
    m.pending.delete(i);
    m.pendingGpus -= this.gpus[i]!;
    this.runStart[i] = t;
    this.offset[i] = doneMs;
    this.accounted[i] = t;
    if (this.firstStart[i]! < 0) this.firstStart[i] = t;
    this.running.add(i);
    this.scheduleIdle(i, t, doneMs, m);
  }

  /** A job stopped at `t`: finished (or reclaimed idle), or preempted keeping `keptMs` of this run. */
  stopped(i: number, t: number, preempted: boolean, keptMs: number): void {
    const m = this.meterOf[i]!;
    this.accrueBusy(i, t, m);
    this.setUsed(m, t, -this.gpus[i]!);
    const start = this.runStart[i]!;
    this.segments.push({
      job: i,
      start,
      end: t,
      offsetMs: this.offset[i]!,
      keptMs: preempted ? keptMs : t - start,
    });
    this.running.delete(i);
    this.runStart[i] = -1;
    this.gen[i]!++;
    if (preempted) {
      m.pending.set(i, t);
      m.pendingGpus += this.gpus[i]!;
    }
  }

  /** The next instant governance needs the clock to stop at (an idle flag or a controller window). */
  nextAt(): number {
    const e = this.heap.peek();
    return Math.min(e ? e.t : Number.POSITIVE_INFINITY, this.nextTick);
  }

  /**
   * Acts on what is due at `t`: idle flags (a reclaimed job is ended by `endJob`, which calls
   * `stopped`), then a controller window. True when something changed that needs a cycle.
   */
  fire(t: number, endJob: (i: number) => void): boolean {
    let changed = false;
    for (let e = this.heap.peek(); e && e.t <= t; e = this.heap.peek()) {
      this.heap.pop();
      if (e.gen !== this.gen[e.job]) continue;
      if (this.flag(e.job, e.t)) {
        endJob(e.job);
        changed = true;
      }
    }
    while (this.nextTick <= t) {
      if (this.tick(this.nextTick)) changed = true;
      this.nextTick += this.settings.windowMs;
    }
    return changed;
  }

  outcome(): GovernanceOutcome {
    const finalSettings: Record<string, LimitSetting> = {};
    for (const k of [...this.current.keys()].sort()) finalSettings[k] = this.current.get(k)!;
    const byPolicy: Record<string, IdleCounts> = {};
    for (const k of Object.keys(this.idleByPolicy).sort()) byPolicy[k] = this.idleByPolicy[k]!;
    return {
      seed: this.opts.seed,
      idleReclaim: this.opts.idleReclaim,
      controller: this.opts.controller,
      controllerSettings: this.settings,
      queuePolicies: this.meters.map((m) => ({ queue: m.queue.name, policy: m.policy?.name ?? null })),
      types: this.types,
      profiles: this.profiles,
      segments: this.segments,
      idle: this.idle,
      idleByPolicy: byPolicy,
      flags: this.flags,
      windows: this.windows,
      adjustments: this.adjustments,
      finalSettings,
    };
  }

  // ------------------------------------------------------------ idle reclaim

  /**
   * The instant the job's idle stretch has lasted its policy's idleForMs — exact on the virtual clock:
   * the tail starts at idleAfterMs into the work (at once when the run resumes inside it, or when the
   * busy level itself is under the threshold). Nothing when the run ends first.
   */
  private scheduleIdle(i: number, t: number, doneMs: number, m: QueueMeter): void {
    if (!this.opts.idleReclaim || !m.policy) return;
    const p = this.profiles[i]!;
    const rule = m.policy.idle;
    const idleFrom =
      p.busy < rule.utilizationBelow
        ? 0
        : p.idleAfterMs !== null && p.idle < rule.utilizationBelow
          ? p.idleAfterMs
          : null;
    if (idleFrom === null) return;
    const at = t + Math.max(0, idleFrom - doneMs) + rule.idleForMs;
    if (at >= t + this.trace[i]!.durationMs - doneMs) return;
    this.heap.push({ t: at, seq: this.seq++, job: i, gen: this.gen[i]!, heapIndex: -1 });
  }

  /** Counts the flag; true when the policy's action reclaims (the caller ends the job). */
  private flag(i: number, t: number): boolean {
    const m = this.meterOf[i]!;
    const policy = m.policy!;
    const c = (this.idleByPolicy[policy.name] ??= emptyCounts());
    const action = policy.idle.action;
    const reclaim = action === 'RECLAIM' || (action === 'RECLAIM_IF_BORROWING' && m.used > m.nominal + 1e-9);
    for (const x of [this.idle, c]) {
      x.flagged++;
      if (!reclaim) x.notified++;
    }
    if (!reclaim) {
      this.flags.push({ job: i, at: t, policy: policy.name, reclaimed: false, freedGpuMs: 0 });
      return false;
    }
    const end = this.runStart[i]! + this.trace[i]!.durationMs - this.offset[i]!;
    const freed = this.gpus[i]! * (end - t);
    for (const x of [this.idle, c]) {
      x.reclaimed++;
      x.freedGpuMs += freed;
    }
    this.flags.push({ job: i, at: t, policy: policy.name, reclaimed: true, freedGpuMs: freed });
    return true;
  }

  // ------------------------------------------------------------ controller

  private setUsed(m: QueueMeter, t: number, dGpus: number): void {
    this.accrueQueue(m, t);
    this.accrueTotals(t);
    this.borrowedNow -= Math.max(0, m.used - m.nominal);
    this.unusedNow -= Math.max(0, m.nominal - m.used);
    m.used += dGpus;
    this.borrowedNow += Math.max(0, m.used - m.nominal);
    this.unusedNow += Math.max(0, m.nominal - m.used);
  }

  private accrueQueue(m: QueueMeter, t: number): void {
    const dt = t - m.at;
    if (dt > 0) {
      m.usedInt += m.used * dt;
      m.borrowedInt += Math.max(0, m.used - m.nominal) * dt;
      m.unusedInt += Math.max(0, m.nominal - m.used) * dt;
    }
    m.at = t;
  }

  private accrueTotals(t: number): void {
    const dt = t - this.totalsAt;
    if (dt > 0) {
      this.borrowedTotalInt += this.borrowedNow * dt;
      this.unusedTotalInt += this.unusedNow * dt;
    }
    this.totalsAt = t;
  }

  /** Busy GPU-time (GPUs × probed utilization) of a running job since it was last accounted. */
  private accrueBusy(i: number, t: number, m: QueueMeter): void {
    const from = this.accounted[i]!;
    if (t > from) {
      const base = this.offset[i]! - this.runStart[i]!;
      m.busyInt += this.gpus[i]! * meanUtilization(this.profiles[i]!, base + from, base + t) * (t - from);
    }
    this.accounted[i] = t;
  }

  /**
   * One controller window ending at `t`: the inputs of every governed queue over the window, then
   * controllerStep; each adjustment is applied with the core's upsertQueue (the policy's spec at the
   * new setting) and kept with its inputs, so the run's adjustments can be recomputed.
   */
  private tick(t: number): boolean {
    const w = this.settings.windowMs;
    this.windows++;
    for (const i of this.running) this.accrueBusy(i, t, this.meterOf[i]!);
    this.accrueTotals(t);
    const inputs: ControllerQueueInput[] = [];
    for (const m of this.meters) {
      this.accrueQueue(m, t);
      if (m.policy) {
        let oldest = t;
        for (const since of m.pending.values()) if (since < oldest) oldest = since;
        let eligible = 0;
        let met = 0;
        while (m.slaNext < m.sla.length) {
          const j = m.sla[m.slaNext]!;
          const deadline = this.trace[j]!.submitMs + this.slaMs;
          if (deadline > t) break;
          eligible++;
          const fs = this.firstStart[j]!;
          if (fs >= 0 && fs <= deadline) met++;
          m.slaNext++;
        }
        // what others borrowed, attributed to the lenders in proportion to their unused nominal
        const lent =
          this.unusedTotalInt > 0 ? (this.borrowedTotalInt * m.unusedInt) / this.unusedTotalInt : 0;
        inputs.push({
          queue: m.queue.name,
          tenant: m.queue.tenant,
          policy: m.policy.name,
          nominalGpus: m.nominal,
          usedGpus: round6(m.usedInt / w),
          lentGpus: round6(lent / w),
          borrowedGpus: round6(m.borrowedInt / w),
          pendingGpus: round6(m.pendingGpus),
          oldestWaitMs: t - oldest,
          slaEligible: eligible,
          slaMet: met,
          utilization: m.usedInt > 0 ? round6(m.busyInt / m.usedInt) : null,
        });
      }
      m.usedInt = m.borrowedInt = m.unusedInt = m.busyInt = 0;
    }
    this.borrowedTotalInt = this.unusedTotalInt = 0;
    const adj = controllerStep(inputs, this.current, this.policyByName, this.settings);
    for (const a of adj) {
      const g = this.built.governed.get(a.queue)!;
      this.current.set(a.queue, a.to);
      this.sched.upsertQueue(governedQueueSpec(g.queue, g.policy, a.to));
      this.adjustments.push(a);
    }
    return adj.length > 0;
  }

  private get sched(): Scheduler {
    return this.built.sched;
  }
}

/** Adjustments per reason (a queue's adjustment may carry several). */
export function adjustmentsByReason(
  adjustments: readonly ControllerAdjustment[],
): Record<AdjustmentReason, number> {
  const out: Record<AdjustmentReason, number> = {
    LEND_IDLE: 0,
    TIGHTEN_LENDING: 0,
    TIGHTEN_BORROWING: 0,
    RELAX_BORROWING: 0,
  };
  for (const a of adjustments) for (const r of a.reasons) out[r]++;
  return out;
}
