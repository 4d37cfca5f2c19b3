// `npm run simulate:inference`: the Philly training trace with seeded inference services on top,
// under the three strategies, for several seeds (docs/simulator-inference.md). The runs are spread
// over worker threads (each loads the trace once); the report does not depend on their order.
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { totalGpus } from '../cluster.js';
import { checkPhillyDir, convertPhilly } from '../philly.js';
import { loadInput } from '../run.js';
import { parseIsoMs } from '../trace.js';
import { type InferenceRun, runInference } from './replay.js';
import { type ComparisonReport, jsonReport, markdownReport } from './report.js';
import { DEFAULT_STEPS, generateServices, type SignalChoice, type Steps } from './services.js';
import { STRATEGIES, type StrategyName } from './strategies.js';

const DAY = 86_400_000;
const DEFAULT_PHILLY_DIR = fileURLToPath(new URL('../../../../shared/traces/philly', import.meta.url));

export const HELP = `npm run simulate:inference -- [options]

  --seeds 1,2,3            service seeds (each draws its services; same trace for all)
  --services 4             services per seed
  --start 2017-10-02       when the services start (UTC); training replays from the trace's start
  --days 14                days from --start (the run ends there)
  --tune-days 2            the first days of those: the tuning part; the rest is held out
  --interval-s 60          between two decisions of a service's controller (whole minutes)
  --strategies coordinated,independent,static
  --signal p95             p95, in-flight, or mixed (the two alternately)
  --down-step ${DEFAULT_STEPS.down}            coordinated: most replicas removed by one decision
  --up-step ${DEFAULT_STEPS.up}              coordinated: most replicas added by one decision
  --up-window-s 0          coordinated: scale-up stabilization (the HPA's default 0)
  --philly-dir DIR         the Philly files (default ../shared/traces/philly beside the repository)
  --gpus 768               training GPUs (the converted Philly cluster)
  --out FILE.md            default sim-out/inference/report.md (the JSON beside it)
  --jobs N                 worker threads (default: cores, at most 3)`;

export interface CliArgs {
  seeds: number[];
  services: number;
  startMs: number;
  days: number;
  tuneDays: number;
  intervalS: number;
  strategies: StrategyName[];
  signal: SignalChoice;
  steps: Steps;
  phillyDir: string;
  gpus: number;
  out: string;
  jobs: number;
}

const positiveInt = (name: string, v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n <= 0)
    throw new Error(`--${name} must be a positive whole number, got '${v}'`);
  return n;
};

const nonNegativeInt = (name: string, v: string): number => {
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) throw new Error(`--${name} must be a whole number ≥ 0, got '${v}'`);
  return n;
};

export function parseCliArgs(argv: string[]): CliArgs | 'help' {
  const { values } = parseArgs({
    args: argv,
    strict: true,
    options: {
      seeds: { type: 'string', default: '1,2,3' },
      services: { type: 'string', default: '4' },
      start: { type: 'string', default: '2017-10-02' },
      days: { type: 'string', default: '14' },
      'tune-days': { type: 'string', default: '2' },
      'interval-s': { type: 'string', default: '60' },
      strategies: { type: 'string', default: STRATEGIES.join(',') },
      signal: { type: 'string', default: 'p95' },
      'down-step': { type: 'string', default: String(DEFAULT_STEPS.down) },
      'up-step': { type: 'string', default: String(DEFAULT_STEPS.up) },
      'up-window-s': { type: 'string', default: '0' },
      'philly-dir': { type: 'string', default: DEFAULT_PHILLY_DIR },
      gpus: { type: 'string', default: '768' },
      out: { type: 'string', default: 'sim-out/inference/report.md' },
      jobs: { type: 'string', default: String(Math.min(3, availableParallelism())) },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) return 'help';
  const startMs = parseIsoMs(values.start);
  if (Number.isNaN(startMs) || startMs % 60_000 !== 0)
    throw new Error(`--start '${values.start}' must be a UTC date or time on a minute`);
  const strategies = values.strategies.split(',').map((s) => {
    if (!(STRATEGIES as readonly string[]).includes(s))
      throw new Error(`--strategies: '${s}' is not one of ${STRATEGIES.join(', ')}`);
    return s as StrategyName;
  });
  const signals: Record<string, SignalChoice> = {
    mixed: 'mixed',
    p95: 'P95_LATENCY_MS',
    'in-flight': 'IN_FLIGHT',
  };
  const signal = signals[values.signal];
  if (!signal) throw new Error(`--signal must be mixed, p95 or in-flight, got '${values.signal}'`);
  const intervalS = positiveInt('interval-s', values['interval-s']);
  if (intervalS % 60 !== 0)
    throw new Error(`--interval-s must be a whole number of minutes, got '${intervalS}'`);
  const days = positiveInt('days', values.days);
  const tuneDays = Number(values['tune-days']);
  if (!Number.isInteger(tuneDays) || tuneDays < 0 || tuneDays >= days)
    throw new Error(`--tune-days must be a whole number from 0 to --days − 1, got '${values['tune-days']}'`);
  return {
    seeds: values.seeds.split(',').map((s) => positiveInt('seeds', s)),
    services: positiveInt('services', values.services),
    startMs,
    days,
    tuneDays,
    intervalS,
    strategies,
    signal,
    steps: {
      up: positiveInt('up-step', values['up-step']),
      down: positiveInt('down-step', values['down-step']),
      upWindowMs: nonNegativeInt('up-window-s', values['up-window-s']) * 1000,
    },
    phillyDir: values['philly-dir'],
    gpus: positiveInt('gpus', values.gpus),
    out: values.out,
    jobs: positiveInt('jobs', values.jobs),
  };
}

interface Files {
  trace: string;
  cluster: string;
  queues: string;
}
interface Task {
  seed: number;
  strategy: StrategyName;
}

/** Converts the Philly files once into sim-out (git-ignored); later runs reuse them. */
function phillyFiles(a: CliArgs): Files {
  const outDir = join('sim-out', 'inference', `philly-${a.gpus}`);
  const files = {
    trace: join(outDir, 'philly-trace.csv'),
    cluster: join(outDir, `philly-cluster-${a.gpus}.csv`),
    queues: join(outDir, `philly-queues-${a.gpus}.json`),
  };
  if (!Object.values(files).every((f) => existsSync(f))) {
    checkPhillyDir(a.phillyDir, '--philly-dir', '../shared/traces/philly next to the repository');
    convertPhilly({ dir: a.phillyDir, outDir, gpus: a.gpus });
  }
  return files;
}

function runTask(input: ReturnType<typeof loadInput>, a: CliArgs, t: Task): InferenceRun {
  return runInference(input, {
    strategy: t.strategy,
    services: generateServices(t.seed, a.services, a.signal),
    startMs: a.startMs,
    heldOutFromMs: a.startMs + a.tuneDays * DAY,
    endMs: a.startMs + a.days * DAY,
    intervalMs: a.intervalS * 1000,
    steps: a.steps,
  });
}

/** Runs the tasks on `jobs` worker threads (this file, as a worker); results in task order. */
async function runAll(files: Files, a: CliArgs, tasks: Task[]): Promise<InferenceRun[]> {
  const results: InferenceRun[] = new Array(tasks.length);
  let next = 0;
  const workers = Array.from({ length: Math.min(a.jobs, tasks.length) }, () => {
    // A worker does not inherit tsx's loader: it registers it, then imports this file.
    const boot = `import(${JSON.stringify(import.meta.resolve('tsx/esm/api'))}).then((m) => { m.register(); return import(${JSON.stringify(import.meta.url)}); });`;
    const w = new Worker(boot, { eval: true, workerData: { files, args: a } });
    return new Promise<void>((resolve, reject) => {
      const send = () => {
        if (next >= tasks.length) {
          void w.terminate().then(() => resolve());
          return;
        }
        const i = next++;
        w.postMessage({ i, task: tasks[i] });
      };
      w.on('message', (m: { i: number; run: InferenceRun; ms: number }) => {
        results[m.i] = m.run;
        const t = tasks[m.i]!;
        process.stderr.write(`${t.strategy} seed ${t.seed}: ${(m.ms / 1000).toFixed(1)} s\n`);
        send();
      });
      w.on('error', reject);
      send();
    });
  });
  await Promise.all(workers);
  return results;
}

function worker(): void {
  const { files, args } = workerData as { files: Files; args: CliArgs };
  const input = loadInput(files);
  parentPort!.on('message', (m: { i: number; task: Task }) => {
    const t0 = performance.now();
    const run = runTask(input, args, m.task);
    parentPort!.postMessage({ i: m.i, run, ms: performance.now() - t0 });
  });
}

function commit(): string {
  try {
    return execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

async function main(argv: string[]): Promise<number> {
  let a: CliArgs | 'help';
  try {
    a = parseCliArgs(argv);
  } catch (e) {
    process.stderr.write(`${(e as Error).message}\n\n${HELP}\n`);
    return 2;
  }
  if (a === 'help') {
    process.stdout.write(`${HELP}\n`);
    return 0;
  }
  const t0 = performance.now();
  const files = phillyFiles(a);
  const training = loadInput(files);
  const tasks = a.seeds.flatMap((seed) => a.strategies.map((strategy) => ({ seed, strategy })));
  const runs = await runAll(files, a, tasks);
  const report: ComparisonReport = {
    format: 'fairway-inference-comparison/1',
    command:
      argv.length > 0 ? `npm run simulate:inference -- ${argv.join(' ')}` : 'npm run simulate:inference',
    commit: commit(),
    trace: {
      name: 'philly-trace.csv',
      jobs: training.trace.length,
      trainingGpus: totalGpus(training.cluster),
    },
    window: {
      start: new Date(a.startMs).toISOString(),
      tuningDays: a.tuneDays,
      heldOutDays: a.days - a.tuneDays,
      intervalS: a.intervalS,
    },
    knobs: {
      signal: a.signal,
      upStep: a.steps.up,
      downStep: a.steps.down,
      upWindowS: a.steps.upWindowMs / 1000,
      servicesPerSeed: a.services,
    },
    seeds: a.seeds.map((seed) => ({
      seed,
      services: generateServices(seed, a.services, a.signal),
      runs: runs.filter((_, i) => tasks[i]!.seed === seed),
    })),
  };
  const md = markdownReport(report);
  process.stdout.write(md);
  mkdirSync(dirname(a.out), { recursive: true });
  writeFileSync(a.out, md);
  const json = `${a.out.replace(/\.md$/, '')}.json`;
  writeFileSync(json, jsonReport(report));
  process.stderr.write(`wrote ${a.out} and ${json} in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`);
  return 0;
}

if (!isMainThread) worker();
else if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1]))
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (e) => {
      process.stderr.write(`${(e as Error).stack ?? e}\n`);
      process.exitCode = 1;
    },
  );
