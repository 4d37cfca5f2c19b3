import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type SimulatedLogRun, simulatedLogLines, stepMsOf } from '../../../src/core/logs/index.js';
import { runOfAdmission, runsOf } from '../../../src/core/logs/runs.js';

const T0 = Date.UTC(2026, 11, 2, 9);
const run = (over: Partial<SimulatedLogRun> = {}): SimulatedLogRun => ({
  jobId: '0b9d6a2e-3f4c-4e1a-9b7d-2c5e8f1a6b3d',
  name: 'llama-ft',
  run: 1,
  admissionAt: T0 - 10,
  startedAt: T0,
  endedAt: null,
  outcome: 'running',
  reason: null,
  podSets: [{ name: 'workers', count: 2, gpusPerPod: 8 }],
  expectedDurationMs: 3_600_000,
  checkpointIntervalMs: 600_000,
  workloadType: 'TRAINING',
  ...over,
});
const POD0 = { podSet: 'workers', index: 0 };
const POD1 = { podSet: 'workers', index: 1 };

describe('simulated job logs', () => {
  it('start-up, a line per step with loss and throughput, checkpoints, then the end; lines fall at their scaled times', () => {
    const r = run({ endedAt: T0 + 3_600_000 / 60, outcome: 'succeeded' });
    const lines = simulatedLogLines(r, POD0, 60, T0 + 10_000_000);
    expect(lines[0]!.text).toMatch(/starting llama-ft \(8 GPUs\)/);
    expect(lines.some((l) => /step 10\/100 loss=\d\.\d{4} throughput=\d+ samples\/s/.test(l.text))).toBe(
      true,
    );
    expect(lines.filter((l) => /saved checkpoint/.test(l.text)).length).toBe(6);
    expect(lines.at(-1)!.text).toMatch(/finished: 100 steps, exit code 0/);
    for (let i = 1; i < lines.length; i++) {
      expect(lines[i]!.cursor > lines[i - 1]!.cursor).toBe(true);
      expect(lines[i]!.at).toBeGreaterThanOrEqual(lines[i - 1]!.at);
    }
    expect(lines.at(-1)!.at).toBe(r.endedAt);
    // Written by a moment: only the lines whose time has come.
    const early = simulatedLogLines(r, POD0, 60, T0 + 1000);
    expect(early.every((l) => l.at <= T0 + 1000)).toBe(true);
    expect(early.length).toBeLessThan(lines.length);
    // Another pod writes less, as ranks other than 0 do.
    expect(simulatedLogLines(r, POD1, 60, T0 + 10_000_000).length).toBeLessThan(lines.length / 5);
    expect(simulatedLogLines(r, { podSet: 'workers', index: 2 }, 60, T0 + 10_000_000)).toEqual([]);
  });

  it('a run that succeeded a millisecond before its last step was due still wrote every step (timers fire early)', () => {
    const r = run({ endedAt: T0 + 3_600_000 / 60 - 1, outcome: 'succeeded' });
    const lines = simulatedLogLines(r, POD0, 60, T0 + 10_000_000);
    expect(lines.filter((l) => /step \d+\/100 /.test(l.text))).toHaveLength(100);
    expect(lines.at(-1)!.text).toMatch(/finished: 100 steps/);
    expect(lines.every((l) => l.at <= r.endedAt!)).toBe(true);
  });

  it('a failed run ends with its error on stderr; a preempted one with SIGTERM', () => {
    const failed = simulatedLogLines(
      run({ endedAt: T0 + 20_000, outcome: 'failed', reason: 'CUDA error: out of memory' }),
      POD0,
      60,
      T0 + 30_000,
    );
    expect(failed.at(-1)).toMatchObject({
      stream: 'stderr',
      text: 'RuntimeError: CUDA error: out of memory',
    });
    const preempted = simulatedLogLines(
      run({ endedAt: T0 + 20_000, outcome: 'preempted' }),
      POD1,
      60,
      T0 + 30_000,
    );
    expect(preempted.at(-1)!.text).toMatch(/received SIGTERM: saving checkpoint/);
  });

  it('the same run gives the same lines; after a cursor and the last N are exactly the matching part of all', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3000 }),
        fc.integer({ min: 0, max: 400 }),
        fc.integer({ min: 0, max: 30 }),
        fc.boolean(),
        fc.constantFrom(POD0, POD1),
        (scale, cut, tail, ended, pod) => {
          const r = run(ended ? { endedAt: T0 + 3_000_000 / scale, outcome: 'cancelled' } : {});
          const upto = T0 + 4_000_000 / scale;
          const all = simulatedLogLines(r, pod, scale, upto);
          expect(simulatedLogLines(r, pod, scale, upto)).toEqual(all);
          const after = all[Math.min(cut, all.length - 1)]?.cursor ?? null;
          const rest = simulatedLogLines(r, pod, scale, upto, { after });
          expect(rest).toEqual(after === null ? all : all.filter((l) => l.cursor > after));
          expect(simulatedLogLines(r, pod, scale, upto, { tail })).toEqual(
            tail === 0 ? [] : all.slice(-tail),
          );
        },
      ),
    );
  });

  it('about a hundred steps per declared run', () => {
    expect(stepMsOf({ expectedDurationMs: 3_600_000 })).toBe(36_000);
    expect(stepMsOf({ expectedDurationMs: null })).toBe(30_000);
    expect(stepMsOf({ expectedDurationMs: 60_000 })).toBe(5_000);
  });
});

describe('runs from the history', () => {
  it('a run per start, ended by what took its pods; the current one under the job’s admission', () => {
    const events = [
      { type: 'SUBMITTED', at: 1, message: null },
      { type: 'ADMITTED', at: 2, message: null },
      { type: 'STARTED', at: 3, message: null },
      { type: 'STARTED', at: 3, message: null },
      { type: 'PREEMPTED', at: 9, message: 'reclaimed' },
      { type: 'ADMITTED', at: 12, message: null },
      { type: 'STARTED', at: 14, message: null },
    ];
    const runs = runsOf(events, 13);
    expect(runs).toEqual([
      { run: 1, admissionAt: 2, startedAt: 3, endedAt: 9, outcome: 'preempted', reason: 'reclaimed' },
      { run: 2, admissionAt: 13, startedAt: 14, endedAt: null, outcome: 'running', reason: null },
    ]);
    expect(runOfAdmission(runs, 2)!.run).toBe(1);
    expect(runOfAdmission(runs, 13)!.run).toBe(2);
  });
});
