// Checkpoints in the simulator: a preempted job resumes from its last checkpoint, and only the work
// after it counts as lost (GPU-hours lost and useful allocation).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { computeReplayMetrics } from '../../src/simulator/metrics.js';
import { runReplay } from '../../src/simulator/replay.js';
import { loadInput } from '../../src/simulator/run.js';
import { parseTrace } from '../../src/simulator/trace.js';

const tmp = mkdtempSync(join(tmpdir(), 'fw-sim-ckpt-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

// One 4-GPU node; A and B nominal 2 each in one cohort. b1 (B, 4 GPUs, 2000 s) borrows A's 2 at 0 s;
// a1 (A, 2 GPUs, 500 s) arrives at 1000 s and reclaims b1; b1 runs again when a1 ends at 1500 s.
function run(ckptCols: string, ckptCells: string) {
  const t = join(tmp, `trace-${Math.random().toString(36).slice(2)}.csv`);
  const c = join(tmp, 'cluster.csv');
  const q = join(tmp, 'queues.json');
  writeFileSync(
    t,
    `id,submit_time,duration_s,tenant,gpus${ckptCols}\nb1,0,2000,B,4${ckptCells}\na1,1000,500,A,2${ckptCols ? `,${','.repeat(ckptCols.split(',').length - 2)}` : ''}\n`,
  );
  writeFileSync(c, 'name,gpu_type,gpus,cpu_milli,memory_mib\nn1,h100,4,16000,128000\n');
  writeFileSync(
    q,
    JSON.stringify({
      cohorts: [{ name: 'c' }],
      queues: [
        { name: 'qa', tenant: 'A', cohort: 'c', quotas: { h100: { gpu: { nominal: 2 } } } },
        { name: 'qb', tenant: 'B', cohort: 'c', quotas: { h100: { gpu: { nominal: 2 } } } },
      ],
    }),
  );
  const o = runReplay(loadInput({ trace: t, cluster: c, queues: q }), {
    policy: 'fairway',
    placement: 'best-fit',
  });
  const b1 = o.jobs.find((j) => j.id === 'b1')!;
  return { o, b1, m: computeReplayMetrics(o) };
}

describe('checkpoints in the replay', () => {
  it('without checkpoints the victim restarts from zero and loses its whole run', () => {
    const { o, b1, m } = run('', '');
    expect(o.preemptions.map((p) => [p.victimId, p.reason, p.lostGpuMs])).toEqual([
      ['b1', 'reclaim', 4 * 1000_000],
    ]);
    expect(b1.endMs).toBe(1_500_000 + 2_000_000);
    expect(m.preemptions.gpuHoursLost).toBeCloseTo(4000 / 3600, 6);
  });

  it('with a checkpoint every 300 s it keeps 900 s, loses 100 s and runs only the 1100 s left', () => {
    const { o, b1, m } = run(',checkpoint_interval_s', ',300');
    expect(o.preemptions.map((p) => [p.victimId, p.lostGpuMs])).toEqual([['b1', 4 * 100_000]]);
    expect(b1.endMs).toBe(1_500_000 + 1_100_000);
    expect(m.preemptions.gpuHoursLost).toBeCloseTo(400 / 3600, 6);
    // the kept 900 s of the preempted run count as useful, the lost 100 s do not
    const kept = o.segments.filter((s) => s.job === 0);
    expect(kept.map((s) => [s.start, s.end, s.preempted])).toEqual([
      [0, 900_000, false],
      [900_000, 1_000_000, true],
      [1_500_000, 2_600_000, false],
    ]);
  });

  it('a resumable job loses nothing and finishes its remaining 1000 s', () => {
    const { o, b1, m } = run(',resumable', ',true');
    expect(o.preemptions.map((p) => [p.victimId, p.lostGpuMs])).toEqual([['b1', 0]]);
    expect(b1.endMs).toBe(1_500_000 + 1_000_000);
    expect(m.preemptions.gpuHoursLost).toBe(0);
  });

  it('parses the columns and refuses bad cells', () => {
    const ok = parseTrace(
      'submit_time,duration_s,tenant,gpus,checkpoint_interval_s,resumable\n0,10,A,1,60,\n0,10,A,1,,yes\n0,10,A,1,,\n',
    );
    expect(ok.map((j) => [j.checkpointIntervalMs, j.resumable])).toEqual([
      [60_000, undefined],
      [undefined, true],
      [undefined, undefined],
    ]);
    expect(() =>
      parseTrace('submit_time,duration_s,tenant,gpus,checkpoint_interval_s\n0,10,A,1,0\n', 't.csv'),
    ).toThrow(/t.csv:2.*checkpoint_interval_s/);
    expect(() =>
      parseTrace('submit_time,duration_s,tenant,gpus,resumable\n0,10,A,1,maybe\n', 't.csv'),
    ).toThrow(/t.csv:2.*resumable/);
  });
});
