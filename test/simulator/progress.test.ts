// `fairway simulate` progress: on stderr only, plain lines when stderr is not a terminal, at
// most one per interval; the report on stdout and the JSON are the same with or without it.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { type CliOptions, main } from '../../src/cli/fairway.js';
import { lineProgress } from '../../src/simulator/progress.js';
import { reportJson } from '../../src/simulator/report.js';
import { type RunProgress, type SimulateOptions, simulate } from '../../src/simulator/run.js';

const fx = (f: string): string => join(import.meta.dirname, 'fixtures', f);
const tmp = mkdtempSync(join(tmpdir(), 'fw-sim-prg-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

const reclaim = [
  '--trace',
  fx('reclaim-trace.csv'),
  '--cluster',
  fx('reclaim-cluster.csv'),
  '--queues',
  fx('reclaim-queues.json'),
  '--window',
  'last-finish',
];

async function run(args: string[], options: CliOptions) {
  let out = '';
  let err = '';
  // No errStream: what a pipe or a CI log gets (not a terminal).
  const code = await main(
    ['simulate', ...args],
    { out: (s) => (out += `${s}\n`), err: (s) => (err += `${s}\n`) },
    options,
  );
  return { code, out, err };
}

describe('simulate progress (stderr not a terminal)', () => {
  it('prints plain progress lines on stderr only; stdout is the same as with --quiet', async () => {
    const loud = await run([...reclaim, '--out', join(tmp, 'loud')], {
      progressIntervalMs: 0,
      progressEvery: 1,
    });
    const quiet = await run([...reclaim, '--out', join(tmp, 'quiet'), '--quiet'], {
      progressIntervalMs: 0,
      progressEvery: 1,
    });
    expect(loud.code).toBe(0);
    expect(quiet.code).toBe(0);
    const progress = loud.err.split('\n').filter((l) => l.startsWith('progress '));
    // 3 jobs: 3 submits and 3 finishes per run, one callback each, three policies
    expect(progress).toHaveLength(18);
    expect(progress[0]).toMatch(
      /^progress replay fairway\/best-fit: 17% \(1\/3 submitted, 0 finished\), \d+ jobs\/s, ETA (\?|\d+ s)$/,
    );
    expect(
      progress.filter((l) => /^progress replay fifo\/best-fit: 100% \(3\/3 submitted, 3 finished\)/.test(l)),
    ).toHaveLength(1);
    // the per-run timing lines are still there, after each run's progress
    expect(loud.err).toMatch(
      /progress replay static\/best-fit: 100%[^\n]*\nreplay static\/best-fit: 3 jobs in/,
    );
    expect(quiet.err).not.toMatch(/^progress /m);
    expect(quiet.err).toMatch(/replay fairway\/best-fit: 3 jobs in/);
    expect(loud.out).not.toMatch(/^progress /m);
    expect(loud.out.replaceAll(join(tmp, 'loud'), 'OUT')).toBe(
      quiet.out.replaceAll(join(tmp, 'quiet'), 'OUT'),
    );
    expect(readFileSync(join(tmp, 'loud', 'report.json'), 'utf8')).toBe(
      readFileSync(join(tmp, 'quiet', 'report.json'), 'utf8'),
    );
  });

  it('with the default interval a run shorter than 5 s prints no progress line', async () => {
    const r = await run([...reclaim, '--out', join(tmp, 'default')], { progressEvery: 1 });
    expect(r.code).toBe(0);
    expect(r.err).not.toMatch(/^progress /m);
  });

  it('fill reports the GPUs requested towards the last target', async () => {
    const r = await run(
      [
        '--mode',
        'fill',
        '--trace',
        fx('fill-trace-mixed.csv'),
        '--cluster',
        fx('fill-cluster.csv'),
        '--queues',
        fx('fill-queues.yaml'),
        '--policy',
        'fifo',
        '--out',
        join(tmp, 'fill'),
      ],
      { progressIntervalMs: 0, progressEvery: 1 },
    );
    expect(r.code).toBe(0);
    const lines = r.err.split('\n').filter((l) => l.startsWith('progress '));
    expect(lines.length).toBeGreaterThan(1);
    expect(lines.at(-1)).toMatch(
      /^progress fill fifo\/best-fit: 100% \(\d+ jobs drawn, \d+\/\d+ GPUs requested\)/,
    );
  });

  it('the core loop reports progress without changing a decision', () => {
    const o: SimulateOptions = {
      trace: fx('reclaim-trace.csv'),
      cluster: fx('reclaim-cluster.csv'),
      queues: fx('reclaim-queues.json'),
      policies: ['fairway', 'static', 'fifo'],
      placements: ['best-fit', 'fragmentation-aware'],
      mode: 'replay',
      seed: 1,
      progressEvery: 1,
    };
    const seen: RunProgress[] = [];
    const withProgress = simulate(o, undefined, undefined, (p) => seen.push(p));
    expect(seen.length).toBe(6 * 6);
    expect(seen.map((p) => p.fraction).slice(0, 6)).toEqual([1 / 6, 2 / 6, 3 / 6, 4 / 6, 5 / 6, 1]);
    expect(reportJson(withProgress.report)).toBe(reportJson(simulate(o).report));
  });
});

describe('lineProgress', () => {
  const at = (fraction: number, jobs: number, policy = 'fairway'): RunProgress => ({
    mode: 'replay',
    policy,
    placement: 'best-fit',
    fraction,
    jobs,
    detail: `${jobs} jobs`,
  });

  it('writes at most one line per interval, measuring rate and ETA from the run’s first callback', () => {
    let t = 0;
    const lines: string[] = [];
    const display = lineProgress((l) => lines.push(l), { intervalMs: 5000, now: () => t });
    t = 1000;
    display.update(at(0.1, 100)); // baseline of the run
    for (t = 2000; t <= 12_000; t += 1000)
      display.update(at(0.1 + (t - 1000) / 20_000, 100 + (t - 1000) / 10));
    expect(lines).toEqual([
      'progress replay fairway/best-fit: 30% (500 jobs), 100 jobs/s, ETA 14 s',
      'progress replay fairway/best-fit: 55% (1000 jobs), 100 jobs/s, ETA 9 s',
    ]);
    // a new run starts a new baseline: its first callback prints nothing even past the interval
    t = 30_000;
    display.runDone();
    display.update(at(0.5, 10, 'fifo'));
    expect(lines).toHaveLength(2);
  });
});
