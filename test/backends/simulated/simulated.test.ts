import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { BackendEvent, BackendJob } from '../../../src/backends/port.js';
import {
  MAX_RUN_TIME_EXCEEDED,
  SIMULATED_FAILURE,
  SimulatedBackend,
  type SimulatedBackendOptions,
} from '../../../src/backends/simulated/simulated.js';
import type { Timers } from '../../../src/backends/simulated/timers.js';

const S = 1000;
const MIN = 60 * S;
const HOUR = 60 * MIN;

function job(id: string, extra: Partial<BackendJob> = {}, gpus = 1): BackendJob {
  return {
    jobId: id,
    tenant: 't1',
    queue: 'q1',
    name: id,
    podSets: [{ name: 'main', count: 1, perPod: { gpu: gpus, cpu: 1000, memory: 1024 } }],
    admission: { jobId: id, queue: 'q1', at: 1, podSets: [], borrowed: false, mode: 'fit' },
    ...extra,
  };
}

/** A backend and every event it emitted, in order, with the real (fake) ms since the start of the test. */
function harness(options: SimulatedBackendOptions = {}) {
  const t0 = Date.now();
  const backend = new SimulatedBackend({ utilizationIntervalMs: 0, onListenerError: () => {}, ...options });
  const events: (BackendEvent & { real: number })[] = [];
  // Pod logs for the archive are tested in logs.test.ts.
  backend.onEvent((e) => e.type !== 'pod-log' && events.push({ ...e, real: Date.now() - t0 }));
  const of = (jobId: string, type?: BackendEvent['type']) =>
    events.filter((e) => e.jobId === jobId && (!type || e.type === type));
  return { backend, events, of };
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_700_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('SimulatedBackend', () => {
  it('is named simulated and rejects bad options', () => {
    expect(new SimulatedBackend().name).toBe('simulated');
    expect(() => new SimulatedBackend({ timeScale: 0 })).toThrow(RangeError);
    expect(() => new SimulatedBackend({ failureRate: 1.5 })).toThrow(RangeError);
    expect(() => new SimulatedBackend({ utilizationIntervalMs: -1 })).toThrow(RangeError);
  });

  it('emits started asynchronously, never inside start()', async () => {
    const { backend, events } = harness();
    await backend.start(job('a', { expectedDurationMs: 10 * S }));
    expect(events).toEqual([]);
    expect(await backend.running()).toEqual(['a']);
    await vi.advanceTimersByTimeAsync(0);
    expect(events.map((e) => e.type)).toEqual(['started']);
  });

  it('scales time: a 60 s declared job at timeScale 60 succeeds after 1 s real', async () => {
    const { backend, events } = harness({ timeScale: 60 });
    await backend.start(job('a', { expectedDurationMs: 60 * S }));
    await vi.advanceTimersByTimeAsync(999);
    expect(events.map((e) => e.type)).toEqual(['started']);
    await vi.advanceTimersByTimeAsync(1);
    expect(events.map((e) => [e.type, e.real])).toEqual([
      ['started', 0],
      ['succeeded', 1000],
    ]);
    expect(await backend.running()).toEqual([]);
  });

  it('honours startDelayMs and stamps events with now()', async () => {
    let clock = 5;
    const { backend, events } = harness({ startDelayMs: 200, now: () => clock++ });
    await backend.start(job('a', { expectedDurationMs: 1 * S }));
    await vi.advanceTimersByTimeAsync(199);
    expect(events).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect(events[0]).toMatchObject({ type: 'started', at: 5, real: 200 });
    await vi.advanceTimersByTimeAsync(1000);
    expect(events[1]).toMatchObject({ type: 'succeeded', at: 6, real: 1200 });
  });

  it('start is idempotent for a running job; a replayed start of a finished admission is a no-op', async () => {
    const { backend, events } = harness();
    const a = job('a', { expectedDurationMs: 10 * S });
    await backend.start(a);
    await vi.advanceTimersByTimeAsync(4 * S);
    await backend.start(a);
    await backend.start({ ...a, expectedDurationMs: 1 * S });
    await vi.advanceTimersByTimeAsync(6 * S);
    expect(events.map((e) => [e.type, e.real])).toEqual([
      ['started', 0],
      ['succeeded', 10 * S],
    ]);
    await backend.start(a); // outbox replay after the job finished
    await vi.advanceTimersByTimeAsync(20 * S);
    expect(events).toHaveLength(2);
    // A new admission of the same job is a new run.
    await backend.start({ ...a, admission: { ...a.admission, at: 2 } });
    await vi.advanceTimersByTimeAsync(10 * S);
    expect(events.map((e) => e.type)).toEqual(['started', 'succeeded', 'started', 'succeeded']);
  });

  it('suspend stops completion; starting again runs from zero', async () => {
    const { backend, events } = harness();
    const a = job('a', { expectedDurationMs: 10 * S });
    await backend.start(a);
    await vi.advanceTimersByTimeAsync(8 * S);
    await backend.suspend('a', 'priority');
    await backend.suspend('a', 'priority'); // idempotent
    expect(await backend.running()).toEqual([]);
    await vi.advanceTimersByTimeAsync(60 * S);
    expect(events.map((e) => e.type)).toEqual(['started']);

    await backend.start(a); // same admission: a suspended job is not "finished"
    await vi.advanceTimersByTimeAsync(9 * S);
    expect(events.map((e) => e.type)).toEqual(['started', 'started']);
    await vi.advanceTimersByTimeAsync(1 * S);
    expect(events.map((e) => [e.type, e.real])).toEqual([
      ['started', 0],
      ['started', 68 * S],
      ['succeeded', 78 * S],
    ]);
  });

  it('suspending before started is emitted cancels the start', async () => {
    const { backend, events } = harness({ startDelayMs: 100 });
    await backend.start(job('a', { expectedDurationMs: 1 * S }));
    await backend.suspend('a', 'reclaim');
    await vi.advanceTimersByTimeAsync(10 * S);
    expect(events).toEqual([]);
  });

  it('cancel stops the job, is idempotent, and unknown ids are no-ops', async () => {
    const { backend, events, of } = harness();
    await backend.start(job('a', { expectedDurationMs: 10 * S }));
    await backend.start(job('b', { expectedDurationMs: 10 * S }));
    await vi.advanceTimersByTimeAsync(5 * S);
    await backend.cancel('a');
    await backend.cancel('a');
    await backend.cancel('nope');
    await backend.suspend('nope', 'x');
    expect(await backend.running()).toEqual(['b']);
    await vi.advanceTimersByTimeAsync(60 * S);
    expect(of('a').map((e) => e.type)).toEqual(['started']);
    expect(of('b').map((e) => e.type)).toEqual(['started', 'succeeded']);
    expect(events).toHaveLength(3);
  });

  it('a job without a declared duration runs until stopped', async () => {
    const { backend, events } = harness();
    await backend.start(job('a'));
    await vi.advanceTimersByTimeAsync(30 * 24 * HOUR);
    expect(events.map((e) => e.type)).toEqual(['started']);
    expect(await backend.running()).toEqual(['a']);
  });

  it('durations beyond the 24.8-day timer limit neither fire early nor late', async () => {
    const { backend, events } = harness();
    await backend.start(job('a', { expectedDurationMs: 40 * 24 * HOUR }));
    await vi.advanceTimersByTimeAsync(40 * 24 * HOUR - 1);
    expect(events.map((e) => e.type)).toEqual(['started']);
    await vi.advanceTimersByTimeAsync(1);
    expect(events.map((e) => [e.type, e.real])).toEqual([
      ['started', 0],
      ['succeeded', 40 * 24 * HOUR],
    ]);
  });

  it('workload.simulate forces a failure at failAfterMs (declared, scaled)', async () => {
    const { backend, of } = harness({ timeScale: 10 });
    await backend.start(
      job('a', {
        expectedDurationMs: 100 * S,
        workload: { simulate: { outcome: 'fail', failAfterMs: 30 * S } },
      }),
    );
    await backend.start(
      job('b', { expectedDurationMs: 100 * S, workload: { simulate: { failAfterMs: 50 * S } } }),
    );
    await backend.start(
      job('c', { expectedDurationMs: 100 * S, workload: { simulate: { outcome: 'fail' } } }),
    );
    await vi.advanceTimersByTimeAsync(2_999);
    expect(of('a', 'failed')).toEqual([]);
    await vi.advanceTimersByTimeAsync(20 * S);
    expect(of('a', 'failed')).toEqual([expect.objectContaining({ reason: SIMULATED_FAILURE, real: 3 * S })]);
    expect(of('b', 'failed')).toEqual([expect.objectContaining({ reason: SIMULATED_FAILURE, real: 5 * S })]);
    expect(of('c', 'failed')).toEqual([expect.objectContaining({ reason: SIMULATED_FAILURE, real: 10 * S })]);
    for (const id of ['a', 'b', 'c']) expect(of(id, 'succeeded')).toEqual([]);
  });

  it("workload.simulate outcome 'succeed' overrides failureRate 1; malformed directives are ignored", async () => {
    const { backend, of } = harness({ failureRate: 1, seed: 3 });
    await backend.start(
      job('a', { expectedDurationMs: 10 * S, workload: { simulate: { outcome: 'succeed' } } }),
    );
    await backend.start(
      job('b', { expectedDurationMs: 10 * S, workload: { simulate: { outcome: 'maybe', failAfterMs: -5 } } }),
    );
    await vi.advanceTimersByTimeAsync(10 * S);
    expect(of('a').map((e) => e.type)).toEqual(['started', 'succeeded']);
    // b's directive is ignored, so failureRate 1 applies: a failure strictly before the end.
    expect(of('b', 'failed')).toEqual([expect.objectContaining({ reason: SIMULATED_FAILURE })]);
    expect(of('b', 'failed')[0]!.real).toBeLessThan(10 * S);
  });

  it('fails a job that outruns maxRunMs at maxRunMs', async () => {
    const { backend, of } = harness({ timeScale: 60 });
    await backend.start(job('long', { expectedDurationMs: 2 * HOUR, maxRunMs: 1 * HOUR }));
    await backend.start(job('open', { maxRunMs: 30 * MIN }));
    await backend.start(job('ok', { expectedDurationMs: 1 * HOUR, maxRunMs: 1 * HOUR }));
    await vi.advanceTimersByTimeAsync(2 * HOUR);
    expect(of('long').map((e) => [e.type, e.real, 'reason' in e ? e.reason : undefined])).toEqual([
      ['started', 0, undefined],
      ['failed', 1 * MIN, MAX_RUN_TIME_EXCEEDED],
    ]);
    expect(of('open', 'failed')).toEqual([
      expect.objectContaining({ reason: MAX_RUN_TIME_EXCEEDED, real: 30 * S }),
    ]);
    expect(of('ok').map((e) => [e.type, e.real])).toEqual([
      ['started', 0],
      ['succeeded', 1 * MIN],
    ]);
  });

  it('failureRate with a seed is deterministic; another seed differs', async () => {
    async function outcomes(seed: number) {
      const { backend, of } = harness({ failureRate: 0.3, seed });
      for (let i = 0; i < 50; i++) await backend.start(job(`j${i}`, { expectedDurationMs: 100 * S }));
      await vi.advanceTimersByTimeAsync(100 * S);
      const result = Array.from({ length: 50 }, (_, i) => {
        const end = of(`j${i}`).find((e) => e.type !== 'started');
        return end ? `${end.type}@${end.real}` : 'none';
      });
      await backend.close();
      return result;
    }
    const a = await outcomes(42);
    const b = await outcomes(42);
    const c = await outcomes(7);
    expect(b).toEqual(a);
    expect(c).not.toEqual(a);
    for (const run of [a, c]) {
      expect(run).not.toContain('none');
      const failed = run.filter((o) => o.startsWith('failed'));
      // 30% of 50: binomial, 3.5 sigma either side is roughly 5..25.
      expect(failed.length).toBeGreaterThanOrEqual(5);
      expect(failed.length).toBeLessThanOrEqual(25);
      for (const o of failed) expect(Number(o.split('@')[1])).toBeLessThan(100 * S);
      for (const o of run.filter((x) => x.startsWith('succeeded'))) expect(o).toBe(`succeeded@${100 * S}`);
    }
  });

  it('samples GPU utilization in [0.3, 1] while running, only for GPU jobs, and stops after the end', async () => {
    const { backend, of } = harness({ utilizationIntervalMs: 1000, seed: 9 });
    await backend.start(job('gpu', { expectedDurationMs: 10.5 * S }));
    await backend.start(job('cpu', { expectedDurationMs: 10.5 * S }, 0));
    await vi.advanceTimersByTimeAsync(60 * S);
    const samples = of('gpu', 'utilization');
    expect(samples).toHaveLength(10);
    const end = of('gpu', 'succeeded')[0]!;
    for (const s of samples) {
      if (s.type !== 'utilization') throw new Error('unreachable');
      expect(s.gpuUtilization).toBeGreaterThanOrEqual(0.3);
      expect(s.gpuUtilization).toBeLessThanOrEqual(1);
      expect(s.real).toBeLessThan(end.real);
    }
    // Seeded, but not constant.
    expect(
      new Set(samples.map((s) => (s.type === 'utilization' ? s.gpuUtilization : 0))).size,
    ).toBeGreaterThan(1);
    expect(of('cpu', 'utilization')).toEqual([]);
  });

  it('stops sampling when a job is suspended; interval 0 disables sampling', async () => {
    const { backend, of } = harness({ utilizationIntervalMs: 1000 });
    await backend.start(job('a'));
    await vi.advanceTimersByTimeAsync(3500);
    await backend.suspend('a', 'priority');
    await vi.advanceTimersByTimeAsync(10 * S);
    expect(of('a', 'utilization')).toHaveLength(3);

    const off = harness({ utilizationIntervalMs: 0 });
    await off.backend.start(job('b'));
    await vi.advanceTimersByTimeAsync(60 * S);
    expect(off.of('b', 'utilization')).toEqual([]);
  });

  it('a throwing listener does not break delivery to others; unsubscribe works', async () => {
    const errors: unknown[] = [];
    const backend = new SimulatedBackend({
      utilizationIntervalMs: 0,
      onListenerError: (e) => errors.push(e),
    });
    const first: string[] = [];
    const last: string[] = [];
    backend.onEvent((e) => e.type !== 'pod-log' && first.push(e.type));
    backend.onEvent((e) => {
      if (e.type !== 'pod-log') throw new Error('boom');
    });
    const unsubscribe = backend.onEvent((e) => e.type !== 'pod-log' && last.push(e.type));
    await backend.start(job('a', { expectedDurationMs: 1 * S }));
    await vi.advanceTimersByTimeAsync(1 * S);
    expect(first).toEqual(['started', 'succeeded']);
    expect(last).toEqual(['started', 'succeeded']);
    expect(errors).toHaveLength(2);
    expect(await backend.running()).toEqual([]);

    unsubscribe();
    unsubscribe();
    await backend.start(job('b', { expectedDurationMs: 1 * S }));
    await vi.advanceTimersByTimeAsync(1 * S);
    expect(first).toHaveLength(4);
    expect(last).toHaveLength(2);
  });

  it('a listener may suspend the job it hears about', async () => {
    const { backend, events } = harness({ utilizationIntervalMs: 500 });
    backend.onEvent((e) => {
      if (e.type === 'started') void backend.suspend(e.jobId, 'priority');
    });
    await backend.start(job('a', { expectedDurationMs: 2 * S }));
    await vi.advanceTimersByTimeAsync(10 * S);
    expect(events.map((e) => e.type)).toEqual(['started']);
  });

  it('close() stops everything: no events after, start rejects', async () => {
    const { backend, events } = harness({ utilizationIntervalMs: 100 });
    await backend.start(job('a', { expectedDurationMs: 5 * S }));
    await backend.start(job('b'));
    await vi.advanceTimersByTimeAsync(1 * S);
    const before = events.length;
    expect(before).toBeGreaterThan(2); // started ×2 plus samples
    await backend.close();
    expect(vi.getTimerCount()).toBe(0);
    expect(await backend.running()).toEqual([]);
    await vi.advanceTimersByTimeAsync(60 * S);
    expect(events).toHaveLength(before);
    await expect(backend.start(job('c', { expectedDurationMs: 1 * S }))).rejects.toThrow(/closed/);
    await backend.cancel('a');
    await backend.suspend('b', 'x');
  });

  it('a pod writes nothing after the cluster stopped it, even to a reader not yet told of the stop', async () => {
    const { backend } = harness({ timeScale: 600 });
    const admitted = job('a', { expectedDurationMs: 1200 * S });
    await backend.start(admitted);
    await vi.advanceTimersByTimeAsync(0);
    const startedAt = Date.now();
    await vi.advanceTimersByTimeAsync(470); // 282 declared seconds: step 23 of 100 (12 s each)
    expect(backend.disrupt('a')).toBe(true);
    await vi.advanceTimersByTimeAsync(100); // the running pod's clock would be at step 28
    const asRunning = {
      jobId: 'a',
      tenant: 't1',
      name: 'a',
      run: 1,
      admissionAt: admitted.admission.at,
      startedAt,
      endedAt: null,
      outcome: 'running' as const,
      reason: null,
      podSets: [{ name: 'main', count: 1, gpusPerPod: 1 }],
      expectedDurationMs: 1200 * S,
      checkpointIntervalMs: null,
      workloadType: null,
    };
    const lines = (await backend.logs.read(asRunning, { podSet: 'main', index: 0 }, {}))!;
    expect(lines.at(-1)!.text).toMatch(/step 23\/100/);
  });

  it('uses injected timers and clock instead of the globals', async () => {
    const pending: { fn: () => void; ms: number; live: boolean }[] = [];
    const timers: Timers = {
      setTimeout: (fn, ms) => {
        const t = { fn, ms, live: true };
        pending.push(t);
        return t;
      },
      clearTimeout: (h) => {
        (h as { live: boolean }).live = false;
      },
      setInterval: () => {
        throw new Error('no intervals expected');
      },
      clearInterval: () => {},
    };
    const backend = new SimulatedBackend({ timers, now: () => 42, timeScale: 2, utilizationIntervalMs: 0 });
    const events: BackendEvent[] = [];
    backend.onEvent((e) => e.type !== 'pod-log' && events.push(e));
    await backend.start(job('a', { expectedDurationMs: 10 * S }));
    expect(vi.getTimerCount()).toBe(0); // nothing went to the (fake) global timers
    expect(pending.map((t) => t.ms)).toEqual([0]);
    pending[0]!.fn();
    expect(events).toEqual([{ type: 'started', jobId: 'a', at: 42 }]);
    expect(pending.map((t) => t.ms)).toEqual([0, 5 * S]);
    pending[1]!.fn();
    expect(events).toEqual([
      { type: 'started', jobId: 'a', at: 42 },
      { type: 'succeeded', jobId: 'a', at: 42 },
    ]);
  });
});
