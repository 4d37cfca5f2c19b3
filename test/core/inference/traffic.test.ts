import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { replicasFor, requestRate, serviceLoad } from '../../../src/core/inference/index.js';

const traffic = { seed: 7, meanRps: 100, amplitude: 0.6, peakHour: 14, noise: 0.05 };
const latency = { throughputPerReplica: 20, serviceP95Ms: 80, overloadP95Ms: 10_000 };
const at = (hour: number) => Date.UTC(2026, 11, 2, hour);

describe('service traffic and latency model', () => {
  it('peaks at its hour and bottoms out twelve hours later, within its noise', () => {
    expect(requestRate(traffic, at(14))).toBeGreaterThan(150);
    expect(requestRate(traffic, at(2))).toBeLessThan(45);
    expect(requestRate(traffic, at(14))).toBeLessThanOrEqual(160 * 1.05 + 1e-9);
    expect(requestRate(traffic, at(14))).toBe(requestRate(traffic, at(14)));
  });

  it('latency grows with load and saturates at the overload figure; Little’s law gives the in-flight', () => {
    const light = serviceLoad(latency, 10, 20);
    const busy = serviceLoad(latency, 10, 180);
    const over = serviceLoad(latency, 10, 400);
    expect(light.p95Ms).toBeCloseTo(80 / 0.9, 6);
    expect(busy.p95Ms).toBeGreaterThan(light.p95Ms);
    expect(over.p95Ms).toBe(10_000);
    expect(busy.inFlight).toBeCloseTo((180 * busy.p95Ms) / 1000, 9);
    expect(serviceLoad(latency, 0, 0)).toEqual({ rps: 0, p95Ms: 0, inFlight: 0, utilization: 0 });
  });

  it('replicasFor is the least that keeps the p95 within the target', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5000 }), fc.integer({ min: 100, max: 2000 }), (rps, target) => {
        const n = replicasFor(latency, rps, target);
        expect(serviceLoad(latency, n, rps).p95Ms).toBeLessThanOrEqual(target + 1e-9);
        if (n > 1 && 1 - latency.serviceP95Ms / target > 0.01)
          expect(serviceLoad(latency, n - 1, rps).p95Ms).toBeGreaterThan(target);
      }),
    );
  });
});
