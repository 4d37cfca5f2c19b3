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
