// Idle and held detection: flagJob for each policy action, the idle stretch's edges and
// the NOT_RUNNING timing.
import { describe, expect, it } from 'vitest';
import {
  BUILT_IN_POLICIES,
  flagJob,
  type IdleAction,
  type IdlePolicy,
  type ProbeSample,
} from '../../../src/core/governance/index.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 0, 5, 12, 0);
const policy = (action: IdleAction = 'NOTIFY'): IdlePolicy => ({
  utilizationBelow: 0.1,
  idleForMs: 30 * MIN,
  notRunningForMs: 15 * MIN,
  action,
});
/** One sample a minute from `from` (minutes after T0), with the given GPU utilizations. */
const series = (from: number, gpus: number[]): ProbeSample[] =>
  gpus.map((g, i) => ({ at: T0 + (from + i) * MIN, gpuUtilization: g, memoryUtilization: 0.5 }));

describe('flagJob', () => {
  it('NOT_RUNNING once admitted for notRunningForMs without running (not a millisecond before)', () => {
    expect(flagJob(T0 + 15 * MIN - 1, T0, null, [], policy(), false)).toBeNull();
    expect(flagJob(T0 + 15 * MIN, T0, null, [], policy(), false)).toEqual({
      kind: 'NOT_RUNNING',
      since: T0,
      forMs: 15 * MIN,
      at: T0 + 15 * MIN,
      meanUtilization: null,
      utilizationBelow: null,
      limitMs: 15 * MIN,
      action: 'NOTIFY',
      decision: 'NOTIFY',
    });
    // Running: never NOT_RUNNING, however long ago it was admitted.
    expect(flagJob(T0 + 600 * MIN, T0, T0 + 500 * MIN, [], policy(), false)).toBeNull();
  });

  it('IDLE after a trailing stretch of low samples lasting idleForMs, with the stretch’s mean', () => {
    const low = series(
      10,
      Array.from({ length: 31 }, (_, i) => (i % 2 === 0 ? 0.02 : 0.04)),
    );
    const samples = [...series(0, [0.9, 0.8, 0.85, 0.9, 0.7, 0.9, 0.9, 0.9, 0.9, 0.9]), ...low];
    const now = T0 + 40 * MIN;
    const flag = flagJob(now, T0 - MIN, T0, samples, policy(), false);
    expect(flag).toMatchObject({
      kind: 'IDLE',
      since: T0 + 10 * MIN,
      forMs: 30 * MIN,
      at: now,
      utilizationBelow: 0.1,
      limitMs: 30 * MIN,
      action: 'NOTIFY',
      decision: 'NOTIFY',
    });
    expect(flag!.meanUtilization).toBeCloseTo((16 * 0.02 + 15 * 0.04) / 31, 12);
    // A minute earlier the stretch is 29 minutes old: no flag.
    expect(
      flagJob(
        now - MIN,
        T0 - MIN,
        T0,
        samples.filter((s) => s.at <= now - MIN),
        policy(),
        false,
      ),
    ).toBeNull();
  });

  it('one sample at or above the threshold ends the stretch', () => {
    const samples = [
      ...series(0, Array(20).fill(0.01)),
      ...series(20, [0.1]),
      ...series(21, Array(20).fill(0.01)),
    ];
    // 41 minutes of samples, but the stretch began after the 0.1 at minute 20: 19 minutes only.
    expect(flagJob(T0 + 40 * MIN, T0, T0, samples, policy(), false)).toBeNull();
    expect(flagJob(T0 + 51 * MIN, T0, T0, samples, policy(), false)).toMatchObject({
      kind: 'IDLE',
      since: T0 + 21 * MIN,
      forMs: 30 * MIN,
    });
    // The newest sample high: no stretch at all.
    expect(flagJob(T0 + 60 * MIN, T0, T0, [...samples, ...series(41, [0.5])], policy(), false)).toBeNull();
  });

  it('no samples: never IDLE; samples from before this run or after now are not read', () => {
    expect(flagJob(T0 + 1000 * MIN, T0, T0, [], policy(), false)).toBeNull();
    const old = series(0, Array(60).fill(0));
    // Restarted at minute 50: only the samples from minute 50 on count (10 minutes old at minute 60).
    expect(flagJob(T0 + 60 * MIN, T0, T0 + 50 * MIN, old, policy(), false)).toBeNull();
    expect(flagJob(T0 + 80 * MIN, T0, T0 + 50 * MIN, old, policy(), false)).toMatchObject({
      kind: 'IDLE',
      since: T0 + 50 * MIN,
    });
    // A high sample stamped after now is ignored (clock skew between the probe and the checker).
    expect(
      flagJob(
        T0 + 40 * MIN,
        T0,
        T0,
        [...series(0, Array(40).fill(0)), ...series(41, [0.9])],
        policy(),
        false,
      ),
    ).toMatchObject({ kind: 'IDLE', since: T0 });
  });

  it('each action decides: NOTIFY notifies, RECLAIM reclaims, RECLAIM_IF_BORROWING reclaims only while the queue borrows', () => {
    const idle = series(0, Array(31).fill(0));
    const now = T0 + 30 * MIN;
    const decide = (a: IdleAction, borrowing: boolean) => [
      flagJob(now, T0, T0, idle, policy(a), borrowing)?.decision,
      flagJob(now, T0, null, [], policy(a), borrowing)?.decision,
    ];
    expect(decide('NOTIFY', false)).toEqual(['NOTIFY', 'NOTIFY']);
    expect(decide('NOTIFY', true)).toEqual(['NOTIFY', 'NOTIFY']);
    expect(decide('RECLAIM', false)).toEqual(['RECLAIM', 'RECLAIM']);
    expect(decide('RECLAIM_IF_BORROWING', false)).toEqual(['NOTIFY', 'NOTIFY']);
    expect(decide('RECLAIM_IF_BORROWING', true)).toEqual(['RECLAIM', 'RECLAIM']);
    expect(flagJob(now, T0, T0, idle, policy('RECLAIM_IF_BORROWING'), true)?.action).toBe(
      'RECLAIM_IF_BORROWING',
    );
  });

  it('the built-in policies flag as their numbers say', () => {
    for (const p of BUILT_IN_POLICIES) {
      const samples = series(0, Array(200).fill(p.idle.utilizationBelow / 2));
      const idleAt = T0 + p.idle.idleForMs;
      expect(
        flagJob(
          idleAt - 1,
          T0,
          T0,
          samples.filter((s) => s.at < idleAt),
          p.idle,
          true,
        ),
      ).toBeNull();
      expect(flagJob(idleAt, T0, T0, samples, p.idle, true)).toMatchObject({
        kind: 'IDLE',
        forMs: p.idle.idleForMs,
        action: p.idle.action,
      });
      // Exactly at the threshold is not idle.
      expect(
        flagJob(idleAt, T0, T0, series(0, Array(200).fill(p.idle.utilizationBelow)), p.idle, true),
      ).toBeNull();
    }
  });
});
