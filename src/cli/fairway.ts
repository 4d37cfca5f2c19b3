#!/usr/bin/env node
// The project CLI. Subcommands: simulate, convert-philly, generate-hetero, convert-openb. Flags by node:util
// parseArgs.
import { fileURLToPath } from 'node:url';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { writeHetero } from '../simulator/hetero-gen.js';
import { convertOpenb } from '../simulator/openb.js';
import { checkPhillyDir, convertPhilly, type PhillyDirSource } from '../simulator/philly.js';
import { barProgress, lineProgress, NO_PROGRESS, type ProgressDisplay } from '../simulator/progress.js';
import {
  type RunTiming,
  type SimulateOptions,
  simulate,
  terminalReport,
  writeReport,
} from '../simulator/run.js';
import {
  ALL_POLICIES,
  PLACEMENTS,
  type PlacementName,
  POLICIES,
  type PolicyName,
} from '../simulator/scheduling-policies.js';
import type { Io } from './io.js';
import { runTenantCommand, TENANT_COMMANDS, TENANT_HELP } from './tenant/index.js';

export class UsageError extends Error {}

const MAIN_HELP = `usage: fairway <command> [options]

commands:
  simulate         replay or fill a job trace through the scheduler core and report quality
  convert-philly   convert the Philly trace to the simulator's trace, cluster and queues files
  generate-hetero  write a seeded heterogeneous fill trace, cluster and queues (several GPU models)
  convert-openb    convert an Alibaba GPU trace (openb node and pod lists) to the same fill inputs
  help [command]   show help

${TENANT_HELP}

Run 'fairway <command> --help' for the options of a command.`;

const SIMULATE_HELP = `usage: fairway simulate --trace FILE --cluster FILE --queues FILE [options]

  --trace FILE         trace CSV (submit_time, duration_s, tenant, gpus, pods, ...)
  --cluster FILE       cluster CSV (name, pool, gpu_type, gpus, cpu_milli, memory_mib, count, ...)
  --queues FILE        queues file, JSON (.json) or YAML subset (.yaml/.yml)
  --policy LIST        comma list of fairway, static, fifo, governed, controller (default: the
                       first three; governed = fairway with the queues' isolation policies,
                       controller = governed with the two-level controller)
  --placement LIST     comma list of best-fit, fragmentation-aware (default: best-fit)
  --mode MODE          replay (default) or fill
  --seed N             seed for fill sampling (default 1)
  --fill-targets LIST  requested-capacity percentages for fill (default 50,80,90,100,130)
  --window END         measurement window end for replay: last-submit (default) or last-finish
  --sla-seconds N      SLA start deadline in seconds (default 60)
  --no-preview         do not call the core's preview at submit (faster; previewAtSubmit stays 'none')
  --eta                sample the core's ETA at submit for jobs left pending and report its error
                       against the actual start (etaAtSubmit; 4-9 times slower on Philly)
  --probes             seeded GPU utilization per job (by --seed) for every run: utilization beside
                       allocation (governed and controller runs always have it)
  --idle-reclaim MODE  on or off (default off): governed and controller runs flag jobs idle for
                       their queue's policy's time and reclaim them as it says
  --controller-window-min N  the controller's window in virtual minutes (default 5)
  --out DIR            output directory for report.json and report.html (default sim-out)
  --name NAME          output file base name (default report)
  --no-tenants         terminal output without the per-tenant tables
  --quiet              no progress display (stderr: a bar on a terminal, else a line every 5 s)
  -h, --help           this help

See docs/simulator.md for the file formats and exact metric definitions.`;

const PHILLY_HELP = `usage: fairway convert-philly [options]

  --philly-dir DIR     directory with philly-2017-09-10.csv and philly-vc-nodes.csv
                       (default: $FAIRWAY_PHILLY_DIR, else ../shared/traces/philly
                       next to the repository)
  --out DIR            where to write the trace, cluster and queues files (default sim-out/philly)
  --gpus N             cluster size in GPUs, a multiple of 8 (default 768)
  --quota MODE         scaled (default: VC table shares of the cluster) or raw (nodes × 8)
  --fractional P       synthetic variant: each 1-GPU job becomes a share k/10 (k = 1…9) of one GPU
                       with probability P, drawn with --seed (default 0: none)
  --seed N             seed for --fractional (default 1)
  -h, --help           this help`;

const HETERO_HELP = `usage: fairway generate-hetero [options]

  --seed N             seed of the generator (default 1)
  --scale X            multiplies node and pod counts (default 1: ~1,500 nodes, ~6,200 GPUs, 8,000 pods)
  --out DIR            where to write hetero-{trace,cluster}.csv, hetero-queues.json and the
                       merged (one flavor) variants hetero-*-merged.* (default sim-out/hetero)
  -h, --help           this help

See docs/simulator.md ("Heterogeneous fill generator") for the distributions.`;
const HETERO_STRINGS = ['seed', 'scale', 'out'];

const OPENB_HELP = `usage: fairway convert-openb --node-list FILE --pod-list FILE [options]

  --node-list FILE     node CSV (sn, cpu_milli, memory_mib, gpu, model; no model = CPU-only)
  --pod-list FILE      pod CSV (name, cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, ...)
  --out DIR            where to write openb-{trace,cluster}.csv, openb-queues.json and the
                       merged variants (default sim-out/openb)
  -h, --help           this help

A gpu_spec naming several models is written without a pin (the trace pins one flavor).`;
const OPENB_STRINGS = ['node-list', 'pod-list', 'out'];

type Flags = Map<string, string | true>;

/** `../shared/traces/philly` beside the repository (where the shared traces are checked out), whatever the working directory. */
export const DEFAULT_PHILLY_DIR = fileURLToPath(new URL('../../../shared/traces/philly', import.meta.url));

/** Where convert-philly reads: --philly-dir, else FAIRWAY_PHILLY_DIR, else the default beside the
 * repository.
 */
export function phillyDir(
  flag: string | undefined,
  env: Record<string, string | undefined>,
  dflt: string,
): { dir: string; source: PhillyDirSource } {
  if (flag !== undefined) return { dir: flag, source: '--philly-dir' };
  const fromEnv = env.FAIRWAY_PHILLY_DIR;
  if (fromEnv) return { dir: fromEnv, source: 'FAIRWAY_PHILLY_DIR' };
  return { dir: dflt, source: 'default' };
}

/**
 * Flags by `node:util` parseArgs, with the CLI's own rules on top: `-h` is `--help`; an
 * option is given at most once (booleans may repeat); a value may start with one dash
 * (`--seed -5`) but not two (`--trace --cluster` is a missing value). Options the caller
 * does not know are kept (as strings when followed by a value) so that it can put `--help`
 * before "unknown option".
 */
export function parseFlags(args: string[], strings: readonly string[], booleans: readonly string[]): Flags {
  const options: NonNullable<ParseArgsConfig['options']> = {};
  for (const k of strings) options[k] = { type: 'string' };
  for (const k of booleans) options[k] = { type: 'boolean' };
  options.help = { type: 'boolean', short: 'h' };
  // strict off: parseArgs would refuse `--seed -5` as ambiguous and word errors its own way
  const { tokens } = parseArgs({ args, options, strict: false, allowPositionals: true, tokens: true });
  const m: Flags = new Map();
  const set = (key: string, val: string): void => {
    if (m.has(key)) throw new UsageError(`--${key} given twice`);
    m.set(key, val);
  };
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i]!;
    if (t.kind === 'positional') throw new UsageError(`unexpected argument '${t.value}'`);
    if (t.kind === 'option-terminator') {
      // a bare `--` reads as an option with an empty name, as it always did here
      const next = tokens[i + 1];
      if (next?.kind !== 'positional') throw new UsageError(`-- needs a value`);
      set('', next.value);
      i++;
      continue;
    }
    if (t.rawName !== '-h' && !t.rawName.startsWith('--'))
      throw new UsageError(`unexpected argument '${t.rawName}'`);
    const key = t.name;
    const type = options[key]?.type;
    if (type === 'boolean') {
      if (t.inlineValue) throw new UsageError(`--${key} takes no value`);
      m.set(key, true);
    } else if (type === 'string') {
      if (t.value === undefined || (!t.inlineValue && t.value.startsWith('--')))
        throw new UsageError(`--${key} needs a value`);
      set(key, t.value);
    } else if (t.value !== undefined) {
      set(key, t.value); // unknown, `--key=value`
    } else {
      // unknown, parsed as a boolean: its value is the next argument when that is not an option
      const next = tokens[i + 1];
      if (next?.kind !== 'positional') throw new UsageError(`--${key} needs a value`);
      set(key, next.value);
      i++;
    }
  }
  return m;
}

function str(f: Flags, k: string): string | undefined {
  const v = f.get(k);
  return typeof v === 'string' ? v : undefined;
}

function list<T extends string>(f: Flags, k: string, allowed: readonly T[], dflt: T[]): T[] {
  const v = str(f, k);
  if (v === undefined) return dflt;
  const items = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const it of items)
    if (!(allowed as readonly string[]).includes(it))
      throw new UsageError(`--${k}: '${it}' is not one of ${allowed.join(', ')}`);
  if (items.length === 0) throw new UsageError(`--${k} is empty`);
  return [...new Set(items)] as T[];
}

function int(f: Flags, k: string, dflt: number): number {
  const v = str(f, k);
  if (v === undefined) return dflt;
  if (!/^-?\d+$/.test(v)) throw new UsageError(`--${k} must be an integer, got '${v}'`);
  return Number(v);
}

const SIM_STRINGS = [
  'trace',
  'cluster',
  'queues',
  'policy',
  'placement',
  'mode',
  'seed',
  'fill-targets',
  'window',
  'sla-seconds',
  'out',
  'name',
  'idle-reclaim',
  'controller-window-min',
];
const SIM_BOOLEANS = ['no-preview', 'eta', 'no-tenants', 'quiet', 'help', 'probes'];
const SIM_KNOWN = [...SIM_STRINGS, ...SIM_BOOLEANS];
const PHILLY_STRINGS = ['philly-dir', 'out', 'gpus', 'quota', 'fractional', 'seed'];

type SimulateCommand = SimulateOptions & { out: string; name: string; tenants: boolean; quiet: boolean };

export function parseSimulateArgs(args: string[]): SimulateCommand | 'help' {
  const f = parseFlags(args, SIM_STRINGS, SIM_BOOLEANS);
  if (f.has('help')) return 'help';
  for (const k of f.keys()) if (!SIM_KNOWN.includes(k)) throw new UsageError(`unknown option --${k}`);
  const need = (k: string): string => {
    const v = str(f, k);
    if (v === undefined) throw new UsageError(`--${k} FILE is required`);
    return v;
  };
  const mode = str(f, 'mode') ?? 'replay';
  if (mode !== 'replay' && mode !== 'fill')
    throw new UsageError(`--mode must be replay or fill, got '${mode}'`);
  const win = str(f, 'window');
  if (win !== undefined && win !== 'last-submit' && win !== 'last-finish')
    throw new UsageError(`--window must be last-submit or last-finish`);
  const o: SimulateCommand = {
    trace: need('trace'),
    cluster: need('cluster'),
    queues: need('queues'),
    policies: list<PolicyName>(f, 'policy', ALL_POLICIES, [...POLICIES]),
    placements: list<PlacementName>(f, 'placement', PLACEMENTS, ['best-fit']),
    mode,
    seed: int(f, 'seed', 1),
    out: str(f, 'out') ?? 'sim-out',
    name: str(f, 'name') ?? 'report',
    tenants: !f.has('no-tenants'),
    quiet: f.has('quiet'),
  };
  if (win !== undefined) o.windowEnd = win;
  if (f.has('sla-seconds')) o.slaSeconds = int(f, 'sla-seconds', 60);
  if (f.has('no-preview')) o.preview = false;
  if (f.has('eta')) o.eta = true;
  if (f.has('probes')) o.probes = true;
  const idle = str(f, 'idle-reclaim');
  if (idle !== undefined && idle !== 'on' && idle !== 'off')
    throw new UsageError(`--idle-reclaim must be on or off, got '${idle}'`);
  if (idle === 'on') o.idleReclaim = true;
  if (f.has('controller-window-min')) {
    const m = int(f, 'controller-window-min', 5);
    if (m < 1) throw new UsageError(`--controller-window-min must be at least 1`);
    o.controllerWindowMs = m * 60_000;
  }
  const ft = str(f, 'fill-targets');
  if (ft !== undefined) {
    const xs = ft.split(',').map((s) => Number(s.trim()));
    if (xs.some((x) => !(x > 0) || !Number.isFinite(x)))
      throw new UsageError(`--fill-targets must be positive numbers, got '${ft}'`);
    o.fillTargets = xs;
  }
  if (!/^[\w.-]+$/.test(o.name))
    throw new UsageError(`--name may use letters, digits, '.', '_' and '-' only`);
  return o;
}

export type { Io } from './io.js';

const stdio: Io = {
  out: (s) => process.stdout.write(`${s}\n`),
  err: (s) => process.stderr.write(`${s}\n`),
  errStream: process.stderr,
};

/** The simulate progress display: a bar on a terminal, plain lines (at most one per interval) elsewhere. */
function progressDisplay(io: Io, options: CliOptions): ProgressDisplay {
  if (io.errStream?.isTTY) return barProgress(io.errStream);
  return lineProgress(
    io.err,
    options.progressIntervalMs !== undefined ? { intervalMs: options.progressIntervalMs } : {},
  );
}

/** What tests may replace: the environment, the default Philly folder, how often simulate reports progress.
 *
 */
export interface CliOptions {
  env?: Record<string, string | undefined>;
  phillyDefaultDir?: string;
  /** Non-terminal progress: at most one line per this many ms (default 5000). */
  progressIntervalMs?: number;
  /** Jobs between two progress callbacks of the simulator (default: replay 1000, fill 200). */
  progressEvery?: number;
}

/** Run the CLI; returns the exit code (0 ok, 1 input/run error, 2 usage error). */
export async function main(argv: string[], io: Io = stdio, options: CliOptions = {}): Promise<number> {
  const [cmd, ...rest] = argv;
  try {
    if (cmd === undefined || cmd === 'help' || cmd === '--help' || cmd === '-h') {
      const sub = rest[0];
      io.out(
        sub === 'simulate'
          ? SIMULATE_HELP
          : sub === 'convert-philly'
            ? PHILLY_HELP
            : sub === 'generate-hetero'
              ? HETERO_HELP
              : sub === 'convert-openb'
                ? OPENB_HELP
                : MAIN_HELP,
      );
      return 0;
    }
    if (cmd === 'simulate') {
      const o = parseSimulateArgs(rest);
      if (o === 'help') {
        io.out(SIMULATE_HELP);
        return 0;
      }
      if (options.progressEvery !== undefined) o.progressEvery = options.progressEvery;
      const display = o.quiet ? NO_PROGRESS : progressDisplay(io, options);
      const onRun = (t: RunTiming) => {
        display.runDone();
        const rate = t.jobs / Math.max(t.ms / 1000, 1e-9);
        const eta = t.explains
          ? `; ETA sampling ${(t.explainMs! / 1000).toFixed(2)} s of it, ${t.explains} explain calls`
          : '';
        io.err(
          `${o.mode} ${t.policy}/${t.placement}: ${t.jobs} jobs in ${(t.ms / 1000).toFixed(2)} s (${Math.round(rate)} jobs/s${eta})`,
        );
      };
      let res;
      try {
        res = simulate(o, undefined, onRun, (p) => display.update(p));
      } finally {
        display.runDone(); // a failed run must not leave the bar (or a hidden cursor) behind
      }
      io.out(terminalReport(res.report, o.tenants));
      const files = await writeReport(res.report, o.out, o.name);
      io.out(`\nwrote ${files.json}, ${files.html} and ${files.md}`);
      return 0;
    }
    if (cmd === 'convert-philly') {
      const f = parseFlags(rest, PHILLY_STRINGS, ['help']);
      if (f.has('help')) {
        io.out(PHILLY_HELP);
        return 0;
      }
      for (const k of f.keys())
        if (!PHILLY_STRINGS.includes(k)) throw new UsageError(`unknown option --${k}`);
      const quota = str(f, 'quota') ?? 'scaled';
      if (quota !== 'scaled' && quota !== 'raw') throw new UsageError(`--quota must be scaled or raw`);
      const fr = str(f, 'fractional');
      const fractional = fr === undefined ? 0 : Number(fr);
      if (!(fractional >= 0 && fractional <= 1))
        throw new UsageError(`--fractional must be a probability within 0…1, got '${fr}'`);
      const { dir, source } = phillyDir(
        str(f, 'philly-dir'),
        options.env ?? process.env,
        options.phillyDefaultDir ?? DEFAULT_PHILLY_DIR,
      );
      checkPhillyDir(dir, source, '../shared/traces/philly next to the repository');
      const r = convertPhilly({
        dir,
        outDir: str(f, 'out') ?? 'sim-out/philly',
        gpus: int(f, 'gpus', 768),
        quota,
        fractional,
        seed: int(f, 'seed', 1),
      });
      io.out(
        `${r.jobs} jobs (${r.fractionalJobs} made fractional) → ${r.trace}\ncluster → ${r.cluster}\nqueues → ${r.queues}\ngoverned queues → ${r.governedQueues}`,
      );
      for (const t of r.tenants)
        io.out(`  ${t.vc}: ${t.jobs} jobs, VC nodes ${t.nodes ?? '-'}, nominal ${t.nominalGpus} GPUs`);
      return 0;
    }
    if (cmd === 'generate-hetero') {
      const f = parseFlags(rest, HETERO_STRINGS, ['help']);
      if (f.has('help')) {
        io.out(HETERO_HELP);
        return 0;
      }
      for (const k of f.keys())
        if (!HETERO_STRINGS.includes(k)) throw new UsageError(`unknown option --${k}`);
      const sc = str(f, 'scale');
      const scale = sc === undefined ? 1 : Number(sc);
      if (!(scale > 0) || !Number.isFinite(scale))
        throw new UsageError(`--scale must be a positive number, got '${sc}'`);
      const r = writeHetero({ seed: int(f, 'seed', 1), scale, outDir: str(f, 'out') ?? 'sim-out/hetero' });
      io.out(
        `${r.nodes} nodes, ${r.gpus} GPUs, ${r.pods} pods\ntrace → ${r.trace}\ncluster → ${r.cluster}\nqueues → ${r.queues}\nmerged → ${r.traceMerged}, ${r.clusterMerged}, ${r.queuesMerged}`,
      );
      return 0;
    }
    if (cmd === 'convert-openb') {
      const f = parseFlags(rest, OPENB_STRINGS, ['help']);
      if (f.has('help')) {
        io.out(OPENB_HELP);
        return 0;
      }
      for (const k of f.keys()) if (!OPENB_STRINGS.includes(k)) throw new UsageError(`unknown option --${k}`);
      const need = (k: string): string => {
        const v = str(f, k);
        if (v === undefined) throw new UsageError(`--${k} FILE is required`);
        return v;
      };
      const r = convertOpenb({
        nodeList: need('node-list'),
        podList: need('pod-list'),
        outDir: str(f, 'out') ?? 'sim-out/openb',
      });
      io.out(
        `${r.nodes} nodes, ${r.gpus} GPUs, ${r.pods} pods (${r.multiModelPins} multi-model pins written unpinned)\ntrace → ${r.trace}\ncluster → ${r.cluster}\nqueues → ${r.queues}\nmerged → ${r.traceMerged}, ${r.clusterMerged}, ${r.queuesMerged}`,
      );
      return 0;
    }
    if ((TENANT_COMMANDS as readonly string[]).includes(cmd)) return await runTenantCommand(cmd, rest, io);
    throw new UsageError(`unknown command '${cmd}'\n\n${MAIN_HELP}`);
  } catch (e) {
    if (e instanceof UsageError) {
      io.err(`fairway: ${e.message}`);
      return 2;
    }
    io.err(`fairway: error: ${(e as Error).message}`);
    return 1;
  }
}

/** Run as a program (directly, or from bin/fairway.js): sets the exit code. */
export async function runAsProgram(argv: string[]): Promise<void> {
  // `fairway simulate … | head` closes stdout early: end quietly instead of crashing
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw e;
  });
  process.exitCode = await main(argv);
}

// Only when executed directly (tsx src/cli/fairway.ts), not when imported by tests or the bin.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await runAsProgram(process.argv.slice(2));
}
