// The ETA shown at submit, measured against the actual start, through the real core.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { main } from '../../src/cli/fairway.js';
import type { SimJob } from '../../src/simulator/engine.js';
import { etaStats } from '../../src/simulator/eta.js';
import type { ReplayMetrics } from '../../src/simulator/metrics.js';
import { Prng } from '../../src/simulator/prng.js';
import { runReplay } from '../../src/simulator/replay.js';
import { type ReplayReport, reportJson } from '../../src/simulator/report.js';
import { loadInput, type SimulateOptions, simulate } from '../../src/simulator/run.js';

const tmp = mkdtempSync(join(tmpdir(), 'fw-sim-eta-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

let n = 0;
/** One 4-GPU node; tenant A's queue owns all 4 GPUs. */
function replayOf(traceCsv: string, extra: Partial<SimulateOptions> = {}): SimulateOptions {
  const trace = join(tmp, `t${n++}.csv`);
  writeFileSync(trace, traceCsv);
  const cluster = join(tmp, 'one-node.csv');
  writeFileSync(cluster, 'name,gpu_type,gpus,cpu_milli,memory_mib\nn1,h100,4,64000,512000\n');
  const queues = join(tmp, 'qa.json');
  writeFileSync(queues, '{"queues":[{"name":"qa","tenant":"A","quotas":{"h100":{"gpu":{"nominal":4}}}}]}');
  return {
    trace,
    cluster,
    queues,
    policies: ['fairway', 'static', 'fifo'],
    placements: ['best-fit'],
    mode: 'replay',
    seed: 1,
    windowEnd: 'last-finish',
    eta: true,
    ...extra,
  };
}

const runs = (o: SimulateOptions): ReplayMetrics[] => (simulate(o).report as ReplayReport).runs;

describe('ETA at submit against the actual start (hand-computed, every policy)', () => {
  it('exact: the running job declares its real duration, the waiting job starts at the ETA (error 0)', () => {
    // r1 holds all 4 GPUs 0–100 s (declared 100 s). w2 arrives at 10 s and cannot fit:
    // the ETA shown is r1's end, 100 s, and w2 starts at 100 s. r1 was admitted at once: no ETA.
    const o = replayOf('id,submit_time,duration_s,tenant,gpus\nr1,0,100,A,4\nw2,10,10,A,4\n');
    const out = runReplay(loadInput(o), { policy: 'fairway', placement: 'best-fit', eta: true });
    const w2 = out.jobs[1]!;
    expect([w2.pendingAfterSubmit, w2.etaAtSubmit, w2.startAfterEtaMs]).toEqual([true, 100_000, 100_000]);
    expect(out.jobs[0]!.etaAtSubmit).toBeUndefined();
    for (const m of runs(o)) {
      expect(m.etaAtSubmit).toEqual({
        sampled: true,
        admittedAtSubmit: 1,
        pendingAtSubmit: 1,
        withEta: 1,
        unknown: 0,
        unknownByReason: {},
        measured: 1,
        neverStarted: 0,
        absErrorSeconds: { p50: 0, p90: 0, p99: 0, mean: 0 },
        signedErrorSecondsP50: 0,
        late: 0,
        early: 0,
        exact: 1,
      });
    }
  });

  it('off by a known amount: declared ≠ actual duration (+40 s optimistic, −100 s pessimistic)', () => {
    // r1 declares 60 s but runs 100 s: w2 (at 10 s) is shown 60 s, starts at 100 s → +40 s.
    // r3 (at 200 s) declares 150 s but runs 50 s: w4 (at 210 s) is shown 350 s, starts at 250 s → −100 s.
    const o = replayOf(
      'id,submit_time,duration_s,declared_duration_s,tenant,gpus\n' +
        'r1,0,100,60,A,4\nw2,10,10,10,A,4\nr3,200,50,150,A,4\nw4,210,10,10,A,4\n',
    );
    const out = runReplay(loadInput(o), { policy: 'static', placement: 'best-fit', eta: true });
    expect(out.jobs.map((j) => [j.id, j.etaAtSubmit, j.startAfterEtaMs])).toEqual([
      ['r1', undefined, undefined],
      ['w2', 60_000, 100_000],
      ['r3', undefined, undefined],
      ['w4', 350_000, 250_000],
    ]);
    for (const m of runs(o)) {
      expect(m.etaAtSubmit).toMatchObject({
        admittedAtSubmit: 2,
        pendingAtSubmit: 2,
        withEta: 2,
        measured: 2,
        // |errors| 40, 100: nearest rank p50 = 40, p90 = p99 = 100; signed −100, +40: p50 = −100
        absErrorSeconds: { p50: 40, p90: 100, p99: 100, mean: 70 },
        signedErrorSecondsP50: -100,
        late: 1,
        early: 1,
        exact: 0,
      });
    }
  });

  it('unknown: nothing ahead declares a duration, so the core gives no time (null), counted apart', () => {
    const o = replayOf(
      'id,submit_time,duration_s,declared_duration_s,tenant,gpus\nr1,0,100,,A,4\nw2,10,10,10,A,4\n',
    );
    for (const m of runs(o)) {
      expect(m.etaAtSubmit).toMatchObject({
        pendingAtSubmit: 1,
        withEta: 0,
        unknown: 1,
        measured: 0,
        absErrorSeconds: { p50: null, p90: null, p99: null, mean: null },
        signedErrorSecondsP50: null,
      });
      expect(Object.values(m.etaAtSubmit.unknownByReason)).toEqual([1]);
    }
  });
});

describe('ETA statistics from job records', () => {
  const rec = (p: Partial<SimJob>): SimJob => ({
    id: 'x',
    line: 0,
    tenant: 'A',
    queue: 'qa',
    gpus: 1,
    durationMs: 0,
    submitMs: 0,
    firstStartMs: null,
    endMs: null,
    starts: 0,
    slaEligible: false,
    previewMode: 'none',
    ...p,
  });
  it('rejected jobs are left out; jobs that never started are counted but not measured', () => {
    const s = etaStats(
      [
        rec({ pendingAfterSubmit: false }),
        rec({ pendingAfterSubmit: true, etaAtSubmit: 5_000, startAfterEtaMs: 8_000 }),
        rec({ pendingAfterSubmit: true, etaAtSubmit: 5_000, startAfterEtaMs: null }),
        rec({ pendingAfterSubmit: true, etaAtSubmit: null, etaUnknownReason: 'NoDeclaredDuration' }),
        rec({ rejected: 'REQUEST_TOO_LARGE: …' }),
      ],
      true,
    );
    expect(s).toMatchObject({
      admittedAtSubmit: 1,
      pendingAtSubmit: 3,
      withEta: 2,
      unknown: 1,
      unknownByReason: { NoDeclaredDuration: 1 },
      measured: 1,
      neverStarted: 1,
      absErrorSeconds: { p50: 3, p90: 3, p99: 3, mean: 3 },
      signedErrorSecondsP50: 3,
      late: 1,
    });
  });
});

/** A contended three-tenant trace in one cohort: borrowing, reclaims and fair-share preemptions. */
function busyTrace(): SimulateOptions {
  const rng = new Prng(42);
  const rows = ['id,submit_time,duration_s,tenant,gpus,pods'];
  let t = 0;
  for (let i = 0; i < 150; i++) {
    t += rng.int(30);
    const g = [1, 1, 2, 4, 4][rng.int(5)]!;
    rows.push(`j${i},${t},${30 + rng.int(400)},${'ABC'[rng.int(3)]},${g},${rng.int(6) === 0 ? 2 : 1}`);
  }
  const trace = join(tmp, 'busy.csv');
  writeFileSync(trace, `${rows.join('\n')}\n`);
  const cluster = join(tmp, 'busy-cluster.csv');
  writeFileSync(cluster, 'name,gpu_type,gpus,cpu_milli,memory_mib,count\nn,h100,4,64000,512000,4\n');
  const queues = join(tmp, 'busy-queues.json');
  const q = (name: string, nominal: number): string =>
    `{"name":"q${name}","tenant":"${name}","cohort":"c","quotas":{"h100":{"gpu":{"nominal":${nominal}}}}}`;
  writeFileSync(queues, `{"cohorts":[{"name":"c"}],"queues":[${q('A', 8)},${q('B', 4)},${q('C', 4)}]}`);
  return {
    trace,
    cluster,
    queues,
    policies: ['fairway', 'static', 'fifo'],
    placements: ['best-fit', 'fragmentation-aware'],
    mode: 'replay',
    seed: 1,
    eta: true,
  };
}

describe('ETA sampling is read-only', () => {
  it('a replay with and without sampling makes the same decisions (report equal but for etaAtSubmit)', () => {
    const o = busyTrace();
    const withEta = simulate(o).report as ReplayReport;
    const { eta: _on, ...off } = o;
    const without = simulate(off).report as ReplayReport; // the default: no sampling
    const strip = (r: ReplayReport): string =>
      reportJson({ ...r, runs: r.runs.map(({ etaAtSubmit: _e, ...m }) => m) } as unknown as ReplayReport);
    expect(strip(withEta)).toBe(strip(without));
    // the trace is busy enough to mean something: jobs waited, were preempted, were shown ETAs
    const fw = withEta.runs.find((m) => m.policy === 'fairway')!;
    expect(fw.preemptions.count).toBeGreaterThan(0);
    expect(fw.etaAtSubmit.pendingAtSubmit).toBeGreaterThan(10);
    expect(without.runs.every((m) => !m.etaAtSubmit.sampled && m.etaAtSubmit.withEta === 0)).toBe(true);
  });
});

describe('report and CLI', () => {
  it('with --eta, terminal and Markdown show the ETA table; without it nothing is sampled', async () => {
    const o = replayOf(
      'id,submit_time,duration_s,declared_duration_s,tenant,gpus\nr1,0,100,60,A,4\nw2,10,10,10,A,4\n',
    );
    let out = '';
    let err = '';
    const io = { out: (s: string) => (out += `${s}\n`), err: (s: string) => (err += `${s}\n`) };
    const dir = join(tmp, 'cli');
    expect(
      await main(
        [
          'simulate',
          '--trace',
          o.trace,
          '--cluster',
          o.cluster,
          '--queues',
          o.queues,
          '--policy',
          'static',
          '--out',
          dir,
          '--no-tenants',
          '--eta',
        ],
        io,
      ),
    ).toBe(0);
    expect(out).toMatch(/static\s+best-fit\s+1\s+1\s+0\s+1\s+40s\s+40s\s+40s\s+\+40s\s+1 \/ 0 \/ 0/);
    expect(err).toMatch(/ETA sampling [\d.]+ s of it, 1 explain calls/);
    expect(readFileSync(join(dir, 'report.md'), 'utf8')).toMatch(
      /\| static \| best-fit \| 1 \| 1 \| 0 \| 1 \| 40s \| 40s \| 40s \| \+40s \|/,
    );
    expect(readFileSync(join(dir, 'report.html'), 'utf8')).toContain('<h2>ETA at submit</h2>');
    out = '';
    expect(
      await main(
        [
          'simulate',
          '--trace',
          o.trace,
          '--cluster',
          o.cluster,
          '--queues',
          o.queues,
          '--policy',
          'static',
          '--out',
          dir,
          '--no-tenants',
        ],
        io,
      ),
    ).toBe(0);
    expect(out).not.toMatch(/ETA at submit/);
    const json = JSON.parse(readFileSync(join(dir, 'report.json'), 'utf8')) as ReplayReport;
    expect(json.runs[0]!.etaAtSubmit).toMatchObject({ sampled: false, pendingAtSubmit: 1, withEta: 0 });
  });
});
