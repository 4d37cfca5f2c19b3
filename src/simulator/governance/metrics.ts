// The governance figures of a replay: probed GPU utilization beside allocation, idle
// reclaim and the controller's adjustments, overall and per tenant. Only runs made with probes have
// them (the report of a run without keeps its earlier shape byte for byte).
import {
  type AdjustmentReason,
  type LimitSetting,
  meanUtilization,
  WORKLOAD_TYPES,
  type WorkloadType,
} from '../../core/governance/index.js';
import { type ReplayOutcome, round6 } from '../engine.js';
import { adjustmentsByReason } from './governance.js';
import type { IdleCounts } from './types.js';

const H = 3_600_000;

export interface IdleStats {
  flagged: number;
  notified: number;
  /** Jobs reclaimed in their idle tail: their work was done, so they finished early. */
  reclaimed: number;
  /** GPU-hours the reclaimed jobs would still have held idle. */
  gpuHoursFreed: number;
}

export interface GovernanceTenantMetrics {
  tenant: string;
  /** Policies of the tenant's queues (comma list; '-' when none is governed). */
  policy: string;
  /** GPU-time × probed utilization of the tenant's runs inside the window / (capacity × window). */
  utilization: number;
  /** Its probed utilization over the GPU-time it held (null when it held none). */
  meanUtilization: number | null;
  idle: IdleStats;
}

export interface GovernanceMetrics {
  seed: number;
  idleReclaim: boolean;
  controller: boolean;
  controllerWindowMs: number | null;
  /** Jobs per workload type (the trace's column, else drawn by seed). */
  workloadTypes: Record<WorkloadType, number>;
  /** Σ over runs inside the window of GPUs × duration × mean probed utilization / (capacity × window):
   * "allocation × probed utilization".
   */
  utilization: number;
  /** The same over runs kept (GPU-time a preemption threw away left out), as useful allocation is to
   * allocation.
   */
  usefulUtilization: number;
  /** utilization / allocation: the probed utilization of the GPUs held. */
  meanUtilizationOfAllocated: number | null;
  /** GPU-hours held inside the window by jobs in their idle tail. */
  idleTailGpuHours: number;
  idle: IdleStats;
  idleByPolicy: Record<string, IdleStats>;
  controllerWindows: number;
  adjustments: number;
  adjustmentsByReason: Record<AdjustmentReason, number>;
  /** Settings in force at the end of the run, per queue the controller moved. */
  finalSettings: Record<string, LimitSetting>;
  tenants: GovernanceTenantMetrics[];
}

const idleStats = (c: IdleCounts): IdleStats => ({
  flagged: c.flagged,
  notified: c.notified,
  reclaimed: c.reclaimed,
  gpuHoursFreed: round6(c.freedGpuMs / H),
});

export function computeGovernanceMetrics(
  o: ReplayOutcome,
  allocationRatio: number,
): GovernanceMetrics | undefined {
  const g = o.governance;
  if (!g) return undefined;
  const w0 = o.windowStart;
  const w1 = o.windowEnd;
  const denom = o.capacityGpus * Math.max(1, w1 - w0);
  const tenants = o.tenants.map((t) => t.name);
  const tIdx = new Map(tenants.map((t, i) => [t, i]));
  const busy = tenants.map(() => 0);
  const held = tenants.map(() => 0);
  const idleBy = tenants.map(() => ({ flagged: 0, notified: 0, reclaimed: 0, freedGpuMs: 0 }));
  let busyAll = 0;
  let busyKept = 0;
  let idleTail = 0;
  for (const s of g.segments) {
    const a = Math.max(s.start, w0);
    const b = Math.min(s.end, w1);
    if (b <= a) continue;
    const job = o.jobs[s.job]!;
    const p = g.profiles[s.job]!;
    const base = s.offsetMs - s.start;
    const u = job.gpus * meanUtilization(p, base + a, base + b) * (b - a);
    const ti = tIdx.get(job.tenant)!;
    busy[ti]! += u;
    held[ti]! += job.gpus * (b - a);
    busyAll += u;
    const keptEnd = Math.min(b, s.start + s.keptMs);
    if (keptEnd > a) busyKept += job.gpus * meanUtilization(p, base + a, base + keptEnd) * (keptEnd - a);
    if (p.idleAfterMs !== null) {
      const tailFrom = Math.max(a, s.start + p.idleAfterMs - s.offsetMs);
      if (b > tailFrom) idleTail += job.gpus * (b - tailFrom);
    }
  }
  // per-tenant idle counts: from the jobs of each queue's policy counts, by the flags' owners
  const policyOf = new Map<string, string[]>();
  const queueTenant = new Map(o.jobs.map((j) => [j.queue, j.tenant]));
  for (const qp of g.queuePolicies) {
    const t = queueTenant.get(qp.queue);
    if (t === undefined || qp.policy === null) continue;
    const l = policyOf.get(t) ?? [];
    if (!l.includes(qp.policy)) l.push(qp.policy);
    policyOf.set(t, l);
  }
  for (const c of g.flags) {
    const x = idleBy[tIdx.get(o.jobs[c.job]!.tenant)!]!;
    x.flagged++;
    if (c.reclaimed) {
      x.reclaimed++;
      x.freedGpuMs += c.freedGpuMs;
    } else x.notified++;
  }
  const types = Object.fromEntries(WORKLOAD_TYPES.map((t) => [t, 0])) as Record<WorkloadType, number>;
  for (const t of g.types) types[t]++;
  const utilization = round6(busyAll / denom);
  const byPolicy: Record<string, IdleStats> = {};
  for (const [k, v] of Object.entries(g.idleByPolicy)) byPolicy[k] = idleStats(v);
  return {
    seed: g.seed,
    idleReclaim: g.idleReclaim,
    controller: g.controller,
    controllerWindowMs: g.controller ? g.controllerSettings.windowMs : null,
    workloadTypes: types,
    utilization,
    usefulUtilization: round6(busyKept / denom),
    meanUtilizationOfAllocated: allocationRatio > 0 ? round6(busyAll / denom / allocationRatio) : null,
    idleTailGpuHours: round6(idleTail / H),
    idle: idleStats(g.idle),
    idleByPolicy: byPolicy,
    controllerWindows: g.windows,
    adjustments: g.adjustments.length,
    adjustmentsByReason: adjustmentsByReason(g.adjustments),
    finalSettings: g.finalSettings,
    tenants: tenants.map((t, i) => ({
      tenant: t,
      policy: (policyOf.get(t) ?? ['-']).join(','),
      utilization: round6(busy[i]! / denom),
      meanUtilization: held[i]! > 0 ? round6(busy[i]! / held[i]!) : null,
      idle: idleStats(idleBy[i]!),
    })),
  };
}
