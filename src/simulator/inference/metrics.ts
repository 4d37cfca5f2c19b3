// What an inference run measures, per part of the run (the tuning days and the held-out rest):
// accumulators the replay feeds, and their summary. Definitions: docs/simulator-inference.md.
import { percentile } from '../percentile.js';

/** A reversal counts when a service's desired replicas change direction within this long. */
export const REVERSAL_WINDOW_MS = 10 * 60_000;

export interface ServiceTotals {
  name: string;
  minutes: number;
  /** Minutes with p95 at or below the service's target. */
  okMinutes: number;
  scaleEvents: number;
  reversals: number;
  /** Σ over minutes of replicas wanted but not serving. */
  shortReplicaMinutes: number;
  /** Σ over minutes of slots below the minimum in force served by a burst-class replica only. */
  unguaranteedSlotMinutes: number;
  /** Σ over minutes of the minimum in force (slots meant to be guaranteed). */
  minimumSlotMinutes: number;
  maxDesired: number;
  maxServing: number;
}

/** Raw sums over one part [fromMs, toMs). */
export class PartTotals {
  heldGpuMs = 0;
  trainingGpuMs = 0;
  replicaHeldGpuMs = 0;
  replicaBusyGpuMs = 0;
  /** Intervals where one service scaled up short of free GPUs while another scaled down. */
  contendedOpposite = 0;
  trainingPreemptions = 0;
  trainingLostGpuMs = 0;
  /** Training jobs preempted for a replica (the rest: for other training jobs). */
  trainingPreemptedByReplicas = 0;
  trainingLostToReplicasGpuMs = 0;
  /** Replica preemptions by the replica's class. */
  replicaPreemptions = new Map<string, number>();
  waits: number[] = [];
  waitsByTenant = new Map<string, number[]>();
  unstarted = 0;
  readonly services: ServiceTotals[];
  constructor(
    readonly fromMs: number,
    readonly toMs: number,
    serviceNames: readonly string[],
  ) {
    this.services = serviceNames.map((name) => ({
      name,
      minutes: 0,
      okMinutes: 0,
      scaleEvents: 0,
      reversals: 0,
      shortReplicaMinutes: 0,
      unguaranteedSlotMinutes: 0,
      minimumSlotMinutes: 0,
      maxDesired: 0,
      maxServing: 0,
    }));
  }
  contains(t: number): boolean {
    return t >= this.fromMs && t < this.toMs;
  }
  wait(tenant: string, ms: number, started: boolean): void {
    this.waits.push(ms);
    const l = this.waitsByTenant.get(tenant) ?? [];
    l.push(ms);
    this.waitsByTenant.set(tenant, l);
    if (!started) this.unstarted++;
  }
}

export interface PartSummary {
  fromMs: number;
  toMs: number;
  capacityGpus: number;
  /** Service-minutes with p95 ≤ target / all service-minutes. */
  slaAttainment: number;
  /** The lowest service's attainment, and which service. */
  worstServiceSla: { service: string; attainment: number };
  trainingJobs: number;
  trainingUnstarted: number;
  waitP50S: number;
  waitP99S: number;
  /** The tenant whose p99 wait is highest, among tenants with at least 20 jobs in the part. */
  worstTenantP99: { tenant: string; p99S: number } | null;
  /** ∫ GPUs held by running jobs and admitted replicas dt / (GPUs × length). */
  allocation: number;
  /** The same with replicas counted at their busy share (min(1, load use)) and training fully busy. */
  utilization: number;
  /** Training's and the replicas' parts of the allocation. */
  trainingAllocation: number;
  replicaAllocation: number;
  scaleEvents: number;
  reversals: number;
  contendedOpposite: number;
  /** reversals + contendedOpposite. */
  oscillationWindows: number;
  /** Slot-minutes below the minimum served by a burst-class replica only / all slot-minutes below it. */
  unguaranteedSlotShare: number;
  trainingPreemptions: number;
  trainingLostGpuHours: number;
  trainingPreemptedByReplicas: number;
  trainingLostToReplicasGpuHours: number;
  replicaPreemptions: Record<string, number>;
  services: (ServiceTotals & { attainment: number })[];
}

const sorted = (xs: readonly number[]) => [...xs].sort((a, b) => a - b);
const round = (x: number, d = 6) => Math.round(x * 10 ** d) / 10 ** d;

export function summarize(p: PartTotals, capacityGpus: number): PartSummary {
  const len = Math.max(1, p.toMs - p.fromMs);
  const gpuMs = capacityGpus * len;
  const minutes = p.services.reduce((s, x) => s + x.minutes, 0);
  const ok = p.services.reduce((s, x) => s + x.okMinutes, 0);
  const services = p.services.map((s) => ({
    ...s,
    attainment: s.minutes > 0 ? round(s.okMinutes / s.minutes) : 1,
  }));
  const worst = services.reduce<(typeof services)[number] | undefined>(
    (w, s) => (!w || s.attainment < w.attainment ? s : w),
    undefined,
  );
  const w = sorted(p.waits);
  let worstTenant: PartSummary['worstTenantP99'] = null;
  for (const [tenant, l] of [...p.waitsByTenant].sort(([a], [b]) => (a < b ? -1 : 1))) {
    if (l.length < 20) continue;
    const p99 = percentile(sorted(l), 99)! / 1000;
    if (!worstTenant || p99 > worstTenant.p99S) worstTenant = { tenant, p99S: round(p99, 1) };
  }
  const reversals = p.services.reduce((s, x) => s + x.reversals, 0);
  return {
    fromMs: p.fromMs,
    toMs: p.toMs,
    capacityGpus,
    slaAttainment: minutes > 0 ? round(ok / minutes) : 1,
    worstServiceSla: { service: worst?.name ?? '', attainment: worst?.attainment ?? 1 },
    trainingJobs: w.length,
    trainingUnstarted: p.unstarted,
    waitP50S: round((percentile(w, 50) ?? 0) / 1000, 1),
    waitP99S: round((percentile(w, 99) ?? 0) / 1000, 1),
    worstTenantP99: worstTenant,
    allocation: round(p.heldGpuMs / gpuMs),
    utilization: round((p.trainingGpuMs + p.replicaBusyGpuMs) / gpuMs),
    trainingAllocation: round(p.trainingGpuMs / gpuMs),
    replicaAllocation: round(p.replicaHeldGpuMs / gpuMs),
    scaleEvents: p.services.reduce((s, x) => s + x.scaleEvents, 0),
    reversals,
    contendedOpposite: p.contendedOpposite,
    oscillationWindows: reversals + p.contendedOpposite,
    unguaranteedSlotShare: (() => {
      const all = p.services.reduce((s, x) => s + x.minimumSlotMinutes, 0);
      return all > 0 ? round(p.services.reduce((s, x) => s + x.unguaranteedSlotMinutes, 0) / all) : 0;
    })(),
    trainingPreemptions: p.trainingPreemptions,
    trainingLostGpuHours: round(p.trainingLostGpuMs / 3_600_000, 1),
    trainingPreemptedByReplicas: p.trainingPreemptedByReplicas,
    trainingLostToReplicasGpuHours: round(p.trainingLostToReplicasGpuMs / 3_600_000, 1),
    replicaPreemptions: Object.fromEntries([...p.replicaPreemptions].sort(([a], [b]) => (a < b ? -1 : 1))),
    services,
  };
}

/** Per service: the last change of its desired replicas, to find reversals. */
export class ChangeTracker {
  private last: { at: number; sign: number } | null = null;
  /** Records a change; true when it reverses the previous one within REVERSAL_WINDOW_MS. */
  change(at: number, delta: number): boolean {
    const sign = Math.sign(delta);
    const reversed =
      this.last !== null && this.last.sign === -sign && at - this.last.at <= REVERSAL_WINDOW_MS;
    this.last = { at, sign };
    return reversed;
  }
}
