import type { ReplayOutcome } from './engine.js';
import { round6 } from './engine.js';
import { etaStats } from './eta.js';
import { entitlement, jain } from './fairness.js';
import { computeGovernanceMetrics } from './governance/metrics.js';
import {
  type PreemptionStats,
  type ReplayMetrics,
  type TenantMetrics,
  WAIT_BUCKETS,
  type WaitStats,
} from './metrics-types.js';
import { percentile } from './percentile.js';

export { entitlement, jain, waterFill } from './fairness.js';
export * from './metrics-types.js';
export { percentile };

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
  const tot = cnt.reduce(
    (s, c) => ({
      jobs: s.jobs + c.jobs,
      started: s.started + c.started,
      unstarted: s.unstarted + c.unstarted,
      rejected: s.rejected + c.rejected,
    }),
    { jobs: 0, started: 0, unstarted: 0, rejected: 0 },
  );
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
    timeline: {
      startMs: w0,
      bucketMs,
      tenants: tenants.map((t) => t.name),
      allocation: alloc,
      preemptions: preTl,
    },
    ...(governance ? { governance } : {}),
  };
}
