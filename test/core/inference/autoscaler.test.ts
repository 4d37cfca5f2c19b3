import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type AutoscalerMemory,
  decideReplicas,
  EMPTY_MEMORY,
  minimumAt,
  type ScalingRules,
} from '../../../src/core/inference/index.js';

const rules = (over: Partial<ScalingRules> = {}): ScalingRules => ({
  signal: 'IN_FLIGHT',
  target: 10,
  minReplicas: 1,
  maxReplicas: 20,
  scaleUpStabilizationMs: 0,
  scaleDownStabilizationMs: 300_000,
  maxScaleUpStep: 100,
  maxScaleDownStep: 100,
  tolerance: 0.1,
  scaleToZeroAfterMs: null,
  ...over,
});
const T0 = Date.UTC(2026, 11, 2, 12); // a Wednesday, noon UTC

/** Runs decisions over readings every `everyMs`, replicas ready as soon as asked for. */
function drive(r: ScalingRules, values: (number | null)[], everyMs = 15_000, start = 1, requests = 1) {
  let memory: AutoscalerMemory = EMPTY_MEMORY;
  let current = start;
  return values.map((value, i) => {
    const d = decideReplicas(r, memory, current, current, { at: T0 + i * everyMs, value, requests });
    memory = d.memory;
    current = d.desired;
    return d;
  });
}

describe('the inference autoscaler', () => {
  it('scales up at once to what the load asks for, with the numbers in the reason', () => {
    const [d] = drive(rules(), [50]);
    expect(d).toMatchObject({ desired: 5, recommended: 5, minimum: 1, coldStart: false });
    expect(d!.reason).toBe('50 in flight against a target of 10 per replica: 1 → 5');
  });

  it('does not move within the tolerance of the target', () => {
    const ds = drive(rules(), [50, 52, 48, 54], 15_000, 1);
    expect(ds.map((d) => d.desired)).toEqual([5, 5, 5, 5]);
    // The same without a down window (no guards): the tolerance alone holds it; beyond it, a move.
    const plain = rules({ scaleDownStabilizationMs: 0 });
    expect(drive(plain, [50, 54, 46, 56, 44], 15_000, 1).map((d) => d.desired)).toEqual([5, 5, 5, 6, 5]);
  });

  it('scales down only once the down window has passed at the lower load', () => {
    const values = [80, ...Array(30).fill(20)]; // 8 replicas, then a quarter of the load
    const ds = drive(rules(), values);
    const desired = ds.map((d) => d.desired);
    expect(desired[0]).toBe(8);
    // Held at 8 for the 300 s window (20 readings at 15 s), then down to 2.
    expect(desired.slice(1, 20).every((n) => n === 8)).toBe(true);
    expect(desired.at(-1)).toBe(2);
    expect(ds[5]!.reason).toMatch(/held at 8 for the 300 s down window/);
  });

  it('steps at most the limits, and stays within the bounds', () => {
    const ds = drive(rules({ maxScaleUpStep: 2, maxReplicas: 6 }), [200, 200, 200, 200]);
    expect(ds.map((d) => d.desired)).toEqual([3, 5, 6, 6]);
    expect(drive(rules({ minReplicas: 3 }), [0, 0])[0]!.desired).toBe(3);
  });

  it('a minimum by time window: two by day, none by night (training takes the night)', () => {
    const r = rules({
      minReplicas: 0,
      minimumWindows: [
        { days: [1, 2, 3, 4, 5], start: '08:00', end: '20:00', timeZone: 'UTC', minReplicas: 2 },
      ],
    });
    expect(minimumAt(r, T0)).toBe(2);
    expect(minimumAt(r, Date.UTC(2026, 11, 2, 23))).toBe(0);
    expect(minimumAt(r, Date.UTC(2026, 11, 5, 12))).toBe(0); // Saturday
  });

  it('scales to zero after the idle time, and a request wakes it cold', () => {
    const r = rules({ minReplicas: 0, scaleToZeroAfterMs: 60_000, scaleDownStabilizationMs: 0 });
    let d = decideReplicas(r, EMPTY_MEMORY, 2, 2, { at: T0, value: 5, requests: 3 });
    expect(d.desired).toBe(1);
    d = decideReplicas(r, d.memory, 1, 1, { at: T0 + 30_000, value: 0, requests: 0 });
    expect(d.desired).toBe(1);
    d = decideReplicas(r, d.memory, 1, 1, { at: T0 + 61_000, value: 0, requests: 0 });
    expect(d).toMatchObject({ desired: 0 });
    expect(d.reason).toMatch(/no request for 61 s: scaled to 0/);
    d = decideReplicas(r, d.memory, 0, 0, { at: T0 + 90_000, value: 0, requests: 0 });
    expect(d.desired).toBe(0);
    d = decideReplicas(r, d.memory, 0, 0, { at: T0 + 95_000, value: 1, requests: 1 });
    expect(d).toMatchObject({ desired: 1, coldStart: true });
  });

  it('averages scale with the replicas: GPU utilization at 90% of 3 against 60% asks for 5', () => {
    const [d] = drive(rules({ signal: 'GPU_UTILIZATION', target: 0.6 }), [0.9], 15_000, 3);
    expect(d).toMatchObject({ desired: 5 });
    expect(d!.reason).toMatch(/GPU 90% against a target of GPU 60%: 3 → 5/);
  });

  it('scaleUpStabilizationMs: up only once every recommendation in the window asks for more, to their lowest', () => {
    // 15-s readings, a 60-s up window: a one-reading spike moves nothing; a rise moves once the
    // window holds only higher recommendations, first to the lowest of them (7), then to 9.
    const values = [50, 90, 50, 50, 50, 50, 90, 70, 90, 90, 90, 90, 90];
    const up = drive(rules({ scaleUpStabilizationMs: 60_000 }), values, 15_000, 5).map((d) => d.desired);
    expect(up).toEqual([5, 5, 5, 5, 5, 5, 5, 5, 5, 7, 7, 9, 9]);
    // Without the window, each reading above the band moves at once.
    expect(
      drive(rules(), values, 15_000, 5)
        .map((d) => d.desired)
        .slice(0, 2),
    ).toEqual([5, 9]);
  });

  it('scaleDownStabilizationMs: down to the highest recommendation in the window, not the latest', () => {
    const values = [80, ...Array(19).fill(40), ...Array(25).fill(20)];
    const desired = drive(rules(), values).map((d) => d.desired);
    expect(desired.slice(0, 20).every((n) => n === 8)).toBe(true);
    // At 300 s the reading of 80 has left the window; 40's recommendation (4) is its highest.
    expect(desired[20]).toBe(4);
    expect(desired.indexOf(2)).toBe(39); // once the last 40 has left it too
  });

  it('maxScaleDownStep: at most that many fewer a decision', () => {
    const ds = drive(rules({ maxScaleDownStep: 1, scaleDownStabilizationMs: 0 }), [80, 20, 20, 20, 20]);
    expect(ds.map((d) => d.desired)).toEqual([8, 7, 6, 5, 4]);
    expect(ds[1]!.reason).toMatch(/8 → 7 \(asks for 2; at most −1 a step\)/);
  });

  it("a window's minimum holds while it is open and no longer: the down window weighs what the signal asked", () => {
    const r = rules({
      minReplicas: 1,
      minimumWindows: [
        { days: [0, 1, 2, 3, 4, 5, 6], start: '08:00', end: '20:00', timeZone: 'UTC', minReplicas: 4 },
      ],
    });
    const from = Date.UTC(2026, 11, 2, 19, 55);
    let memory: AutoscalerMemory = EMPTY_MEMORY;
    let current = 4;
    const out: number[] = [];
    for (let i = 0; i <= 10; i++) {
      const d = decideReplicas(r, memory, current, current, {
        at: from + i * 60_000,
        value: 10,
        requests: 1,
      });
      memory = d.memory;
      current = d.desired;
      out.push(d.desired);
    }
    // 10 in flight asks for 1 all along: 4 until 20:00, then 1 (the recommendations were 1, not the minimum).
    expect(out).toEqual([4, 4, 4, 4, 4, 1, 1, 1, 1, 1, 1]);
  });

  it('replicas that do not serve yet count as serving nothing: no scale-up while the demand fits all asked for', () => {
    const gpu = rules({ signal: 'GPU_UTILIZATION', target: 0.6 });
    // 6 asked for, 4 serve at 95%: 6.3 replicas' worth, over 6 within the tolerance: wait for the 2.
    const d = decideReplicas(gpu, EMPTY_MEMORY, 6, 4, { at: T0, value: 0.95, requests: 10 });
    expect(d.desired).toBe(6);
    expect(d.reason).toMatch(/held at 6: over all 6, 2 of them not serving yet, it is within the tolerance/);
    // All 6 serving at 95%: 10.
    expect(decideReplicas(gpu, EMPTY_MEMORY, 6, 6, { at: T0, value: 0.95, requests: 10 }).desired).toBe(10);
    // 4 serving at 120%: 8 replicas' worth, beyond 6 with the tolerance: up.
    expect(decideReplicas(gpu, EMPTY_MEMORY, 6, 4, { at: T0, value: 1.2, requests: 10 }).desired).toBe(8);
    // An average over no serving replica says nothing: held, not down to the minimum.
    const none = decideReplicas(gpu, EMPTY_MEMORY, 3, 0, { at: T0, value: 0, requests: 10 });
    expect(none).toMatchObject({ desired: 3, recommended: 3 });
    expect(none.reason).toMatch(/no replica serves yet: held at 3/);
  });

  it('asks for no more while the scheduler has not admitted the replicas already asked for', () => {
    const reading = { at: T0, value: 80, requests: 10 };
    const refused = decideReplicas(rules(), EMPTY_MEMORY, 5, 3, reading, {
      admitted: 3,
      whyNotMore: 'queue at its nominal',
    });
    expect(refused.desired).toBe(5);
    expect(refused.reason).toBe(
      '80 in flight against a target of 10 per replica asks for 8; held at 5: the scheduler admitted 3 of the 5 asked for (queue at its nominal)',
    );
    expect(decideReplicas(rules(), EMPTY_MEMORY, 5, 5, reading, { admitted: 5 }).desired).toBe(8);
    expect(decideReplicas(rules(), EMPTY_MEMORY, 5, 3, reading).desired).toBe(8); // no view: as before
    // A scale-down is not held by it.
    const low = { at: T0, value: 10, requests: 10 };
    expect(
      decideReplicas(rules({ scaleDownStabilizationMs: 0 }), EMPTY_MEMORY, 5, 3, low, { admitted: 3 })
        .desired,
    ).toBe(1);
  });

  it('reads memory kept before the guards (no readAt, tooFew or enough) and the request span from sinceMs', () => {
    const old = {
      recent: [{ at: T0 - 15_000, replicas: 5 }],
      lastRequestAt: T0 - 15_000,
    } as AutoscalerMemory;
    const d = decideReplicas(rules(), old, 5, 5, { at: T0, value: 50, requests: 600, sinceMs: T0 - 60_000 });
    expect(d.desired).toBe(5);
    expect(d.memory).toMatchObject({ readAt: T0, tooFew: [], enough: [{ replicas: 5, rps: 10 }] });
    expect(d.memory.recent.at(-1)).toEqual({ at: T0, replicas: 5, rps: 10 });
    // Without sinceMs the span is since the previous decision (readAt): 300 requests in 30 s.
    const next = decideReplicas(rules(), d.memory, 5, 5, { at: T0 + 30_000, value: 50, requests: 300 });
    expect(next.memory.recent.at(-1)!.rps).toBe(10);
  });

  it('always within the bounds, deterministic, and a load that flickers moves replicas at most once per down window', () => {
    fc.assert(
      fc.property(
        fc.array(fc.option(fc.integer({ min: 0, max: 400 }), { nil: null }), {
          minLength: 1,
          maxLength: 120,
        }),
        fc.integer({ min: 0, max: 5 }),
        fc.integer({ min: 5, max: 30 }),
        (values, min, max) => {
          const r = rules({ minReplicas: min, maxReplicas: Math.max(min, max) });
          const a = drive(r, values);
          expect(drive(r, values)).toEqual(a);
          for (const d of a) {
            expect(d.desired).toBeGreaterThanOrEqual(Math.min(min, r.maxReplicas));
            expect(d.desired).toBeLessThanOrEqual(r.maxReplicas);
          }
        },
      ),
    );
    // Load flickering between two levels every reading: up once, then no flapping down and up.
    const flicker = drive(
      rules(),
      Array.from({ length: 60 }, (_, i) => (i % 2 ? 40 : 90)),
    );
    const changes = flicker.filter((d, i) => i > 0 && d.desired !== flicker[i - 1]!.desired).length;
    expect(flicker[0]!.desired).toBe(9);
    expect(changes).toBe(0);
  });
});
