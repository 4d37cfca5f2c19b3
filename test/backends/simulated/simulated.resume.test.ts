import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { BackendEvent, BackendJob } from '../../../src/backends/port.js';
import { SimulatedBackend } from '../../../src/backends/simulated/simulated.js';

// A preempted job that checkpoints is suspended and later resumed from its last checkpoint: the
// resumed run lasts only what remains of its declared duration.
const S = 1000;
const MIN = 60 * S;

function job(id: string, admittedAt: number, extra: Partial<BackendJob> = {}): BackendJob {
  return {
    jobId: id,
    tenant: 't1',
    queue: 'q1',
    name: id,
    podSets: [{ name: 'main', count: 1, perPod: { gpu: 1, cpu: 1000, memory: 1024 } }],
    admission: { jobId: id, queue: 'q1', at: admittedAt, podSets: [], borrowed: false, mode: 'fit' },
    expectedDurationMs: 10 * MIN,
    ...extra,
  };
}

function harness(timeScale = 1) {
  const t0 = Date.now();
  const backend = new SimulatedBackend({ timeScale, utilizationIntervalMs: 0, onListenerError: () => {} });
  const events: (BackendEvent & { real: number })[] = [];
  backend.onEvent((e) => events.push({ ...e, real: Date.now() - t0 }));
  const endOf = (id: string) =>
    events.find((e) => e.jobId === id && (e.type === 'succeeded' || e.type === 'failed'));
  return { backend, events, endOf, t0 };
}

/** Runs `spec` for `ranMs` real ms, suspends it, waits 5 min, starts it again: real ms from the second start to its success. */
async function secondRun(
  spec: Partial<BackendJob>,
  ranMs: number,
  timeScale = 1,
): Promise<{ second: number; resumePoint: number }> {
  const { backend, endOf, t0 } = harness(timeScale);
  await backend.start(job('a', 1, spec));
  await vi.advanceTimersByTimeAsync(ranMs);
  await backend.suspend('a', 'reclaim');
  const resumePoint = backend.resumePoint('a');
  await vi.advanceTimersByTimeAsync(5 * MIN);
  const restartedAt = Date.now() - t0;
  await backend.start(job('a', 2, spec));
  await vi.advanceTimersByTimeAsync(60 * MIN);
  const end = endOf('a');
  expect(end?.type).toBe('succeeded');
  return { second: end!.real - restartedAt, resumePoint };
}

beforeEach(() => {
  vi.useFakeTimers({ now: 1_700_000_000_000 });
});
afterEach(() => {
  vi.useRealTimers();
});

describe('SimulatedBackend: suspend and resume of checkpointing jobs', () => {
  it('a job without checkpointing runs again from zero', async () => {
    expect(await secondRun({}, 4 * MIN)).toEqual({ second: 10 * MIN, resumePoint: 0 });
  });

  it('a resumable job resumes where it stopped and runs only its remaining time', async () => {
    expect(await secondRun({ checkpoint: { resumable: true } }, 4 * MIN)).toEqual({
      second: 6 * MIN,
      resumePoint: 4 * MIN,
    });
  });

  it('a job with a checkpoint interval resumes from its last checkpoint', async () => {
    // 7 minutes run, checkpoints every 3: the work up to minute 6 is kept, 4 minutes remain.
    expect(await secondRun({ checkpoint: { intervalMs: 3 * MIN } }, 7 * MIN)).toEqual({
      second: 4 * MIN,
      resumePoint: 6 * MIN,
    });
    // Preempted before its first checkpoint: nothing kept.
    expect(await secondRun({ checkpoint: { intervalMs: 3 * MIN } }, 2 * MIN)).toEqual({
      second: 10 * MIN,
      resumePoint: 0,
    });
  });

  it('counts checkpoints over all runs, in declared time (time scale 60)', async () => {
    const { backend, endOf, t0 } = harness(60);
    const spec = { expectedDurationMs: 60 * MIN, checkpoint: { intervalMs: 10 * MIN } };
    await backend.start(job('a', 1, spec));
    await vi.advanceTimersByTimeAsync(25 * S); // 25 declared minutes: checkpoint at 20
    await backend.suspend('a', 'reclaim');
    expect(backend.resumePoint('a')).toBe(20 * MIN);
    await backend.start(job('a', 2, spec));
    await vi.advanceTimersByTimeAsync(15 * S); // 20 + 15 = 35 declared: checkpoint at 30
    await backend.suspend('a', 'reclaim');
    expect(backend.resumePoint('a')).toBe(30 * MIN);
    const at = Date.now() - t0;
    await backend.start(job('a', 3, spec));
    await vi.advanceTimersByTimeAsync(60 * S);
    expect(endOf('a')!.real - at).toBe(30 * S);
    // Finished: nothing kept for a later run of the same id.
    expect(backend.resumePoint('a')).toBe(0);
  });

  it('a suspended run that had not started keeps what it had; cancel forgets the progress', async () => {
    const backend = new SimulatedBackend({
      utilizationIntervalMs: 0,
      startDelayMs: 10 * S,
      onListenerError: () => {},
    });
    const spec = { checkpoint: { resumable: true } };
    await backend.start(job('a', 1, spec));
    await vi.advanceTimersByTimeAsync(10 * S + 2 * MIN);
    await backend.suspend('a', 'reclaim');
    expect(backend.resumePoint('a')).toBe(2 * MIN);
    await backend.start(job('a', 2, spec));
    await vi.advanceTimersByTimeAsync(5 * S); // suspended again before `started`
    await backend.suspend('a', 'reclaim');
    expect(backend.resumePoint('a')).toBe(2 * MIN);
    await backend.cancel('a');
    expect(backend.resumePoint('a')).toBe(0);
  });
});
