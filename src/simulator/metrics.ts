import type { ReplayOutcome, TenantInfo } from './engine.js';
import { round6 } from './engine.js';
import { etaStats, type EtaStats } from './eta.js';
import { computeGovernanceMetrics, type GovernanceMetrics } from './governance/metrics.js';
import { percentile } from './percentile.js';

export { percentile };

export interface WaitStats {
  /** Jobs counted (started, plus never-started ones with a censored wait). */
  count: number;
  p50: number | null;
  p95: number | null;
  p99: number | null;
  mean: number | null;
}

export interface SlaStats {
  eligible: number;
  met: number;
  /** met / eligible, null when no job was eligible. */
  attainment: number | null;
}

export interface PreemptionStats {
  count: number;
  gpuHoursLost: number;
  byReason: Record<string, { count: number; gpuHoursLost: number }>;
}

export interface TenantMetrics {
  tenant: string;
  nominalGpus: number;
  weight: number;
  jobs: number;
  started: number;
  unstarted: number;
  rejected: number;
  waitSeconds: WaitStats;
  sla: SlaStats;
  /** GPU-hours allocated to the tenant inside the window. */
  gpuHoursReceived: number;
  /** GPU-hours the tenant was entitled to inside the window (see docs/simulator.md). */
  gpuHoursEntitled: number;
  /** received / entitled; null when entitled is 0. */
  fairnessRatio: number | null;
  /** Mean share of the cluster the tenant held inside the window. */
  allocationShare: number;
  preemptionsSuffered: PreemptionStats;
}

export interface Timeline {
  startMs: number;
  bucketMs: number;
  tenants: string[];
  /** allocation[t][b]: mean GPUs held by tenant t in bucket b. */
  allocation: number[][];
  /** preemptions[b]: count per reason in bucket b. */
  preemptions: Record<string, number>[];
}

export const WAIT_BUCKETS: { label: string; upToS: number }[] = [
  { label: '0s', upToS: 0 },
  { label: '≤1m', upToS: 60 },
  { label: '≤10m', upToS: 600 },
  { label: '≤1h', upToS: 3600 },
  { label: '≤6h', upToS: 6 * 3600 },
  { label: '≤1d', upToS: 86400 },
  { label: '≤1w', upToS: 7 * 86400 },
  { label: '>1w', upToS: Number.POSITIVE_INFINITY },
];

export interface ReplayMetrics {
  policy: string;
  placement: string;
  capacityGpus: number;
  window: { startMs: number; endMs: number; hours: number };
  jobs: number;
  started: number;
  unstarted: number;
  rejected: number;
  allocationRatio: number;
  /** Like allocationRatio, counting only runs that completed (GPU-time later lost to preemption left out). */
  usefulAllocationRatio: number;
  waitSeconds: WaitStats;
  /** Wait-time histogram over WAIT_BUCKETS (counts). */
  waitHistogram: number[];
  sla: SlaStats;
  jainIndex: number | null;
  preemptions: PreemptionStats;
  fragmentationRatio: number;
  previewAtSubmit: Record<string, number>;
  /** Error of the ETA shown at submit against the actual start (see eta.ts). */
  etaAtSubmit: EtaStats;
  tenants: TenantMetrics[];
  timeline: Timeline;
  /** Probes, idle reclaim and controller (runs made with governance only; absent otherwise). */
  governance?: GovernanceMetrics;
}


export function waitStats(waitsS: number[]): WaitStats {
  const a = [...waitsS].sort((x, y) => x - y);
  const sum = a.reduce((s, x) => s + x, 0);
  return {
    count: a.length,
    p50: nr(percentile(a, 50)),
    p95: nr(percentile(a, 95)),
    p99: nr(percentile(a, 99)),
    mean: a.length ? round6(sum / a.length) : null,
  };
}

const nr = (x: number | null): number | null => (x === null ? null : round6(x));

/** Jain's fairness index of non-negative values; null for an empty list. */
export function jain(xs: readonly number[]): number | null {
  if (xs.length === 0) return null;
  let s = 0;
  let s2 = 0;
  for (const x of xs) {
    s += x;
    s2 += x * x;
  }
  if (s2 === 0) return 1;
  return (s * s) / (xs.length * s2);
}

/**
 * Weighted water-filling: share `amount` among entries in proportion to `weights`,
 * never giving an entry more than its cap; what a capped entry leaves is shared again.
 * Entries with weight 0 receive nothing.
 */
export function waterFill(caps: readonly number[], weights: readonly number[], amount: number): number[] {
  const out = caps.map(() => 0);
  let left = amount;
  let active = caps.map((c, i) => i).filter((i) => caps[i]! > 1e-12 && weights[i]! > 0);
  while (left > 1e-12 && active.length > 0) {
    const wsum = active.reduce((s, i) => s + weights[i]!, 0);
    const level = left / wsum;
    const capped = active.filter((i) => caps[i]! - out[i]! <= level * weights[i]! + 1e-12);
    if (capped.length === 0) {
      for (const i of active) out[i]! += level * weights[i]!;
      left = 0;
      break;
    }
    for (const i of capped) {
      left -= caps[i]! - out[i]!;
      out[i] = caps[i]!;
    }
    const set = new Set(capped);
    active = active.filter((i) => !set.has(i));
  }
  return out;
}

/**
 * Instantaneous GPU entitlement of each tenant given its demand:
 * 1. guaranteed part g = min(demand, nominal) (if Σg exceeds capacity, capacity is
 *    water-filled by nominal);
 * 2. the capacity left, C − Σg, is water-filled over the unmet demand (demand − g) in
 *    proportion to the tenants' fair-share weights;
 * 3. anything still left goes, equally, to unmet demand of zero-weight tenants.
 * So Σ entitlement = min(Σ demand, C) and no tenant is entitled to more than it demands.
 */
export function entitlement(demand: readonly number[], tenants: readonly TenantInfo[], capacity: number): number[] {
  const n = demand.length;
  const caps1 = demand.map((d, i) => Math.min(d, tenants[i]!.nominalGpus));
  const sum1 = caps1.reduce((s, x) => s + x, 0);
  const g =
    sum1 <= capacity
      ? caps1
      : waterFill(
          caps1,
          tenants.map((t) => t.nominalGpus),
          capacity,
        );
  let left = capacity - g.reduce((s, x) => s + x, 0);
  const unmet = demand.map((d, i) => Math.max(0, d - g[i]!));
  const h = waterFill(
    unmet,
    tenants.map((t) => t.weight),
    left,
  );
  left -= h.reduce((s, x) => s + x, 0);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = g[i]! + h[i]!;
  if (left > 1e-9) {
    const caps3 = unmet.map((u, i) => (tenants[i]!.weight === 0 ? u - h[i]! : 0));
    const z = waterFill(
      caps3,
      tenants.map((t) => (t.weight === 0 ? 1 : 0)),
      left,
    );
    for (let i = 0; i < n; i++) out[i]! += z[i]!;
  }
  return out;
}

const H = 3_600_000;

function emptyPre(): PreemptionStats {
  return { count: 0, gpuHoursLost: 0, byReason: {} };
}

function addPre(s: PreemptionStats, reason: string, lostMs: number): void {
  s.count++;
  s.gpuHoursLost += lostMs / H;
  const r = (s.byReason[reason] ??= { count: 0, gpuHoursLost: 0 });
  r.count++;
  r.gpuHoursLost += lostMs / H;
}

function finishPre(s: PreemptionStats): PreemptionStats {
  const byReason: PreemptionStats['byReason'] = {};
  for (const k of Object.keys(s.byReason).sort()) {
    const r = s.byReason[k]!;
    byReason[k] = { count: r.count, gpuHoursLost: round6(r.gpuHoursLost) };
  }
  return { count: s.count, gpuHoursLost: round6(s.gpuHoursLost), byReason };
}

export interface MetricsOptions {
  slaSeconds?: number;
  /** Buckets for the timeline charts (default 200). */
  buckets?: number;
}

export function computeReplayMetrics(o: ReplayOutcome, opts: MetricsOptions = {}): ReplayMetrics {
  const slaMs = (opts.slaSeconds ?? 60) * 1000;
  const tenants = o.tenants;
  const tIdx = new Map(tenants.map((t, i) => [t.name, i]));
  const C = o.capacityGpus;
  const w0 = o.windowStart;
  const w1 = o.windowEnd;
  const span = Math.max(1, w1 - w0);

  // --- waits, SLA, counts
  const waitsAll: number[] = [];
  const waitsBy: number[][] = tenants.map(() => []);
  const sla = tenants.map(() => ({ eligible: 0, met: 0 }));
  const cnt = tenants.map(() => ({ jobs: 0, started: 0, unstarted: 0, rejected: 0 }));
  const hist = WAIT_BUCKETS.map(() => 0);
  const previewAtSubmit: Record<string, number> = {};
  for (const j of o.jobs) {
    const ti = tIdx.get(j.tenant);
    if (ti === undefined) throw new Error(`job ${j.id}: tenant ${j.tenant} unknown`);
    const c = cnt[ti]!;
    c.jobs++;
    previewAtSubmit[j.previewMode] = (previewAtSubmit[j.previewMode] ?? 0) + 1;
    if (j.rejected) {
      c.rejected++;
      continue;
    }
    let waitMs: number;
    if (j.firstStartMs !== null) {
      c.started++;
      waitMs = j.firstStartMs - j.submitMs;
    } else {
      c.unstarted++;
      waitMs = o.endMs - j.submitMs; // censored: a lower bound
    }
    const ws = waitMs / 1000;
    waitsAll.push(ws);
    waitsBy[ti]!.push(ws);
    let b = 0;
    while (b < WAIT_BUCKETS.length - 1 && ws > WAIT_BUCKETS[b]!.upToS) b++;
    hist[b]!++;
    if (j.slaEligible) {
      sla[ti]!.eligible++;
      if (j.firstStartMs !== null && j.firstStartMs - j.submitMs <= slaMs) sla[ti]!.met++;
    }
  }

  // --- sweep: demand, allocation, entitlement inside the window
  type Ev = { t: number; ti: number; dd: number; dr: number; du?: number };
  const evs: Ev[] = [];
  for (const j of o.jobs) {
    if (j.rejected) continue;
    const ti = tIdx.get(j.tenant)!;
    evs.push({ t: j.submitMs, ti, dd: j.gpus, dr: 0 });
    if (j.endMs !== null) evs.push({ t: j.endMs, ti, dd: -j.gpus, dr: 0 });
  }
  for (const s of o.segments) {
    const ti = tIdx.get(s.tenant)!;
    const du = s.preempted ? 0 : s.gpus;
    evs.push({ t: s.start, ti, dd: 0, dr: s.gpus, du });
    evs.push({ t: s.end, ti, dd: 0, dr: -s.gpus, du: -du });
  }
  evs.sort((a, b) => a.t - b.t);
  const nT = tenants.length;
  const d = new Array<number>(nT).fill(0);
  const r = new Array<number>(nT).fill(0);
  const recv = new Array<number>(nT).fill(0);
  const ent = new Array<number>(nT).fill(0);
  let allocMs = 0;
  let usefulMs = 0;
  let useful = 0;
  const nb = opts.buckets ?? 200;
  const tlEnd = Math.max(o.endMs, w1);
  const bucketMs = Math.max(1, Math.ceil((tlEnd - w0) / nb));
  const alloc: number[][] = tenants.map(() => new Array<number>(nb).fill(0));
  const addTimeline = (a: number, b: number): void => {
    // add r[] × overlap to buckets
    let t = Math.max(a, w0);
    while (t < b) {
      const k = Math.min(nb - 1, Math.floor((t - w0) / bucketMs));
      const be = Math.min(b, w0 + (k + 1) * bucketMs);
      const dt = (k === nb - 1 ? b : be) - t;
      for (let i = 0; i < nT; i++) if (r[i]! !== 0) alloc[i]![k]! += r[i]! * dt;
      t += dt;
    }
  };
  for (let k = 0; k < evs.length; ) {
    const t = evs[k]!.t;
    while (k < evs.length && evs[k]!.t === t) {
      const e = evs[k]!;
      d[e.ti]! += e.dd;
      r[e.ti]! += e.dr;
      useful += e.du ?? 0;
      k++;
    }
    // the last state lasts to the end of the window / timeline
    const tn = k < evs.length ? evs[k]!.t : Math.max(t, tlEnd);
    if (tn > t) {
      addTimeline(t, tn);
      const a = Math.max(t, w0);
      const b = Math.min(tn, w1);
      if (b > a) {
        const dt = b - a;
        const e = entitlement(d, tenants, C);
        let tot = 0;
        for (let i = 0; i < nT; i++) {
          recv[i]! += r[i]! * dt;
          ent[i]! += e[i]! * dt;
          tot += r[i]!;
        }
        allocMs += tot * dt;
        usefulMs += useful * dt;
      }
    }
  }
  for (let i = 0; i < nT; i++) for (let b = 0; b < nb; b++) alloc[i]![b] = round6(alloc[i]![b]! / bucketMs);

  // --- preemptions
  const preAll = emptyPre();
  const preBy = tenants.map(() => emptyPre());
  const preTl: Record<string, number>[] = Array.from({ length: nb }, () => ({}));
  for (const p of o.preemptions) {
    addPre(preAll, p.reason, p.lostGpuMs);
    const ti = tIdx.get(p.victimTenant);
    if (ti !== undefined) addPre(preBy[ti]!, p.reason, p.lostGpuMs);
    const k = Math.min(nb - 1, Math.max(0, Math.floor((p.at - w0) / bucketMs)));
    preTl[k]![p.reason] = (preTl[k]![p.reason] ?? 0) + 1;
  }

  const ratios: number[] = [];
  const tms: TenantMetrics[] = tenants.map((t, i) => {
    const fr = ent[i]! > 1e-9 ? recv[i]! / ent[i]! : null;
    if (fr !== null) ratios.push(fr);
    const s = sla[i]!;
    return {
      tenant: t.name,
      nominalGpus: t.nominalGpus,
      weight: t.weight,
      ...cnt[i]!,
      waitSeconds: waitStats(waitsBy[i]!),
      sla: { eligible: s.eligible, met: s.met, attainment: s.eligible ? round6(s.met / s.eligible) : null },
      gpuHoursReceived: round6(recv[i]! / H),
      gpuHoursEntitled: round6(ent[i]! / H),
      fairnessRatio: fr === null ? null : round6(fr),
      allocationShare: round6(recv[i]! / (C * span)),
      preemptionsSuffered: finishPre(preBy[i]!),
    };
  });
  const slaE = sla.reduce((s, x) => s + x.eligible, 0);
  const slaM = sla.reduce((s, x) => s + x.met, 0);
  const tot = cnt.reduce((s, c) => ({ jobs: s.jobs + c.jobs, started: s.started + c.started, unstarted: s.unstarted + c.unstarted, rejected: s.rejected + c.rejected }), { jobs: 0, started: 0, unstarted: 0, rejected: 0 });
  const j = jain(ratios);
  const pa: Record<string, number> = {};
  for (const k of Object.keys(previewAtSubmit).sort()) pa[k] = previewAtSubmit[k]!;
  const allocationRatio = round6(allocMs / (C * span));
  const governance = computeGovernanceMetrics(o, allocationRatio);
  return {
    policy: o.policy,
    placement: o.placement,
    capacityGpus: C,
    window: { startMs: w0, endMs: w1, hours: round6(span / H) },
    ...tot,
    allocationRatio,
    usefulAllocationRatio: round6(usefulMs / (C * span)),
    waitSeconds: waitStats(waitsAll),
    waitHistogram: hist,
    sla: { eligible: slaE, met: slaM, attainment: slaE ? round6(slaM / slaE) : null },
    jainIndex: j === null ? null : round6(j),
    preemptions: finishPre(preAll),
    fragmentationRatio: round6(o.frag.freeGpuMs > 0 ? o.frag.unusableGpuMs / o.frag.freeGpuMs : 0),
    previewAtSubmit: pa,
    etaAtSubmit: etaStats(o.jobs, o.etaSampled),
    tenants: tms,
    timeline: { startMs: w0, bucketMs, tenants: tenants.map((t) => t.name), allocation: alloc, preemptions: preTl },
    ...(governance ? { governance } : {}),
  };
}
