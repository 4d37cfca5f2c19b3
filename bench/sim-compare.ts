// The simulator's Philly replays, this tree's core beside an earlier one (another checkout), as
// side-by-side Markdown tables with the scheduling-quality targets checked: what moved is visible at a
// glance.
//
//   npm run bench:sim-compare -- --base /path/to/old-checkout [--gpus 768,512,416] [--jobs 2]
//                                [--placement best-fit] [--out DIR] [--write bench/RESULTS-simulator.md]
//   --reuse: only make the tables again from the reports already in --out
//
// Each checkout converts the trace with its own converter and runs its own simulator (so a
// report format that moved does not matter), fairway, static and fifo per size. The old
// checkout needs its node_modules (a symlink to this one's is fine).
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { fmtDuration } from '../src/simulator/report.js';
import { writeResultsSection } from './results-section.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

const { values: flags } = parseArgs({
  options: {
    base: { type: 'string' },
    gpus: { type: 'string', default: '768,512,416' },
    placement: { type: 'string', default: 'best-fit' },
    jobs: { type: 'string', default: String(Math.max(1, availableParallelism())) },
    out: { type: 'string', default: join(root, 'sim-out', 'compare') },
    'philly-dir': {
      type: 'string',
      default: process.env.FAIRWAY_PHILLY_DIR ?? join(root, '..', 'shared', 'traces', 'philly'),
    },
    write: { type: 'string' },
    /** Make the tables from the reports already in --out (no conversion, no replay). */
    reuse: { type: 'boolean', default: false },
  },
});
if (!flags.base) throw new Error('--base DIR (a checkout of the earlier core) is required');
const sizes = flags.gpus.split(',').map(Number);
const POLICIES = ['fairway', 'static', 'fifo'] as const;
type Policy = (typeof POLICIES)[number];
const trees = { before: resolve(flags.base), now: root };
type Tree = keyof typeof trees;

function cli(tree: Tree, args: string[]): Promise<void> {
  return new Promise((ok, fail) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', join(trees[tree], 'src', 'cli', 'fairway.ts'), ...args],
      {
        cwd: trees[tree],
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    let err = '';
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('exit', (code) =>
      code === 0 ? ok() : fail(new Error(`${tree}: fairway ${args.join(' ')} exited ${code}\n${err}`)),
    );
  });
}

async function pool<T>(tasks: (() => Promise<T>)[], width: number): Promise<T[]> {
  const out: T[] = [];
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const i = next++;
      out[i] = await tasks[i]!();
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, tasks.length) }, worker));
  return out;
}

interface Run {
  allocationRatio: number;
  usefulAllocationRatio: number;
  capacityGpus: number;
  window: { hours: number };
  waitSeconds: { p50: number | null; p99: number | null };
  sla: { attainment: number | null };
  jainIndex: number | null;
  preemptions: { count: number; gpuHoursLost: number };
}

const dir = (tree: Tree, gpus?: number): string =>
  join(flags.out, tree, gpus === undefined ? '' : `p${gpus}`);
const started = Date.now();
const convert: (() => Promise<void>)[] = [];
const simulate: (() => Promise<void>)[] = [];
for (const tree of Object.keys(trees) as Tree[]) {
  mkdirSync(dir(tree), { recursive: true });
  for (const g of sizes) {
    convert.push(() =>
      cli(tree, [
        'convert-philly',
        '--philly-dir',
        flags['philly-dir'],
        '--out',
        join(dir(tree), 'philly'),
        '--gpus',
        String(g),
      ]),
    );
    for (const policy of POLICIES) {
      const p = join(dir(tree), 'philly');
      simulate.push(() =>
        cli(tree, [
          'simulate',
          '--trace',
          join(p, 'philly-trace.csv'),
          '--cluster',
          join(p, `philly-cluster-${g}.csv`),
          '--queues',
          join(p, `philly-queues-${g}.json`),
          '--policy',
          policy,
          '--placement',
          flags.placement,
          '--out',
          dir(tree, g),
          '--name',
          policy,
        ]),
      );
    }
  }
}
const width = Number(flags.jobs);
if (!flags.reuse) {
  // Conversions of one tree share an output folder: run them one at a time per tree.
  await Promise.all(
    (Object.keys(trees) as Tree[]).map(async (_t, i) => {
      for (const task of convert.slice(i * sizes.length, (i + 1) * sizes.length)) await task();
    }),
  );
  await pool(simulate, width);
}

const read = (tree: Tree, g: number, policy: Policy): Run =>
  (JSON.parse(readFileSync(join(dir(tree, g), `${policy}.json`), 'utf8')) as { runs: Run[] }).runs[0]!;

const pct = (x: number | null, digits = 1): string => (x === null ? '-' : `${(x * 100).toFixed(digits)}%`);
/** GPU-hours held during the window: what "delivered" means in the lost-work target. */
const delivered = (r: Run): number => r.allocationRatio * r.capacityGpus * r.window.hours;
const lostShare = (r: Run): number => (delivered(r) > 0 ? r.preemptions.gpuHoursLost / delivered(r) : 0);
const pair = (a: string, b: string): string => (a === b ? b : `${a} → **${b}**`);
const mark = (ok: boolean): string => (ok ? 'yes' : '**no**');

const lines: string[] = [];
const head = [
  'GPUs',
  'policy',
  'allocation',
  'useful allocation',
  'SLA',
  'Jain',
  'wait p50',
  'wait p99',
  'preemptions',
  'GPU-h lost (% of held)',
];
lines.push(`| ${head.join(' | ')} |`, `| ${head.map((_, i) => (i < 2 ? '---' : '---:')).join(' | ')} |`);
const checks: string[] = [];
for (const g of sizes) {
  for (const policy of POLICIES) {
    const a = read('before', g, policy);
    const b = read('now', g, policy);
    const lost = (r: Run): string =>
      `${Math.round(r.preemptions.gpuHoursLost).toLocaleString('en-US')} (${pct(lostShare(r))})`;
    lines.push(
      `| ${g} | ${policy} | ${[
        pair(pct(a.allocationRatio), pct(b.allocationRatio)),
        pair(pct(a.usefulAllocationRatio), pct(b.usefulAllocationRatio)),
        pair(pct(a.sla.attainment), pct(b.sla.attainment)),
        pair(a.jainIndex?.toFixed(3) ?? '-', b.jainIndex?.toFixed(3) ?? '-'),
        pair(fmtDuration(a.waitSeconds.p50), fmtDuration(b.waitSeconds.p50)),
        pair(fmtDuration(a.waitSeconds.p99), fmtDuration(b.waitSeconds.p99)),
        pair(String(a.preemptions.count), String(b.preemptions.count)),
        pair(lost(a), lost(b)),
      ].join(' | ')} |`,
    );
  }
  const fw = read('now', g, 'fairway');
  const fifo = read('now', g, 'fifo');
  const stat = read('now', g, 'static');
  const p99 = fw.waitSeconds.p99 ?? Infinity;
  const t: [string, boolean][] = [
    [
      `useful allocation ≥ fifo's (${pct(fw.usefulAllocationRatio, 2)} vs ${pct(fifo.usefulAllocationRatio, 2)})`,
      fw.usefulAllocationRatio >= fifo.usefulAllocationRatio,
    ],
    [
      `p99 wait ≤ fifo's (${fmtDuration(fw.waitSeconds.p99)} vs ${fmtDuration(fifo.waitSeconds.p99)})`,
      p99 <= (fifo.waitSeconds.p99 ?? Infinity),
    ],
  ];
  if (g === 768) {
    t.push(
      [`GPU-h lost ≤ 2% of held (${pct(lostShare(fw))})`, lostShare(fw) <= 0.02],
      [`SLA ≥ 99.5% (${pct(fw.sla.attainment)})`, (fw.sla.attainment ?? 0) >= 0.995],
      [`Jain ≥ 0.97 (${fw.jainIndex?.toFixed(3)})`, (fw.jainIndex ?? 0) >= 0.97],
      [
        `p99 wait ≤ 1/5 of static's (${fmtDuration(fw.waitSeconds.p99)} vs ${fmtDuration(stat.waitSeconds.p99)})`,
        p99 * 5 <= (stat.waitSeconds.p99 ?? Infinity),
      ],
    );
  } else {
    t.push([`SLA ≥ 99% (${pct(fw.sla.attainment)})`, (fw.sla.attainment ?? 0) >= 0.99]);
  }
  checks.push(`| ${g} | ${t.map(([what, ok]) => `${what}: ${mark(ok)}`).join('<br>')} |`);
}

const table = [
  `Before = \`${trees.before}\`, now = this tree; placement ${flags.placement}; cells read "before → **now**" where they differ.`,
  '',
  ...lines,
  '',
  'Issue 15 targets (fairway, now):',
  '',
  '| GPUs | targets |',
  '| --- | --- |',
  ...checks,
].join('\n');
console.log(table);
if (!flags.reuse)
  console.log(
    `\n(${sizes.length * POLICIES.length * 2} replays in ${Math.round((Date.now() - started) / 1000)} s)`,
  );
if (flags.write) {
  writeResultsSection(
    resolve(flags.write),
    '<!-- sim-compare:start -->',
    '<!-- sim-compare:end -->',
    `<!-- sim-compare:start -->\n${table}\n<!-- sim-compare:end -->`,
  );
}
