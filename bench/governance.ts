// Governance on the Philly trace: static settings, today's fairway, fairway with the queues' isolation
// policies at their static coefficients (governed), the two-level controller, and idle reclaim — at
// 768 and 512 GPUs, with the issue's targets checked.
//
//   npm run bench:governance -- [--gpus 768,512] [--jobs 2] [--seed 1] [--out DIR] [--write
// bench/RESULTS-simulator.md]
//   --reuse: only make the table again from the results already in --out
//
// Each run is a child process (at most --jobs at a time) that replays in-process and reports its
// own CPU time beside the wall time. Besides the report's figures it keeps the GPU-time left free
// while some job was pending (the fragmentation integral's denominator): allocation + that is what
// allocation could have been with every free GPU used while anything waited.
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { computeReplayMetrics, type ReplayMetrics } from '../src/simulator/metrics.js';
import { convertPhilly } from '../src/simulator/philly.js';
import { runReplay } from '../src/simulator/replay.js';
import { fmtDuration } from '../src/simulator/report.js';
import { governanceFor, loadInput } from '../src/simulator/run.js';
import type { PolicyName } from '../src/simulator/scheduling-policies.js';
import { writeResultsSection } from './results-section.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values: flags } = parseArgs({
  options: {
    gpus: { type: 'string', default: '768,512' },
    jobs: { type: 'string', default: '2' },
    seed: { type: 'string', default: '1' },
    out: { type: 'string', default: join(root, 'sim-out', 'governance') },
    'philly-dir': {
      type: 'string',
      default: process.env.FAIRWAY_PHILLY_DIR ?? join(root, '..', 'shared', 'traces', 'philly'),
    },
    write: { type: 'string' },
    reuse: { type: 'boolean', default: false },
    /** Internal: run one variant (JSON) and write its result file. */
    child: { type: 'string' },
  },
});

interface Variant {
  name: string;
  policy: PolicyName;
  idleReclaim: boolean;
}
const VARIANTS: Variant[] = [
  { name: 'static', policy: 'static', idleReclaim: false },
  { name: 'fairway', policy: 'fairway', idleReclaim: false },
  { name: 'governed', policy: 'governed', idleReclaim: false },
  { name: 'governed + idle reclaim', policy: 'governed', idleReclaim: true },
  { name: 'controller', policy: 'controller', idleReclaim: false },
  { name: 'controller + idle reclaim', policy: 'controller', idleReclaim: true },
];
const slug = (v: Variant): string => `${v.policy}${v.idleReclaim ? '-idle' : ''}`;

interface Result {
  gpus: number;
  variant: string;
  metrics: ReplayMetrics;
  /** ∫ free GPUs dt while some job was pending, inside the window / (capacity × window). */
  freeWhilePending: number;
  wallS: number;
  cpuS: number;
}

const dataDir = join(flags.out, 'philly');
const resultFile = (g: number, v: Variant): string => join(flags.out, `p${g}-${slug(v)}.json`);

if (flags.child) {
  const { gpus, variant } = JSON.parse(flags.child) as { gpus: number; variant: Variant };
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  const files = {
    trace: join(dataDir, 'philly-trace.csv'),
    cluster: join(dataDir, `philly-cluster-${gpus}.csv`),
    queues: join(dataDir, `philly-queues-${gpus}-governed.json`),
  };
  const input = loadInput(files);
  const options = {
    ...files,
    policies: [variant.policy],
    placements: ['best-fit' as const],
    mode: 'replay' as const,
    seed: Number(flags.seed),
    probes: true,
    idleReclaim: variant.idleReclaim,
  };
  const governance = governanceFor(options, variant.policy);
  const out = runReplay(input, {
    policy: variant.policy,
    placement: 'best-fit',
    preview: false,
    ...(governance ? { governance } : {}),
  });
  const metrics = computeReplayMetrics(out);
  const cpu = process.cpuUsage(c0);
  const span = Math.max(1, out.windowEnd - out.windowStart);
  const r: Result = {
    gpus,
    variant: variant.name,
    metrics,
    freeWhilePending: out.frag.freeGpuMs / (out.capacityGpus * span),
    wallS: (performance.now() - t0) / 1000,
    cpuS: (cpu.user + cpu.system) / 1e6,
  };
  writeFileSync(resultFile(gpus, variant), JSON.stringify(r));
  process.exit(0);
}

const sizes = flags.gpus.split(',').map(Number);
const started = Date.now();
if (!flags.reuse) {
  mkdirSync(flags.out, { recursive: true });
  for (const g of sizes) convertPhilly({ dir: flags['philly-dir'], outDir: dataDir, gpus: g });
  const tasks = sizes.flatMap((gpus) => VARIANTS.map((variant) => ({ gpus, variant })));
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < tasks.length) {
      const t = tasks[next++]!;
      await new Promise<void>((ok, fail) => {
        const child = spawn(
          process.execPath,
          [
            '--import',
            'tsx',
            fileURLToPath(import.meta.url),
            '--child',
            JSON.stringify(t),
            '--out',
            flags.out,
            '--seed',
            flags.seed,
          ],
          { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] },
        );
        let err = '';
        child.stderr.on('data', (d: Buffer) => (err += d.toString()));
        child.on('exit', (code) =>
          code === 0 ? ok() : fail(new Error(`${t.gpus} ${t.variant.name} exited ${code}\n${err}`)),
        );
      });
      process.stderr.write(
        `  ${t.gpus} GPUs, ${t.variant.name} (${Math.round((Date.now() - started) / 1000)} s)\n`,
      );
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Number(flags.jobs)) }, worker));
}

const read = (g: number, v: Variant): Result => JSON.parse(readFileSync(resultFile(g, v), 'utf8')) as Result;
const pct = (x: number | null | undefined, d = 1): string =>
  x === null || x === undefined ? '-' : `${(x * 100).toFixed(d)}%`;
const mark = (ok: boolean): string => (ok ? 'yes' : '**no**');

const head = [
  'GPUs',
  'run',
  'SLA',
  'allocation',
  'useful allocation',
  'utilization',
  'free while pending',
  'p99 wait',
  'preemptions',
  'GPU-h lost',
  'idle flags / reclaimed',
  'idle GPU-h reclaimed',
  'adjustments',
  'CPU s',
  'wall s',
];
const lines = [`| ${head.join(' | ')} |`, `| ${head.map((_, i) => (i < 2 ? '---' : '---:')).join(' | ')} |`];
const checks: string[] = [];
for (const g of sizes) {
  const rs = new Map(VARIANTS.map((v) => [v.name, read(g, v)]));
  for (const v of VARIANTS) {
    const r = rs.get(v.name)!;
    const m = r.metrics;
    const gv = m.governance;
    lines.push(
      `| ${[
        g,
        v.name,
        pct(m.sla.attainment, 2),
        pct(m.allocationRatio, 2),
        pct(m.usefulAllocationRatio, 2),
        pct(gv?.utilization, 2),
        pct(r.freeWhilePending, 2),
        fmtDuration(m.waitSeconds.p99),
        m.preemptions.count,
        Math.round(m.preemptions.gpuHoursLost).toLocaleString('en-US'),
        gv?.idleReclaim ? `${gv.idle.flagged} / ${gv.idle.reclaimed}` : '-',
        gv?.idleReclaim ? Math.round(gv.idle.gpuHoursFreed).toLocaleString('en-US') : '-',
        gv?.controller
          ? `${gv.adjustments} (${
              Object.entries(gv.adjustmentsByReason)
                .filter(([, n]) => n > 0)
                .map(([k, n]) => `${k} ${n}`)
                .join(', ') || 'none'
            })`
          : '-',
        r.cpuS.toFixed(0),
        r.wallS.toFixed(0),
      ].join(' | ')} |`,
    );
  }
  const sla = (n: string): number => rs.get(n)!.metrics.sla.attainment ?? 0;
  const alloc = (n: string): number => rs.get(n)!.metrics.allocationRatio;
  const util = (n: string): number => rs.get(n)!.metrics.governance?.utilization ?? 0;
  const t: string[] = [];
  if (g === 512) {
    const best = VARIANTS.filter((v) => sla(v.name) >= 0.995).sort(
      (a, b) => alloc(b.name) - alloc(a.name),
    )[0];
    t.push(
      `512: SLA ≥ 99.5% and allocation > 68.5% in the same run (best such run: ${best ? `${best.name}, ${pct(sla(best.name), 2)} and ${pct(alloc(best.name), 2)}` : 'none'}): ${mark(!!best && alloc(best.name) > 0.685)}`,
    );
    const f = rs.get('fairway')!;
    t.push(
      `bound: fairway's allocation + GPU-time free while jobs were pending = ${pct(f.metrics.allocationRatio + f.freeWhilePending, 2)} (of which ${pct(f.metrics.preemptions.gpuHoursLost / (f.metrics.capacityGpus * f.metrics.window.hours), 2)} was work later thrown away)`,
    );
  }
  for (const c of ['controller', 'controller + idle reclaim']) {
    const base = c === 'controller' ? 'governed' : 'governed + idle reclaim';
    t.push(
      `${c} ≥ ${base} on SLA (${pct(sla(c), 2)} vs ${pct(sla(base), 2)}) and allocation (${pct(alloc(c), 2)} vs ${pct(alloc(base), 2)}): ${mark(sla(c) >= sla(base) && alloc(c) >= alloc(base))}`,
    );
  }
  for (const [on, off] of [
    ['governed + idle reclaim', 'governed'],
    ['controller + idle reclaim', 'controller'],
  ] as const) {
    t.push(
      `idle reclaim raises utilization without lowering SLA, ${off}: utilization ${pct(util(off), 2)} → ${pct(util(on), 2)}, SLA ${pct(sla(off), 2)} → ${pct(sla(on), 2)}: ${mark(util(on) > util(off) && sla(on) >= sla(off))}`,
    );
  }
  checks.push(`| ${g} | ${t.join('<br>')} |`);
}
const cmd = `npm run bench:governance -- --gpus ${flags.gpus} --jobs ${flags.jobs} --seed ${flags.seed}`;
const table = [
  `Philly Sep–Oct, best-fit, queues \`philly-queues-<GPUs>-governed.json\` (docs/simulator.md, "Governance"), workload seed ${flags.seed}, no preview; \`${cmd}\`.`,
  '',
  ...lines,
  '',
  'Issue 16 targets:',
  '',
  '| GPUs | targets |',
  '| --- | --- |',
  ...checks,
].join('\n');
console.log(table);
if (!flags.reuse)
  console.log(
    `\n(${sizes.length * VARIANTS.length} replays in ${Math.round((Date.now() - started) / 1000)} s)`,
  );
if (flags.write)
  writeResultsSection(
    resolve(flags.write),
    '<!-- governance:start -->',
    '<!-- governance:end -->',
    `<!-- governance:start -->\n${table}\n<!-- governance:end -->`,
  );
