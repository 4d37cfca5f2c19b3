// The seeded utilization model: same seed and job key → same series; per-type levels and
// shares of idle tails as documented; meanUtilization is the exact mean of the readings.
import { describe, expect, it } from 'vitest';
import {
  meanUtilization,
  type UtilizationProfile,
  utilizationAt,
  utilizationProfile,
  WORKLOAD_TYPES,
  type WorkloadType,
} from '../../../src/core/governance/index.js';

const HOUR = 3_600_000;

const EXPECTED: Record<WorkloadType, { busy: [number, number]; tailShare: number; tail: [number, number] }> =
  {
    TRAINING: { busy: [0.7, 0.9], tailShare: 0.08, tail: [0.2, 0.6] },
    FINE_TUNING: { busy: [0.5, 0.8], tailShare: 0.12, tail: [0.2, 0.6] },
    BATCH_INFERENCE: { busy: [0.4, 0.7], tailShare: 0.06, tail: [0.2, 0.5] },
    ONLINE_INFERENCE: { busy: [0.15, 0.45], tailShare: 0.15, tail: [0.3, 0.7] },
  };

describe('utilization model', () => {
  it('is deterministic: same (seed, job key) → same profile and readings, whatever was drawn before', () => {
    const a = utilizationProfile(7, 'job-1', 'TRAINING', 10 * HOUR);
    utilizationProfile(7, 'job-2', 'TRAINING', 10 * HOUR); // an unrelated draw in between changes nothing
    const b = utilizationProfile(7, 'job-1', 'TRAINING', 10 * HOUR);
    expect(b).toEqual(a);
    expect(utilizationAt(7, 'job-1', a, HOUR, 12)).toEqual(utilizationAt(7, 'job-1', b, HOUR, 12));
    // Another seed or key gives another job.
    expect(utilizationProfile(8, 'job-1', 'TRAINING', 10 * HOUR)).not.toEqual(a);
    expect(utilizationProfile(7, 'job-3', 'TRAINING', 10 * HOUR)).not.toEqual(a);
    // Jitter depends on the sample index.
    expect(utilizationAt(7, 'job-1', a, 0, 1)).not.toEqual(utilizationAt(7, 'job-1', a, 0, 2));
  });

  it('pins a few values (platform independence: integer hashing and mulberry32 only)', () => {
    const p = utilizationProfile(42, 'philly-0001', 'FINE_TUNING', HOUR);
    expect(p).toMatchSnapshot();
    expect(utilizationAt(42, 'philly-0001', p, 60_000, 1)).toMatchSnapshot();
  });

  it('keeps every value in range and the documented shares of idle tails per type (20k jobs each)', () => {
    for (const type of WORKLOAD_TYPES) {
      const e = EXPECTED[type];
      let tails = 0;
      const lo = { busy: 1, memory: 1, idle: 1, tail: 1, gpu: 1, mem: 1 };
      const hi = { busy: 0, memory: 0, idle: 0, tail: 0, gpu: 0, mem: 0 };
      const see = (k: keyof typeof lo, v: number): void => {
        lo[k] = Math.min(lo[k], v);
        hi[k] = Math.max(hi[k], v);
      };
      for (let i = 0; i < 20_000; i++) {
        const duration = (1 + (i % 50)) * HOUR;
        const p = utilizationProfile(1234, `j${i}`, type, duration);
        see('busy', p.busy);
        see('memory', p.memory);
        see('idle', p.idle);
        if (p.idleAfterMs !== null) {
          tails++;
          see('tail', 1 - p.idleAfterMs / duration);
        }
        if (i % 10 === 0) {
          for (const t of [0, duration / 3, duration - 1]) {
            const r = utilizationAt(1234, `j${i}`, p, t, Math.floor(t / 60_000));
            see('gpu', r.gpu);
            see('mem', r.memory);
          }
        }
      }
      expect(lo.busy).toBeGreaterThanOrEqual(e.busy[0] - 1e-12);
      expect(hi.busy).toBeLessThanOrEqual(e.busy[1] + 1e-12);
      expect(lo.memory).toBeGreaterThanOrEqual(0);
      expect(hi.memory).toBeLessThanOrEqual(1);
      expect(lo.idle).toBeGreaterThanOrEqual(0);
      expect(hi.idle).toBeLessThanOrEqual(0.03);
      expect(lo.tail).toBeGreaterThanOrEqual(e.tail[0] - 1e-6);
      expect(hi.tail).toBeLessThanOrEqual(e.tail[1] + 1e-6);
      expect(lo.gpu).toBeGreaterThanOrEqual(0);
      expect(hi.gpu).toBeLessThanOrEqual(1);
      expect(lo.mem).toBeGreaterThanOrEqual(0);
      expect(hi.mem).toBeLessThanOrEqual(1);
      // The ranges are used, not just respected.
      expect(hi.busy - lo.busy).toBeGreaterThan(0.9 * (e.busy[1] - e.busy[0]));
      expect(hi.tail - lo.tail).toBeGreaterThan(0.9 * (e.tail[1] - e.tail[0]));
      // Binomial(20000, p): 5 standard deviations are < 1.3 percentage points for p ≤ 0.15.
      expect(Math.abs(tails / 20_000 - e.tailShare)).toBeLessThan(0.013);
    }
  });

  it('reads the idle level, flat, in the tail and the busy level ± jitter before it', () => {
    let key = '';
    let p: UtilizationProfile = utilizationProfile(3, key, 'ONLINE_INFERENCE', 10 * HOUR);
    for (let i = 0; p.idleAfterMs === null; i++) {
      key = `t${i}`;
      p = utilizationProfile(3, key, 'ONLINE_INFERENCE', 10 * HOUR);
    }
    const tail = utilizationAt(3, key, p, p.idleAfterMs!, 5);
    expect(tail.gpu).toBe(p.idle);
    expect(utilizationAt(3, key, p, 10 * HOUR - 1, 99).gpu).toBe(p.idle);
    const busy = utilizationAt(3, key, p, p.idleAfterMs! - 1, 4);
    expect(Math.abs(busy.gpu - p.busy)).toBeLessThanOrEqual(0.05 + 1e-12);
  });

  it('meanUtilization is exact for a segment and matches the average of many readings', () => {
    const p: UtilizationProfile = { busy: 0.6, memory: 0.5, idleAfterMs: 600_000, idle: 0.02 };
    expect(meanUtilization(p, 0, 600_000)).toBeCloseTo(0.6, 12);
    expect(meanUtilization(p, 600_000, 900_000)).toBeCloseTo(0.02, 12);
    expect(meanUtilization(p, 300_000, 900_000)).toBeCloseTo((0.6 * 300_000 + 0.02 * 300_000) / 600_000, 12);
    expect(meanUtilization(p, 700_000, 700_000)).toBe(0.02);
    expect(meanUtilization({ ...p, idleAfterMs: null }, 0, 10 * HOUR)).toBe(0.6);

    for (const type of WORKLOAD_TYPES) {
      for (let j = 0; j < 40; j++) {
        const key = `m-${type}-${j}`;
        const duration = 4 * HOUR;
        const prof = utilizationProfile(99, key, type, duration);
        const from = 0.1 * duration;
        const to = 0.95 * duration;
        const n = 4000;
        let sum = 0;
        for (let i = 0; i < n; i++) {
          const t = from + ((to - from) * (i + 0.5)) / n;
          sum += utilizationAt(99, key, prof, t, i).gpu;
        }
        // Jitter ±0.05 uniform: the mean of 4000 readings is within 0.005 with room to spare (σ ≈ 0.0005).
        expect(Math.abs(sum / n - meanUtilization(prof, from, to))).toBeLessThan(0.005);
      }
    }
  });
});
