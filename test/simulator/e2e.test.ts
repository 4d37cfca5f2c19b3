// End-to-end: traces replayed through the real scheduler core, metrics computed by hand.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/fairway.js';
import type { ReplayMetrics } from '../../src/simulator/metrics.js';
import { runReplay } from '../../src/simulator/replay.js';
import type { FillReport, ReplayReport } from '../../src/simulator/report.js';
import { loadInput, type SimulateOptions, simulate, writeReport } from '../../src/simulator/run.js';

const fx = (f: string): string => join(import.meta.dirname, 'fixtures', f);
const tmp = mkdtempSync(join(tmpdir(), 'fw-sim-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const reclaim: SimulateOptions = {
  trace: fx('reclaim-trace.csv'),
  cluster: fx('reclaim-cluster.csv'),
  queues: fx('reclaim-queues.json'),
  policies: ['fairway', 'static', 'fifo'],
  placements: ['best-fit'],
  mode: 'replay',
  seed: 1,
  windowEnd: 'last-finish',
};

describe('two tenants, one borrowing then reclaimed (4 GPUs, nominal 2 + 2)', () => {
  // a1, a2: tenant A, 2 GPUs × 100 s at t=0 (a2 borrows B's idle nominal)
  // b1: tenant B, 2 GPUs × 20 s at t=30
  const report = simulate(reclaim).report as ReplayReport;
  const run = (p: string): ReplayMetrics => report.runs.find((r) => r.policy === p)!;

  it('fairway: b1 reclaims from a2 at once; a2 restarts from zero at 50 s and ends at 150 s', () => {
    const m = run('fairway');
    // b1 is within its nominal: the design calls this a reclaim
    expect(m.preemptions).toMatchObject({ count: 1, byReason: { reclaim: { count: 1 } } });
    // a2 had run 30 s on 2 GPUs
    expect(m.preemptions.gpuHoursLost).toBeCloseTo(60 / 3600, 6);
    expect(m.waitSeconds).toMatchObject({ p50: 0, p99: 0 });
    // a1 and b1 were within nominal at submit, a2 was not
    expect(m.sla).toEqual({ eligible: 2, met: 2, attainment: 1 });
    // busy GPUs: 4 over 0–100 s, 2 over 100–150 s, of 4 × 150
    expect(m.allocationRatio).toBeCloseTo(500 / 600, 6);
    expect(m.usefulAllocationRatio).toBeCloseTo(440 / 600, 6);
    expect(m.window.hours).toBeCloseTo(150 / 3600, 6);
    expect(m.jainIndex).toBe(1);
    expect(m.tenants.map((t) => t.preemptionsSuffered.count)).toEqual([1, 0]);
  });

  it('static: a2 cannot borrow and waits for a1 (100 s); no preemption', () => {
    const m = run('static');
    expect(m.preemptions.count).toBe(0);
    expect(m.waitSeconds).toMatchObject({ p50: 0, p95: 100, p99: 100 });
    expect(m.sla.attainment).toBe(1);
    // 2 GPUs over 0–200 s plus b1's 2 × 20 s, of 4 × 200
    expect(m.allocationRatio).toBeCloseTo(440 / 800, 6);
    // A: entitled 4·30 + 2·20 + 4·50 + 2·100 = 560, received 400; B: 40 of 40
    const xa = 400 / 560;
    expect(m.tenants[0]!.fairnessRatio).toBeCloseTo(xa, 6);
    expect(m.jainIndex).toBeCloseTo((xa + 1) ** 2 / (2 * (xa * xa + 1)), 6);
  });

  it('fifo: b1 queues behind the borrowers for 70 s and misses its SLA', () => {
    const m = run('fifo');
    expect(m.waitSeconds).toMatchObject({ p50: 0, p99: 70 });
    expect(m.sla).toEqual({ eligible: 2, met: 1, attainment: 0.5 });
    expect(m.tenants[1]!.sla.attainment).toBe(0);
    expect(m.allocationRatio).toBeCloseTo(440 / 480, 6);
    // A: entitled 4·30 + 2·70 = 260, received 400; B: entitled 2·70 + 2·20 = 180, received 40
    const xa = 400 / 260;
    const xb = 40 / 180;
    expect(m.jainIndex).toBeCloseTo((xa + xb) ** 2 / (2 * (xa * xa + xb * xb)), 6);
  });

  it('the default window ends at the last submit', () => {
    const m = (simulate({ ...reclaim, policies: ['fairway'], windowEnd: undefined }).report as ReplayReport)
      .runs[0]!;
    expect(m.window.hours).toBeCloseTo(30 / 3600, 6);
    expect(m.allocationRatio).toBe(1);
  });

  it('preview at submit is recorded', () => {
    const o = runReplay(loadInput(reclaim), { policy: 'fairway', placement: 'best-fit' });
    expect(o.jobs.map((j) => [j.id, j.previewMode])).toEqual([
      ['a1', 'fit'],
      ['a2', 'borrow'],
      ['b1', 'preempt'],
    ]);
    expect(o.segments.filter((s) => s.job === 1).map((s) => [s.start, s.end, s.preempted])).toEqual([
      [0, 30_000, true],
      [50_000, 150_000, false],
    ]);
  });
});

describe('replay fragmentation (hand-computed)', () => {
  it('free GPUs count as fragmented only while no pending shape can use them', () => {
    // 2 nodes × 2 GPUs, static quotas: A owns all 4, B owns none.
    // j1 (A, 1 GPU) and j2 (A, 2 GPUs) run 0–100 s on different nodes: 1 GPU stays free.
    // j3 (A, 2 GPUs) waits 10–100 s: the free GPU is useless to it.
    // j4 (B, 1 GPU) arrives at 55 s and never runs (no quota), but its shape could use the free GPU.
    // j3 runs 100–110 s; then 2 GPUs are free and usable by j4's shape.
    const trace = join(tmp, 'frag.csv');
    writeFileSync(
      trace,
      'id,submit_time,duration_s,tenant,gpus\nj1,0,100,A,1\nj2,0,100,A,2\nj3,10,10,A,2\nj4,55,10,B,1\n',
    );
    const cluster = join(tmp, 'two-by-two.csv');
    writeFileSync(cluster, 'name,gpu_type,gpus,cpu_milli,memory_mib,count\nn,h100,2,1000,1000,2\n');
    const queues = join(tmp, 'ab.json');
    writeFileSync(
      queues,
      '{"queues":[{"name":"qa","tenant":"A","quotas":{"h100":{"gpu":4}}},{"name":"qb","tenant":"B","quotas":{"h100":{"gpu":0}}}]}',
    );
    const r = simulate({
      trace,
      cluster,
      queues,
      policies: ['static'],
      placements: ['best-fit'],
      mode: 'replay',
      seed: 1,
      windowEnd: 'last-finish',
    }).report as ReplayReport;
    const m = r.runs[0]!;
    // unusable: 1 GPU × 45 s (10–55); free while something pends: 1 × 90 s + 2 × 10 s
    expect(m.fragmentationRatio).toBeCloseTo(45 / 110, 6);
    expect(m.unstarted).toBe(1);
    // j4's wait is censored at the end of the run (110 s)
    expect(m.tenants[1]!.waitSeconds.p50).toBe(55);
    expect(m.waitSeconds.p99).toBe(90);
  });
});

describe('fractional GPUs and gangs', () => {
  it('two half-GPU jobs share one GPU; the third waits for a half to free', () => {
    const trace = join(tmp, 'frac.csv');
    writeFileSync(trace, 'submit_time,duration_s,tenant,gpus\n0,10,A,0.5\n0,20,A,0.5\n0,10,A,0.5\n');
    const cluster = join(tmp, 'one-gpu.csv');
    writeFileSync(cluster, 'name,gpu_type,gpus,cpu_milli,memory_mib\nn,h100,1,1000,1000\n');
    const queues = join(tmp, 'q.json');
    writeFileSync(queues, '{"queues":[{"name":"qa","tenant":"A","quotas":{"h100":{"gpu":1}}}]}');
    const o = runReplay(loadInput({ trace, cluster, queues }), { policy: 'fifo', placement: 'best-fit' });
    expect(o.jobs.map((j) => [j.firstStartMs, j.endMs])).toEqual([
      [0, 10_000],
      [0, 20_000],
      [10_000, 20_000],
    ]);
  });
  it('a 2-pod gang starts only when both nodes are free', () => {
    const trace = join(tmp, 'gang.csv');
    writeFileSync(trace, 'submit_time,duration_s,tenant,gpus,pods\n0,50,A,4,1\n1,10,A,4,2\n2,10,A,1,1\n');
    const o = runReplay(
      loadInput({ trace, cluster: fx('fill-cluster.csv'), queues: fx('fill-queues.yaml') }),
      { policy: 'fifo', placement: 'best-fit' },
    );
    // the 1-GPU job passes the blocked gang (BestEffortFIFO); the gang waits for the 4-GPU job
    expect(o.jobs.map((j) => j.firstStartMs)).toEqual([0, 50_000, 2_000]);
  });
});

describe('fill mode', () => {
  it('expected fragmentation weighs the trace shapes by popularity', () => {
    // 1 node × 4 GPUs; jobs: 3 GPUs (3 of 4 pods in the trace) and 1 GPU (1 of 4)
    const trace = join(tmp, 'mix.csv');
    writeFileSync(trace, 'submit_time,duration_s,tenant,gpus\n0,1,A,3\n0,1,A,3\n0,1,A,3\n0,1,A,1\n');
    const cluster = join(tmp, 'four.csv');
    writeFileSync(cluster, 'name,gpu_type,gpus,cpu_milli,memory_mib\nn,h100,4,1000,1000\n');
    const queues = join(tmp, 'qa.json');
    writeFileSync(queues, '{"queues":[{"name":"qa","tenant":"A","quotas":{"h100":{"gpu":4}}}]}');
    // at 50% requested (≥ 2 GPUs) look at the first point: whatever was drawn, if a 3-GPU job runs,
    // 1 GPU is free; the 3-GPU shape (weight 3/4) cannot use it, the 1-GPU shape can
    for (let seed = 1; seed <= 20; seed++) {
      const r = simulate({
        trace,
        cluster,
        queues,
        policies: ['fifo'],
        placements: ['best-fit'],
        mode: 'fill',
        seed,
        fillTargets: [50],
      }).report as FillReport;
      const p = r.runs[0]!.points[0]!;
      if (p.allocationRatio === 0.75 && p.jobsRunning === 1) {
        expect(p.expectedFragmentationRatio).toBe(0.75);
        return;
      }
    }
    throw new Error('no seed drew a 3-GPU job first');
  });
  const base: SimulateOptions = {
    trace: fx('fill-trace-3gpu.csv'),
    cluster: fx('fill-cluster.csv'),
    queues: fx('fill-queues.yaml'),
    policies: ['fifo'],
    placements: ['best-fit'],
    mode: 'fill',
    seed: 7,
  };
  it('3-GPU jobs on two 4-GPU nodes: 75% allocated, the two free GPUs are unusable', () => {
    const r = simulate(base).report as FillReport;
    const pts = r.runs[0]!.points;
    expect(pts.map((p) => p.targetPct)).toEqual([50, 80, 90, 100, 130]);
    // 2 jobs (6 GPUs = 75%) reach 50%; 3 jobs (112.5%) reach 80–100%; 4 jobs (150%) reach 130%
    expect(pts.map((p) => p.jobsSubmitted)).toEqual([2, 3, 3, 3, 4]);
    expect(pts.map((p) => p.requestedPct)).toEqual([75, 112.5, 112.5, 112.5, 150]);
    for (const p of pts) {
      expect(p.allocationRatio).toBe(0.75);
      expect(p.freeGpus).toBe(2);
      // the only shape of the workload (3 GPUs) cannot use a lone free GPU on either node
      expect(p.expectedFragmentationRatio).toBe(1);
    }
    // by the design's definition (pending shapes): nothing pends at 50%, a 3-GPU job from 80% on
    expect(pts.map((p) => p.fragmentationRatio)).toEqual([0, 1, 1, 1, 1]);
    expect(pts.map((p) => p.jobsPending)).toEqual([0, 1, 1, 1, 2]);
  });
  it('same seed gives byte-identical JSON; another seed draws another sample', async () => {
    const o: SimulateOptions = {
      ...base,
      trace: fx('fill-trace-mixed.csv'),
      policies: ['fifo', 'fairway'],
      placements: ['best-fit', 'fragmentation-aware'],
    };
    const a = await writeReport(simulate(o).report, join(tmp, 'a'));
    const b = await writeReport(simulate(o).report, join(tmp, 'b'));
    const c = await writeReport(simulate({ ...o, seed: 8 }).report, join(tmp, 'c'));
    const ja = readFileSync(a.json, 'utf8');
    expect(readFileSync(b.json, 'utf8')).toBe(ja);
    expect(readFileSync(c.json, 'utf8')).not.toBe(ja);
    const sa = (JSON.parse(ja) as FillReport).runs[0]!.sampleSha256;
    const sc = (JSON.parse(readFileSync(c.json, 'utf8')) as FillReport).runs[0]!.sampleSha256;
    expect(sc).not.toBe(sa);
    expect(readFileSync(a.html, 'utf8')).toBe(readFileSync(b.html, 'utf8'));
  });
  it('replay JSON is byte-identical across runs', async () => {
    const a = await writeReport(simulate(reclaim).report, join(tmp, 'ra'));
    const b = await writeReport(simulate(reclaim).report, join(tmp, 'rb'));
    expect(readFileSync(a.json, 'utf8')).toBe(readFileSync(b.json, 'utf8'));
  });
});

describe('CLI', () => {
  const run = async (args: string[]): Promise<{ code: number; out: string; err: string }> => {
    let out = '';
    let err = '';
    const code = await main(args, { out: (s) => (out += `${s}\n`), err: (s) => (err += `${s}\n`) });
    return { code, out, err };
  };
  it('simulate writes a terminal table, JSON and a self-contained HTML page', async () => {
    const dir = join(tmp, 'cli');
    const r = await run([
      'simulate',
      '--trace',
      reclaim.trace,
      '--cluster',
      reclaim.cluster,
      '--queues',
      reclaim.queues,
      '--out',
      dir,
      '--window',
      'last-finish',
    ]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/fairway\s+best-fit\s+83\.3%\s+73\.3%\s+100\.0%\s+1\.000/);
    expect(r.err).toMatch(/replay fairway\/best-fit: 3 jobs in [\d.]+ s \(\d+ jobs\/s\)/);
    const html = readFileSync(join(dir, 'report.html'), 'utf8');
    expect(html).toContain('<svg');
    expect(html).not.toMatch(/<script|https?:\/\//);
    const json = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as ReplayReport;
    expect(json.runs.map((x) => x.policy)).toEqual(['fairway', 'static', 'fifo']);
  });
  it('a malformed trace stops the run with the file and line', async () => {
    const bad = join(tmp, 'bad.csv');
    writeFileSync(bad, 'submit_time,duration_s,tenant,gpus\n0,10,A,1\n5,ten,B,1\n');
    const r = await run([
      'simulate',
      '--trace',
      bad,
      '--cluster',
      reclaim.cluster,
      '--queues',
      reclaim.queues,
      '--out',
      join(tmp, 'x'),
    ]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`${bad}:3: column 'duration_s': 'ten' is not a number`);
  });
  it('a tenant without a queue is reported with its trace line', async () => {
    const bad = join(tmp, 'bad2.csv');
    writeFileSync(bad, 'submit_time,duration_s,tenant,gpus\n0,10,A,1\n5,10,C,1\n');
    const r = await run([
      'simulate',
      '--trace',
      bad,
      '--cluster',
      reclaim.cluster,
      '--queues',
      reclaim.queues,
    ]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/trace line 3: tenant 'C' has no queue/);
  });
  it('a malformed cluster file is reported with its line', async () => {
    const bad = join(tmp, 'badc.csv');
    writeFileSync(bad, 'name,gpu_type,gpus,cpu_milli,memory_mib\nn1,h100,4,1000,1000\nn2,h100,4,lots,1000\n');
    const r = await run(['simulate', '--trace', reclaim.trace, '--cluster', bad, '--queues', reclaim.queues]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`${bad}:3: column 'cpu_milli': 'lots' is not a number`);
  });
  it('runs as a program (npm run simulate maps to tsx src/cli/fairway.ts simulate)', () => {
    const r = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        'src/cli/fairway.ts',
        'simulate',
        '--trace',
        reclaim.trace,
        '--cluster',
        reclaim.cluster,
        '--queues',
        reclaim.queues,
        '--policy',
        'fifo',
        '--out',
        join(tmp, 'spawn'),
        '--no-tenants',
      ],
      { encoding: 'utf8' },
    );
    expect(r.status).toBe(0);
    expect(r.stdout).toMatch(/fifo\s+best-fit/);
    expect(r.stderr).toMatch(/jobs\/s/);
    const bad = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/fairway.ts', 'simulate'], {
      encoding: 'utf8',
    });
    expect(bad.status).toBe(2);
  });
  it('usage errors exit 2; --help exits 0', async () => {
    expect((await run(['simulate', '--trace', 'x'])).code).toBe(2);
    expect(
      (await run(['simulate', '--trace', 'x', '--cluster', 'y', '--queues', 'z', '--policy', 'lottery'])).err,
    ).toMatch(/--policy: 'lottery' is not one of fairway, static, fifo/);
    expect((await run(['frobnicate'])).code).toBe(2);
    const h = await run(['simulate', '--help']);
    expect(h.code).toBe(0);
    expect(h.out).toMatch(/--placement LIST/);
  });
});
