// The simulator's golden results: the JSON and Markdown reports of the runs in
// bench/RESULTS-simulator.md (Philly 768 and 640 GPUs, every policy, both placements, the ETA
// replay and the fill runs, plus the bundled fixtures), hashed. A refactor of the core or the
// simulator must give byte-identical reports; a change that alters results re-records on purpose.
//
//   npm run check:sim-golden              all runs, compare with hashes.json (~10 min on 2 CPUs)
//   npm run check:sim-golden -- --quick   a subset (one replay, one fill, the fixtures; ~2 min)
//   npm run check:sim-golden -- --record  write hashes.json from this tree
//   --jobs N (default: CPUs) runs at a time; --keep keeps the output folder;
//   --philly-dir DIR (default ../shared/traces/philly beside the checkout)
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const hashesFile = join(root, 'bench', 'sim-golden', 'hashes.json');

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    record: { type: 'boolean', default: false },
    keep: { type: 'boolean', default: false },
    jobs: { type: 'string', default: String(Math.max(1, availableParallelism())) },
    'philly-dir': { type: 'string', default: join(root, '..', 'shared', 'traces', 'philly') },
  },
});

const out = mkdtempSync(join(tmpdir(), 'fw-golden-'));
const philly = join(out, 'philly');
const fixtures = join(root, 'test', 'simulator', 'fixtures');

interface Run {
  name: string;
  args: string[];
  /** files (relative to `out`) whose bytes are the result */
  files: string[];
  quick?: boolean;
}

const convert = (gpus: number, extra: string[] = []): string[] => [
  'convert-philly',
  '--philly-dir',
  flags['philly-dir'],
  '--out',
  philly,
  '--gpus',
  String(gpus),
  ...extra,
];

// Conversions first (the runs read their files), then the runs.
const conversions: Run[] = [
  {
    name: 'convert-768',
    args: convert(768),
    files: ['philly/philly-trace.csv', 'philly/philly-cluster-768.csv', 'philly/philly-queues-768.json'],
    quick: true,
  },
  {
    name: 'convert-640',
    args: convert(640),
    files: ['philly/philly-cluster-640.csv', 'philly/philly-queues-640.json'],
  },
  {
    name: 'convert-frac',
    args: convert(768, ['--fractional', '0.5', '--seed', '1']),
    files: ['philly/philly-trace-frac0.5-seed1.csv'],
    quick: true,
  },
  {
    name: 'generate-hetero',
    args: ['generate-hetero', '--seed', '1', '--out', join(out, 'hetero')],
    files: [
      'hetero/hetero-trace.csv',
      'hetero/hetero-cluster.csv',
      'hetero/hetero-queues.json',
      'hetero/hetero-trace-merged.csv',
      'hetero/hetero-cluster-merged.csv',
      'hetero/hetero-queues-merged.json',
    ],
  },
];

const report = (name: string): string[] => [`reports/${name}.json`, `reports/${name}.md`];
const simulate = (name: string, args: string[], quick = false): Run => ({
  name,
  args: ['simulate', ...args, '--out', join(out, 'reports'), '--name', name],
  files: report(name),
  quick,
});

const runs: Run[] = [];
for (const gpus of [768, 640]) {
  for (const placement of ['best-fit', 'fragmentation-aware']) {
    for (const policy of ['fairway', 'static', 'fifo']) {
      runs.push(
        simulate(
          `replay-${gpus}-${placement}-${policy}`,
          [
            '--trace',
            join(philly, 'philly-trace.csv'),
            '--cluster',
            join(philly, `philly-cluster-${gpus}.csv`),
            '--queues',
            join(philly, `philly-queues-${gpus}.json`),
            '--policy',
            policy,
            '--placement',
            placement,
          ],
          gpus === 768 && placement === 'best-fit' && policy === 'fairway',
        ),
      );
    }
  }
}
for (const policy of ['fairway', 'static', 'fifo']) {
  runs.push(
    simulate(`replay-768-best-fit-${policy}-eta`, [
      '--trace',
      join(philly, 'philly-trace.csv'),
      '--cluster',
      join(philly, 'philly-cluster-768.csv'),
      '--queues',
      join(philly, 'philly-queues-768.json'),
      '--policy',
      policy,
      '--placement',
      'best-fit',
      '--eta',
    ]),
  );
}
const fillTraces: [string, string][] = [
  ['philly-trace-seed1', 'philly-trace.csv'],
  ['frac0.5-seed1', 'philly-trace-frac0.5-seed1.csv'],
  ['frac0.5-seed2', 'philly-trace-frac0.5-seed1.csv'],
  ['frac0.5-seed3', 'philly-trace-frac0.5-seed1.csv'],
];
for (const [label, trace] of fillTraces) {
  const seed = label.slice(-1);
  for (const policy of ['fairway', 'static', 'fifo']) {
    runs.push(
      simulate(
        `fill-768-${label}-${policy}`,
        [
          '--mode',
          'fill',
          '--seed',
          seed,
          '--trace',
          join(philly, trace),
          '--cluster',
          join(philly, 'philly-cluster-768.csv'),
          '--queues',
          join(philly, 'philly-queues-768.json'),
          '--policy',
          policy,
          '--placement',
          'best-fit,fragmentation-aware',
        ],
        label === 'frac0.5-seed1' && policy === 'fairway',
      ),
    );
  }
}
// The heterogeneous fill (several GPU models, one flavor each, and merged into one flavor).
for (const variant of ['', '-merged']) {
  const h = (f: string): string => join(out, 'hetero', `hetero-${f}${variant}`);
  runs.push(
    simulate(`fill-hetero${variant}-seed1`, [
      '--mode',
      'fill',
      '--seed',
      '1',
      '--trace',
      `${h('trace')}.csv`,
      '--cluster',
      `${h('cluster')}.csv`,
      '--queues',
      `${h('queues')}.json`,
      '--policy',
      'fairway',
      '--placement',
      'best-fit,fragmentation-aware',
    ]),
  );
}
// The bundled fixtures, including the YAML queues file (the Philly runs read JSON).
runs.push(
  simulate(
    'fixture-reclaim',
    [
      '--trace',
      join(fixtures, 'reclaim-trace.csv'),
      '--cluster',
      join(fixtures, 'reclaim-cluster.csv'),
      '--queues',
      join(fixtures, 'reclaim-queues.json'),
      '--window',
      'last-finish',
      '--eta',
    ],
    true,
  ),
  simulate(
    'fixture-fill-mixed',
    [
      '--mode',
      'fill',
      '--trace',
      join(fixtures, 'fill-trace-mixed.csv'),
      '--cluster',
      join(fixtures, 'fill-cluster.csv'),
      '--queues',
      join(fixtures, 'fill-queues.yaml'),
      '--placement',
      'best-fit,fragmentation-aware',
    ],
    true,
  ),
  simulate(
    'fixture-fill-3gpu',
    [
      '--mode',
      'fill',
      '--trace',
      join(fixtures, 'fill-trace-3gpu.csv'),
      '--cluster',
      join(fixtures, 'fill-cluster.csv'),
      '--queues',
      join(fixtures, 'fill-queues.yaml'),
    ],
    true,
  ),
  simulate(
    'fixture-window',
    [
      '--trace',
      join(fixtures, 'window-trace.csv'),
      '--cluster',
      join(fixtures, 'window-cluster.csv'),
      '--queues',
      join(fixtures, 'window-queues.json'),
      '--window',
      'last-finish',
      '--policy',
      'fairway,static,fifo',
    ],
    true,
  ),
);

const pick = (rs: Run[]): Run[] => (flags.quick ? rs.filter((r) => r.quick) : rs);

function run(r: Run): Promise<void> {
  return new Promise((ok, fail) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(root, 'src', 'cli', 'fairway.ts'), ...r.args],
      {
        cwd: root,
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) =>
      code === 0 ? ok() : fail(new Error(`${r.name} exited ${code}: ${err.slice(-2000)}`)),
    );
  });
}

async function pool(rs: Run[], n: number): Promise<void> {
  let next = 0;
  const started = Date.now();
  const worker = async (): Promise<void> => {
    while (next < rs.length) {
      const r = rs[next++]!;
      await run(r);
      process.stderr.write(`  ${r.name} (${Math.round((Date.now() - started) / 1000)} s)\n`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(n, rs.length) }, worker));
}

const sha256 = (file: string): string =>
  createHash('sha256')
    .update(readFileSync(join(out, file)))
    .digest('hex');

try {
  const jobs = Number(flags.jobs);
  await pool(pick(conversions).slice(0, 1), 1); // the others reuse its trace
  await pool(pick(conversions).slice(1), jobs);
  const selected = pick(runs);
  await pool(selected, jobs);
  const got: Record<string, string> = {};
  for (const r of [...pick(conversions), ...selected]) for (const f of r.files) got[f] = sha256(f);

  if (flags.record) {
    if (flags.quick) throw new Error('--record needs the full set (no --quick)');
    writeFileSync(hashesFile, `${JSON.stringify(got, null, 2)}\n`);
    console.log(`recorded ${Object.keys(got).length} hashes in ${hashesFile}`);
  } else {
    if (!existsSync(hashesFile)) throw new Error(`${hashesFile} is missing: run with --record first`);
    const want = JSON.parse(readFileSync(hashesFile, 'utf8')) as Record<string, string>;
    const differ = Object.keys(got).filter((f) => want[f] !== got[f]);
    for (const f of Object.keys(got))
      console.log(`${want[f] === got[f] ? 'same   ' : want[f] ? 'CHANGED' : 'NEW    '} ${f}`);
    if (differ.length > 0) {
      console.error(
        `\n${differ.length} of ${Object.keys(got).length} outputs differ from the golden results (outputs kept in ${out})`,
      );
      flags.keep = true;
      process.exitCode = 1;
    } else {
      console.log(
        `\nall ${Object.keys(got).length} outputs byte-identical to the golden results${flags.quick ? ' (quick subset)' : ''}`,
      );
    }
  }
} finally {
  if (!flags.keep) rmSync(out, { recursive: true, force: true });
  else console.error(`outputs in ${out}`);
}
