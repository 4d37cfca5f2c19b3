import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DEFAULT_PHILLY_DIR, main } from '../../src/cli/fairway.js';
import { readCluster } from '../../src/simulator/cluster.js';
import { convertPhilly, largestRemainder, podsFor } from '../../src/simulator/philly.js';
import { readQueues } from '../../src/simulator/queues.js';
import { readTrace } from '../../src/simulator/trace.js';

const fixture = join(import.meta.dirname, 'fixtures', 'philly');
const out = mkdtempSync(join(tmpdir(), 'fw-philly-'));
afterAll(() => rmSync(out, { recursive: true, force: true }));

describe('Philly adapter', () => {
  it('splits jobs above one node into identical pods', () => {
    expect(podsFor(8, 8)).toEqual({ pods: 1, gpus: 8 });
    expect(podsFor(12, 8)).toEqual({ pods: 2, gpus: 6 });
    expect(podsFor(32, 8)).toEqual({ pods: 4, gpus: 8 });
    expect(podsFor(9, 8)).toEqual({ pods: 3, gpus: 3 });
  });
  it('largest remainder keeps the total', () => {
    expect(largestRemainder([1.5, 1.5, 1], 4)).toEqual([2, 1, 1]);
    expect(largestRemainder([10 / 3, 10 / 3, 10 / 3], 10)).toEqual([4, 3, 3]);
  });
  it('converts trace, cluster and queues files the simulator can read', () => {
    const r = convertPhilly({ dir: fixture, outDir: out, gpus: 16 });
    const trace = readTrace(r.trace);
    expect(trace.map((j) => [j.id, j.tenant, j.gpus, j.pods, j.durationMs])).toEqual([
      ['philly-3', 'bbb', 6, 2, 50500],
      ['philly-2', 'aaa', 8, 1, 100000],
      ['philly-4', 'zzz', 1, 1, 10000],
      ['philly-5', 'aaa', 8, 4, 20000],
    ]);
    expect(trace[0]!.submitMs).toBe(Date.UTC(2017, 8, 4, 10, 0, 0));
    const cluster = readCluster(r.cluster);
    expect(cluster.nodes).toHaveLength(2);
    expect(cluster.nodes.every((n) => n.gpus === 8)).toBe(true);
    const q = readQueues(r.queues);
    // VC table 3:1:1 nodes of 16 GPUs → 9.6, 3.2, 3.2 → 10, 3, 3; zzz is not in the table → 0
    expect(q.queues.map((x) => [x.name, x.tenant, x.quotas.gpu!.gpu!.nominal])).toEqual([
      ['vc-aaa', 'aaa', 10],
      ['vc-bbb', 'bbb', 3],
      ['vc-ccc', 'ccc', 3],
      ['vc-zzz', 'zzz', 0],
    ]);
    expect(q.queues.every((x) => x.cohort === 'philly')).toBe(true);
  });
  it('fractional variant: seeded, only 1-GPU jobs, shares k/10', () => {
    const a = convertPhilly({ dir: fixture, outDir: join(out, 'fa'), gpus: 16, fractional: 1, seed: 3 });
    const b = convertPhilly({ dir: fixture, outDir: join(out, 'fb'), gpus: 16, fractional: 1, seed: 3 });
    expect(a.fractionalJobs).toBe(1);
    expect(a.trace).toMatch(/philly-trace-frac1-seed3\.csv$/);
    expect(readFileSync(a.trace, 'utf8')).toBe(readFileSync(b.trace, 'utf8'));
    const t = readTrace(a.trace);
    const one = t.find((j) => j.tenant === 'zzz')!;
    expect(one.gpus).toBeGreaterThan(0);
    expect(one.gpus).toBeLessThan(1);
    expect(Number.isInteger(one.gpus * 10)).toBe(true);
    expect(t.filter((j) => j.gpus >= 1).map((j) => j.gpus)).toEqual([6, 8, 8]);
    const none = convertPhilly({ dir: fixture, outDir: join(out, 'fc'), gpus: 16, fractional: 0 });
    expect(none.fractionalJobs).toBe(0);
  });
  it('raw quotas use nodes × 8', () => {
    const r = convertPhilly({ dir: fixture, outDir: out, gpus: 16, quota: 'raw' });
    const q = readQueues(r.queues);
    expect(q.queues.map((x) => x.quotas.gpu!.gpu!.nominal)).toEqual([24, 8, 8, 0]);
    expect(readFileSync(r.queues, 'utf8')).toContain('"nominal": 24');
  });
});

describe('convert-philly: where the trace is read from', () => {
  const root = join(import.meta.dirname, '..', '..');
  const run = async (args: string[], options: Parameters<typeof main>[2]) => {
    let stdout = '';
    let stderr = '';
    const code = await main(
      ['convert-philly', ...args],
      { out: (s) => (stdout += `${s}\n`), err: (s) => (stderr += `${s}\n`) },
      options,
    );
    return { code, stdout, stderr };
  };
  const oneLine = (s: string) => s.trimEnd().split('\n');

  it('defaults to ../shared/traces/philly beside the repository, whatever the working directory', () => {
    expect(DEFAULT_PHILLY_DIR).toBe(join(root, '..', 'shared', 'traces', 'philly'));
  });
  it('a missing default folder is one line: the files needed, where it looked, --philly-dir and FAIRWAY_PHILLY_DIR', async () => {
    const absent = join(out, 'no-shared', 'traces', 'philly');
    const r = await run(['--out', join(out, 'x')], { env: {}, phillyDefaultDir: absent });
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    expect(oneLine(r.stderr)).toEqual([
      `fairway: error: convert-philly needs philly-2017-09-10.csv and philly-vc-nodes.csv, but the default folder ${absent} (../shared/traces/philly next to the repository) does not exist; pass --philly-dir DIR or set FAIRWAY_PHILLY_DIR to a folder that holds them`,
    ]);
  });
  it('FAIRWAY_PHILLY_DIR replaces the default; --philly-dir wins over both', async () => {
    const absent = join(out, 'absent');
    const fromEnv = await run(['--out', join(out, 'env'), '--gpus', '16'], {
      env: { FAIRWAY_PHILLY_DIR: fixture },
      phillyDefaultDir: absent,
    });
    expect(fromEnv.code).toBe(0);
    expect(fromEnv.stdout).toContain('4 jobs (0 made fractional)');
    const badEnv = await run([], { env: { FAIRWAY_PHILLY_DIR: absent } });
    expect(badEnv.stderr).toContain(`FAIRWAY_PHILLY_DIR=${absent} (${absent}) does not exist`);
    const flag = await run(['--philly-dir', fixture, '--out', join(out, 'flag'), '--gpus', '16'], {
      env: { FAIRWAY_PHILLY_DIR: absent },
      phillyDefaultDir: absent,
    });
    expect(flag.code).toBe(0);
  });
  it('a folder with one of the two files names the missing one and reads nothing', async () => {
    const half = join(out, 'half');
    mkdirSync(half, { recursive: true });
    copyFileSync(join(fixture, 'philly-vc-nodes.csv'), join(half, 'philly-vc-nodes.csv'));
    const r = await run(['--philly-dir', half, '--out', join(out, 'half-out')], { env: {} });
    expect(r.code).toBe(1);
    expect(oneLine(r.stderr)).toHaveLength(1);
    expect(r.stderr).toContain(`--philly-dir ${half} (${half}) has no philly-2017-09-10.csv;`);
  });
  it('as a program from another folder: exit 1, one line on stderr, no stack trace', () => {
    const elsewhere = mkdtempSync(join(tmpdir(), 'fw-clone-'));
    try {
      const r = spawnSync(
        process.execPath,
        [join(root, 'bin', 'fairway.js'), 'convert-philly', '--philly-dir', 'traces/philly'],
        { encoding: 'utf8', cwd: elsewhere, env: { ...process.env, FAIRWAY_PHILLY_DIR: '' } },
      );
      expect(r.status).toBe(1);
      expect(r.stdout).toBe('');
      expect(oneLine(r.stderr)).toEqual([
        `fairway: error: convert-philly needs philly-2017-09-10.csv and philly-vc-nodes.csv, but --philly-dir traces/philly (${join(elsewhere, 'traces', 'philly')}) does not exist; pass --philly-dir DIR or set FAIRWAY_PHILLY_DIR to a folder that holds them`,
      ]);
    } finally {
      rmSync(elsewhere, { recursive: true, force: true });
    }
  });
});
