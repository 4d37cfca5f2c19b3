// Idle reclaim's pieces without a database: the owner's sentence with its numbers, declared versus
// backend time, the borrowing test, the task's period and FAIRWAY_IDLE_CHECK_INTERVAL_MS.
import { describe, expect, it } from 'vitest';
import { ConfigError, load } from '../../../src/config/index.js';
import {
  declaredFlag,
  durationText,
  flagMessage,
  reclaimNotice,
} from '../../../src/core/governance/job-flags.js';
import type { JobFlag } from '../../../src/core/governance/types.js';
import type { QueueStatus } from '../../../src/core/scheduling/types.js';
import { governanceLeaderTasks } from '../../../src/services/governance/governance-tasks.js';
import {
  borrowsGpus,
  DEFAULT_IDLE_CHECK_INTERVAL_MS,
  idleReclaimTask,
  inBackendTime,
} from '../../../src/services/governance/idle-reclaim.js';

const MIN = 60_000;
const idle: JobFlag = {
  kind: 'IDLE',
  since: 1_000,
  forMs: 31 * 1000,
  at: 32_000,
  meanUtilization: 0.021,
  utilizationBelow: 0.1,
  limitMs: 30 * 1000,
  action: 'RECLAIM_IF_BORROWING',
  decision: 'NOTIFY',
};

describe('idle reclaim pieces', () => {
  it('stores durations in declared time (backend ms × time scale) and says them with the numbers', () => {
    // At time scale 60 a backend second is a declared minute.
    const flag = declaredFlag(idle, 60, 'elastic');
    expect(flag).toMatchObject({
      forMs: 31 * MIN,
      limitMs: 30 * MIN,
      since: 1_000,
      at: 32_000,
      policy: 'elastic',
    });
    expect(flagMessage(flag)).toBe(
      'GPU utilization 2% < 10% for 31 min (policy elastic: reclaim if borrowing): its queue is within its quota, so it keeps its GPUs for now.',
    );
    expect(flagMessage({ ...flag, decision: 'RECLAIM' })).toBe(
      'GPU utilization 2% < 10% for 31 min (policy elastic: reclaim if borrowing): its queue borrows, so its GPUs are reclaimed and it goes back to pending.',
    );
    expect(
      flagMessage({
        ...flag,
        kind: 'NOT_RUNNING',
        meanUtilization: null,
        utilizationBelow: null,
        forMs: 16 * MIN,
        limitMs: 15 * MIN,
        action: 'RECLAIM',
        decision: 'RECLAIM',
      }),
    ).toBe(
      'Admitted 16 min ago and still not running (limit 15 min) (policy elastic: reclaim): its GPUs are reclaimed and it goes back to pending.',
    );
    expect(flagMessage({ ...flag, action: 'NOTIFY' })).toMatch(
      /\(policy elastic: notify\): it keeps its GPUs\.$/,
    );
    expect([durationText(45_000), durationText(119 * MIN), durationText(150 * MIN)]).toEqual([
      '45 s',
      '119 min',
      '2.5 h',
    ]);
  });

  it('a PREEMPTED event carries the flag only for the matching governance reason', () => {
    const flag = declaredFlag({ ...idle, decision: 'RECLAIM' }, 1, 'elastic');
    expect(reclaimNotice(flag, 'idle')?.message).toBe(flagMessage(flag));
    expect(reclaimNotice(flag, 'not-running')).toBeNull();
    expect(reclaimNotice(flag, 'reclaim')).toBeNull();
    expect(reclaimNotice(null, 'idle')).toBeNull();
    expect(reclaimNotice({ kind: 'SOMETHING' }, 'idle')).toBeNull();
  });

  it("the policy's durations reach the core in the backend's clock, as the minimum run before reclaim does", () => {
    expect(
      inBackendTime(
        { utilizationBelow: 0.1, idleForMs: 30 * MIN, notRunningForMs: 15 * MIN, action: 'RECLAIM' },
        60,
      ),
    ).toEqual({ utilizationBelow: 0.1, idleForMs: 30_000, notRunningForMs: 15_000, action: 'RECLAIM' });
  });

  it('a queue borrows when it holds GPUs above its nominal on any flavor', () => {
    const status = (borrowed: number, resource = 'gpu') =>
      ({
        resources: [{ flavor: 'a', resource, nominal: 8, used: 8 + borrowed, borrowed, lent: 0 }],
      }) as unknown as QueueStatus;
    expect(borrowsGpus(status(0))).toBe(false);
    expect(borrowsGpus(status(2))).toBe(true);
    expect(borrowsGpus(status(2, 'cpu'))).toBe(false);
    expect(borrowsGpus(null)).toBe(false);
  });

  it('runs every FAIRWAY_IDLE_CHECK_INTERVAL_MS (default a minute; 0 leaves the task out)', () => {
    const names = (ms?: number) =>
      governanceLeaderTasks({ now: Date.now, idleCheckIntervalMs: ms }).map((task) => task.name);
    expect(names()).toContain('idle-reclaim');
    expect(names(0)).not.toContain('idle-reclaim');
    expect(
      governanceLeaderTasks({ now: Date.now })
        .find((task) => task.name === 'idle-reclaim')!
        .everyMs(),
    ).toBe(DEFAULT_IDLE_CHECK_INTERVAL_MS);
    expect(() => idleReclaimTask({ everyMs: 0 })).toThrow(RangeError);
    expect(load({}).governance.idleCheckIntervalMs).toBe(DEFAULT_IDLE_CHECK_INTERVAL_MS);
    expect(load({ FAIRWAY_IDLE_CHECK_INTERVAL_MS: '0' }).governance.idleCheckIntervalMs).toBe(0);
    expect(load({ FAIRWAY_IDLE_CHECK_INTERVAL_MS: '30000' }).governance.idleCheckIntervalMs).toBe(30_000);
    for (const bad of ['500', '-1', 'often', '7200000'])
      expect(() => load({ FAIRWAY_IDLE_CHECK_INTERVAL_MS: bad })).toThrow(ConfigError);
  });
});
