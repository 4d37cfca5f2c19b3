import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Columns, CsvError, csvCell, parseCsvTable } from './csv.js';
import { Prng } from './prng.js';

export interface PhillyOptions {
  /** Directory holding philly-2017-09-10.csv and philly-vc-nodes.csv. */
  dir: string;
  outDir: string;
  /** Cluster size in GPUs (a multiple of gpusPerNode). Default 768. */
  gpus?: number;
  gpusPerNode?: number;
  /**
   * scaled (default): each VC's nominal = its share of the VC table (nodes / Σ nodes)
   * of the simulated cluster, rounded to whole GPUs by largest remainder so that the
   * nominals add up to the cluster exactly. raw: nodes × 8 as in the table (the
   * nominals then add up to 2,816 GPUs, far above a 768-GPU cluster).
   */
  quota?: 'scaled' | 'raw';
  nodeCpuMilli?: number;
  nodeMemoryMib?: number;
  traceFile?: string;
  vcFile?: string;
  /**
   * Probability (0–1) that a 1-GPU job becomes a fractional share k/10 of one GPU, k drawn
   * uniformly from 1…9, with a PRNG seeded by `seed`. Philly has no fractional jobs: this
   * is a synthetic variant for packing studies, and the output file name says so.
   */
  fractional?: number;
  seed?: number;
}

export interface PhillyResult {
  trace: string;
  cluster: string;
  queues: string;
  /** The same queues with governance fields (governedPhilly), for the governed and controller policies. */
  governedQueues: string;
  jobs: number;
  fractionalJobs: number;
  tenants: { vc: string; nodes: number | null; nominalGpus: number; jobs: number }[];
}

export const PHILLY_FLAVOR = 'gpu';

/** The two files `convertPhilly` reads from its directory. */
export const PHILLY_FILES = ['philly-2017-09-10.csv', 'philly-vc-nodes.csv'] as const;

/** Where the Philly directory came from: the flag, the environment, or the default. */
export type PhillyDirSource = '--philly-dir' | 'FAIRWAY_PHILLY_DIR' | 'default';

/** A Philly input folder that is missing or incomplete; the message says what to do. */
export class PhillyInputError extends Error {}

/**
 * Checks that `dir` holds both Philly files before anything is read, so that a clone
 * without the shared traces folder gets one line naming the files, the folder looked at
 * and how to point elsewhere, instead of the first ENOENT of `readFileSync`.
 */
export function checkPhillyDir(dir: string, source: PhillyDirSource, defaultHint: string): void {
  const abs = resolve(dir);
  const how = 'pass --philly-dir DIR or set FAIRWAY_PHILLY_DIR to a folder that holds them';
  const where =
    source === 'default'
      ? `the default folder ${abs} (${defaultHint})`
      : source === 'FAIRWAY_PHILLY_DIR'
        ? `FAIRWAY_PHILLY_DIR=${dir} (${abs})`
        : `--philly-dir ${dir} (${abs})`;
  const need = `convert-philly needs ${PHILLY_FILES.join(' and ')}`;
  if (!existsSync(abs) || !statSync(abs).isDirectory()) {
    throw new PhillyInputError(`${need}, but ${where} does not exist; ${how}`);
  }
  const missing = PHILLY_FILES.filter((f) => !existsSync(join(abs, f)));
  if (missing.length > 0)
    throw new PhillyInputError(`${need}, but ${where} has no ${missing.join(' and no ')}; ${how}`);
}

/** Split n GPUs into identical pods of at most perNode GPUs: fewest pods that divide n. */
export function podsFor(n: number, perNode: number): { pods: number; gpus: number } {
  if (n <= perNode) return { pods: 1, gpus: n };
  for (let pods = Math.ceil(n / perNode); pods <= n; pods++) {
    if (n % pods === 0) return { pods, gpus: n / pods };
  }
  return { pods: n, gpus: 1 };
}

/** Largest-remainder rounding of non-negative reals to integers with a given sum. */
export function largestRemainder(xs: number[], total: number): number[] {
  const fl = xs.map(Math.floor);
  let left = total - fl.reduce((s, x) => s + x, 0);
  const order = xs.map((x, i) => ({ i, r: x - Math.floor(x) })).sort((a, b) => b.r - a.r || a.i - b.i);
  for (const o of order) {
    if (left <= 0) break;
    fl[o.i]!++;
    left--;
  }
  return fl;
}

/** How many of the largest VCs (by nominal) get SLA class CRITICAL in the governed queues file. */
export const PHILLY_CRITICAL_VCS = 3;

/**
 * Governance fields for the Philly queues (the trace has none; this is our mapping, documented in
 * docs/simulator.md): every VC runs TRAINING; the PHILLY_CRITICAL_VCS VCs with the largest nominal
 * (ties by name) are CRITICAL (→ guaranteed: lends half its idle share statically, never borrows),
 * a VC with nominal 0 is BEST_EFFORT (→ best-effort), the rest STANDARD (→ elastic).
 */
export function governedPhilly<Q extends { name: string; tenant: string }>(
  queues: Q[],
  nominal: ReadonlyMap<string, number>,
): (Q & { workloadType: string; slaClass: string })[] {
  const nom = (q: Q): number => nominal.get(q.tenant) ?? 0;
  const critical = new Set(
    [...queues]
      .filter((q) => nom(q) > 0)
      .sort((a, b) => nom(b) - nom(a) || (a.name < b.name ? -1 : 1))
      .slice(0, PHILLY_CRITICAL_VCS)
      .map((q) => q.name),
  );
  return queues.map((q) => ({
    ...q,
    workloadType: 'TRAINING',
    slaClass: critical.has(q.name) ? 'CRITICAL' : nom(q) === 0 ? 'BEST_EFFORT' : 'STANDARD',
  }));
}

export function convertPhilly(o: PhillyOptions): PhillyResult {
  const per = o.gpusPerNode ?? 8;
  const gpus = o.gpus ?? 768;
  if (gpus % per !== 0 || gpus <= 0) throw new Error(`--gpus ${gpus} must be a positive multiple of ${per}`);
  const nodes = gpus / per;
  const traceFile = o.traceFile ?? join(o.dir, 'philly-2017-09-10.csv');
  const vcFile = o.vcFile ?? join(o.dir, 'philly-vc-nodes.csv');

  const vcT = parseCsvTable(readFileSync(vcFile, 'utf8'), vcFile);
  const vcCols = new Columns(vcT.header, vcFile, 1, ['vc', 'node num']);
  const vcNodes = new Map<string, number>();
  for (const r of vcT.rows) {
    const vc = vcCols.required(r, 'vc');
    if (vcNodes.has(vc)) throw new CsvError(vcFile, r.line, `duplicate VC '${vc}'`);
    vcNodes.set(vc, vcCols.number(r, 'node num', { min: 0, integer: true }));
  }

  const tT = parseCsvTable(readFileSync(traceFile, 'utf8'), traceFile);
  const tc = new Columns(tT.header, traceFile, 1, ['timestamp', 'duration', 'num_gpus', 'cluster']);
  const rows: string[] = ['id,submit_time,duration_s,tenant,gpus,pods'];
  const jobsPerVc = new Map<string, number>();
  const frac = o.fractional ?? 0;
  if (!(frac >= 0 && frac <= 1)) throw new Error(`fractional probability ${frac} must be within 0…1`);
  const rng = new Prng(o.seed ?? 1);
  let fractionalJobs = 0;
  for (const r of tT.rows) {
    const ts = tc.required(r, 'timestamp');
    if (!/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/.test(ts))
      throw new CsvError(traceFile, r.line, `timestamp '${ts}' is not YYYY-MM-DD HH:MM:SS`);
    const dur = tc.number(r, 'duration', { min: 0 });
    const n = tc.number(r, 'num_gpus', { min: 1, integer: true });
    const vc = tc.required(r, 'cluster');
    const p: { pods: number; gpus: number } = podsFor(n, per);
    if (frac > 0 && n === 1) {
      // draw for every 1-GPU job (not only the chosen ones) so the sample is stable
      const u = rng.next();
      const k = 1 + rng.int(9);
      if (u < frac) {
        p.gpus = k / 10;
        fractionalJobs++;
      }
    }
    jobsPerVc.set(vc, (jobsPerVc.get(vc) ?? 0) + 1);
    rows.push(
      [
        `philly-${r.line}`,
        `${ts.replace(' ', 'T')}Z`,
        String(dur),
        csvCell(vc),
        String(p.gpus),
        String(p.pods),
      ].join(','),
    );
  }

  const vcs = [...new Set([...vcNodes.keys(), ...jobsPerVc.keys()])].sort();
  const sumNodes = [...vcNodes.values()].reduce((s, x) => s + x, 0);
  const tableVcs = vcs.filter((v) => vcNodes.has(v));
  const nominal = new Map<string, number>();
  if ((o.quota ?? 'scaled') === 'raw') {
    for (const v of tableVcs) nominal.set(v, vcNodes.get(v)! * per);
  } else {
    const shares = tableVcs.map((v) => (vcNodes.get(v)! / sumNodes) * gpus);
    largestRemainder(shares, gpus).forEach((q, i) => nominal.set(tableVcs[i]!, q));
  }
  const queues = {
    cohorts: [{ name: 'philly' }],
    queues: vcs.map((v) => ({
      name: `vc-${v}`,
      tenant: v,
      cohort: 'philly',
      weight: 1,
      quotas: { [PHILLY_FLAVOR]: { gpu: { nominal: nominal.get(v) ?? 0 } } },
    })),
  };
  mkdirSync(o.outDir, { recursive: true });
  const traceOut = join(
    o.outDir,
    frac > 0 ? `philly-trace-frac${frac}-seed${o.seed ?? 1}.csv` : 'philly-trace.csv',
  );
  const clusterOut = join(o.outDir, `philly-cluster-${gpus}.csv`);
  const queuesOut = join(o.outDir, `philly-queues-${gpus}${o.quota === 'raw' ? '-raw' : ''}.json`);
  writeFileSync(traceOut, `${rows.join('\n')}\n`);
  writeFileSync(
    clusterOut,
    `name,pool,gpu_type,gpus,cpu_milli,memory_mib,count\nphilly,default,${PHILLY_FLAVOR},${per},${o.nodeCpuMilli ?? 64000},${o.nodeMemoryMib ?? 512 * 1024},${nodes}\n`,
  );
  writeFileSync(queuesOut, `${JSON.stringify(queues, null, 2)}\n`);
  const governedOut = queuesOut.replace(/\.json$/, '-governed.json');
  writeFileSync(
    governedOut,
    `${JSON.stringify({ ...queues, queues: governedPhilly(queues.queues, nominal) }, null, 2)}\n`,
  );
  return {
    trace: traceOut,
    cluster: clusterOut,
    queues: queuesOut,
    governedQueues: governedOut,
    jobs: rows.length - 1,
    fractionalJobs,
    tenants: vcs.map((v) => ({
      vc: v,
      nodes: vcNodes.get(v) ?? null,
      nominalGpus: nominal.get(v) ?? 0,
      jobs: jobsPerVc.get(v) ?? 0,
    })),
  };
}
