// The autoscaler's guards against flapping: the facts a service's readings teach (guards.ts), and
// what decideReplicas does with them, on a service whose p95 is convex in load (traffic.ts).
import { describe, expect, it } from 'vitest';
import {
  type AutoscalerMemory,
  type CountAtRate,
  decideReplicas,
  EMPTY_MEMORY,
  enoughAt,
  type LatencyModel,
  learn,
  readingRate,
  refusingDown,
  requestRate,
  type ScalingDecision,
  type ScalingRules,
  serviceLoad,
} from '../../../src/core/inference/index.js';

const T0 = Date.UTC(2026, 11, 2, 12);
const MIN = 60_000;
const none = { tooFew: [] as CountAtRate[], enough: [] as CountAtRate[] };

describe('the facts a reading teaches', () => {
  it('keeps each list a staircase: a fact another implies is dropped', () => {
    let f = learn(none, 5, 60, true); // 5 too few at 60 req/s
    f = learn(f, 4, 70, true); // implied: 4 < 5 and 70 > 60
    f = learn(f, 7, 80, true);
    f = learn(f, 6, 50, true); // implies the fact about 5 (at 60)
    expect(f.tooFew).toEqual([
      { replicas: 6, rps: 50 },
      { replicas: 7, rps: 80 },
    ]);
    let e = learn(none, 8, 90, false); // 8 enough at 90
    e = learn(e, 9, 80, false); // implied
    e = learn(e, 6, 100, false); // implies the fact about 8
    expect(e.enough).toEqual([{ replicas: 6, rps: 100 }]);
  });

  it('a reading that contradicts a fact withdraws it', () => {
    const f = { tooFew: [{ replicas: 6, rps: 50 }], enough: [{ replicas: 8, rps: 90 }] };
    // 6 served 55 req/s within the band: it was not too few at 50 after all.
    expect(learn(f, 6, 55, false).tooFew).toEqual([]);
    // 9 too few at 85: 8 cannot be enough at 90.
    expect(learn(f, 9, 85, true).enough).toEqual([]);
    // Nothing is learned without a serving replica or without traffic.
    expect(learn(f, 0, 55, false)).toBe(f);
    expect(learn(f, 6, 0, false)).toBe(f);
  });

  it('refuses a scale-down to a count found too few while the peak rate would put it above the band bottom', () => {
    const f = { tooFew: [{ replicas: 5, rps: 100 }], enough: [] };
    // Band bottom with ±10%: (1 − 0.1)/(1 + 0.1) of 100 ≈ 81.8 req/s.
    expect(refusingDown(f, 5, 82, 0.1)).toEqual({ replicas: 5, rps: 100 });
    expect(refusingDown(f, 4, 82, 0.1)).toEqual({ replicas: 5, rps: 100 }); // fewer: too few as well
    expect(refusingDown(f, 5, 81, 0.1)).toBeUndefined();
    expect(refusingDown(f, 6, 200, 0.1)).toBeUndefined(); // 6 was never found too few
    const e = {
      tooFew: [],
      enough: [
        { replicas: 6, rps: 40 },
        { replicas: 9, rps: 70 },
      ],
    };
    expect(enoughAt(e, 40)).toEqual({ replicas: 6, rps: 40 });
    expect(enoughAt(e, 50)).toEqual({ replicas: 9, rps: 70 });
    expect(enoughAt(e, 71)).toBeUndefined();
  });

  it('a rate from the requests over the reading span, none without one', () => {
    expect(readingRate(600, T0, T0 - MIN)).toBe(10);
    expect(readingRate(600, T0, undefined)).toBeNull();
    expect(readingRate(600, T0, T0)).toBeNull();
  });
});

/** 10 req/s a replica, 100 ms idle: p95 = 100 / (1 − use); the target is the p95 at 60% use. */
const latency: LatencyModel = { throughputPerReplica: 10, serviceP95Ms: 100, overloadP95Ms: 30_000 };
const rules = (over: Partial<ScalingRules> = {}): ScalingRules => ({
  signal: 'P95_LATENCY_MS',
  target: 250,
  minReplicas: 1,
  maxReplicas: 40,
  scaleUpStabilizationMs: 0,
  scaleDownStabilizationMs: 300_000,
  maxScaleUpStep: 100,
  maxScaleDownStep: 100,
  tolerance: 0.1,
  scaleToZeroAfterMs: null,
  ...over,
});

/**
 * A service read every minute at `rps(minute)`; a replica asked for serves `warmup` minutes later
 * (0: at once). Returns each decision.
 */
function serve(r: ScalingRules, start: number, minutes: number, rps: (m: number) => number, warmup = 0) {
  let memory: AutoscalerMemory = EMPTY_MEMORY;
  const readyAt = Array.from({ length: start }, () => 0);
  const out: ScalingDecision[] = [];
  for (let m = 0; m < minutes; m++) {
    const ready = readyAt.filter((t) => t <= m).length;
    const at = T0 + m * MIN;
    const load = serviceLoad(latency, ready, rps(m));
    const d = decideReplicas(r, memory, readyAt.length, ready, {
      at,
      value: load.p95Ms,
      requests: rps(m) * 60,
      sinceMs: at - MIN,
    });
    memory = d.memory;
    while (readyAt.length < d.desired) readyAt.push(m + warmup);
    readyAt.length = d.desired;
    out.push(d);
  }
  return out;
}

/** Changes of direction within 10 minutes of the previous change (the simulator's reversals). */
function reversals(ds: ScalingDecision[], from = 0): number {
  let last: { m: number; up: boolean } | null = null;
  let n = 0;
  for (let m = 1; m < ds.length; m++) {
    const delta = ds[m]!.desired - ds[m - 1]!.desired;
    if (delta === 0) continue;
    if (m >= from && last && last.up !== delta > 0 && m - last.m <= 10) n++;
    last = { m, up: delta > 0 };
  }
  return n;
}

describe('the guards in the decision', () => {
  it('down guard: after a one-minute spike, not back to the count found too few until traffic is below the band', () => {
    // 5 serve 30 req/s at the target; a spike to 34 makes them too few (p95 312 ms > 275): up to 7.
    const rps = (m: number) => (m === 3 ? 34 : m < 20 ? 30 : 27);
    const ds = serve(rules(), 5, 30, rps);
    const desired = ds.map((d) => d.desired);
    expect(desired.slice(0, 4)).toEqual([5, 5, 5, 7]);
    expect(ds[3]!.memory.tooFew).toEqual([{ replicas: 5, rps: 34 }]);
    // After the down window: 6, not 5 (30 req/s is above 34 × 0.9/1.1 = 27.8); at 27 req/s, 5.
    expect(desired[8]).toBe(6);
    expect(ds[8]!.reason).toMatch(
      /asks for 5; 5 were too few at 34 req\/s and the last 300 s peaked at 30 req\/s/,
    );
    // Once the window holds only 27 req/s (four minutes after the drop), 5.
    expect(desired.slice(8, 24).every((n) => n === 6)).toBe(true);
    expect(desired[24]).toBe(5);
    // Without a down window there are no guards: back to 5 at once, as the plain HPA rule does.
    const plain = serve(rules({ scaleDownStabilizationMs: 0 }), 5, 6, rps).map((d) => d.desired);
    expect(plain).toEqual([5, 5, 5, 7, 5, 5]);
  });

  it('up guard: no further than the fewest replicas found enough at this traffic, until a reading says otherwise', () => {
    // 6 serve 36 req/s at the target (enough); the night at 20 req/s takes it to 4; then 35 req/s:
    // 4 are far too few (p95 800 ms), the proportional rule asks for 13, 6 were enough at 36.
    const rps = (m: number) => (m < 5 ? 36 : m < 20 ? 20 : 35);
    const ds = serve(rules(), 6, 26, rps);
    expect(ds[19]!.desired).toBe(4);
    expect(ds[20]).toMatchObject({ desired: 6, recommended: 13 });
    expect(ds[20]!.reason).toMatch(/4 → 6 \(asks for 13; 6 were enough at 36 req\/s\)/);
    expect(ds.slice(20).every((d) => d.desired === 6)).toBe(true);
    // The replicas got slower (p95 at 6 above the band): the fact goes, and the rule scales past it.
    const slower = decideReplicas(rules(), ds[25]!.memory, 6, 6, {
      at: T0 + 26 * MIN,
      value: 400,
      requests: 35 * 60,
      sinceMs: T0 + 25 * MIN,
    });
    expect(ds[25]!.memory.enough).toContainEqual({ replicas: 6, rps: 36 });
    expect(slower.memory.enough).not.toContainEqual({ replicas: 6, rps: 36 });
    expect(slower.desired).toBe(10);
  });

  it('over three days of noisy diurnal traffic, no reversal after the first day, and the p95 kept', () => {
    // Traffic as the simulator's services: a daily cosine (peak 14:00 UTC) with ±8% noise a minute.
    const traffic = { seed: 7, meanRps: 60, amplitude: 0.55, peakHour: 14, noise: 0.08 };
    const rps = (m: number) => requestRate(traffic, Date.UTC(2026, 11, 2) + m * MIN);
    const days = 3 * 1440;
    const ds = serve(rules({ maxScaleUpStep: 4, maxScaleDownStep: 1 }), 8, days, rps, 2);
    expect(reversals(ds, 1440)).toBe(0);
    // Minutes within the SLA (the p95 at 75% use, 400 ms) with the replicas that served.
    let ok = 0;
    let served = 0;
    for (let m = 1; m < days; m++) {
      const ready = Math.min(ds[m - 1]!.desired, ds[Math.max(0, m - 3)]!.desired);
      served++;
      if (serviceLoad(latency, ready, rps(m)).p95Ms <= 400) ok++;
    }
    expect(ok / served).toBeGreaterThan(0.995);
  });
});
