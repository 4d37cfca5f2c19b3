#!/usr/bin/env node
// The project CLI. Subcommands: simulate, convert-philly, generate-hetero, convert-openb. Flags by node:util
// parseArgs.
import { fileURLToPath } from 'node:url';
import { writeHetero } from '../simulator/hetero-gen.js';
import { convertOpenb } from '../simulator/openb.js';
import { checkPhillyDir, convertPhilly, type PhillyDirSource } from '../simulator/philly.js';
import { barProgress, lineProgress, NO_PROGRESS, type ProgressDisplay } from '../simulator/progress.js';
import { type RunTiming, simulate, terminalReport, writeReport } from '../simulator/run.js';
import { int, parseFlags, str, UsageError } from './fairway-flags.js';
import { HETERO_HELP, MAIN_HELP, OPENB_HELP, PHILLY_HELP, SIMULATE_HELP } from './fairway-help.js';
import type { Io } from './io.js';
import { parseSimulateArgs } from './simulate-args.js';
import { runTenantCommand, TENANT_COMMANDS } from './tenant/index.js';

export { parseFlags, UsageError } from './fairway-flags.js';
export { parseSimulateArgs } from './simulate-args.js';

const HETERO_STRINGS = ['seed', 'scale', 'out'];
const OPENB_STRINGS = ['node-list', 'pod-list', 'out'];
const PHILLY_STRINGS = ['philly-dir', 'out', 'gpus', 'quota', 'fractional', 'seed'];

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
