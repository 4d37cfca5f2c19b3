import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { readCluster, totalGpus } from './cluster.js';
import { resolveQueues, type SimInput, type WindowEnd } from './engine.js';
import { DEFAULT_FILL_TARGETS, runFill } from './fill.js';
import { computeReplayMetrics } from './metrics.js';
import { checkQueuesAgainstCluster, readQueues } from './queues.js';
import { runReplay } from './replay.js';
import {
  type FillReport,
  fillHtml,
  fillMarkdown,
  fillRun,
  fillTerminal,
  type ReplayReport,
  type Report,
  type ReportInputs,
  replayHtml,
  replayMarkdown,
  replayTerminal,
  reportJson,
} from './report.js';
import { isGovernedPolicy, type PlacementName, type PolicyName } from './scheduling-policies.js';
import { readTrace } from './trace.js';

export interface SimulateOptions {
  trace: string;
  cluster: string;
  queues: string;
  policies: PolicyName[];
  placements: PlacementName[];
  mode: 'replay' | 'fill';
  seed: number;
  windowEnd?: WindowEnd;
  slaSeconds?: number;
  fillTargets?: number[];
  preview?: boolean;
  /** Sample the ETA the core shows at submit for jobs left pending (default false: costly). */
  eta?: boolean;
  /** How many jobs (replay: submits and finishes) between two progress callbacks. */
  progressEvery?: number;
  /** Probes (seeded utilization per job) for every run; the governed and controller policies always have
   * them.
   */
  probes?: boolean;
  /** Idle reclaim in the governed and controller runs (default off). */
  idleReclaim?: boolean;
  /** The controller's window (virtual ms, default 5 min). */
  controllerWindowMs?: number;
}

/** The governance options of one replay run, or undefined when it has none (its report keeps its earlier
 * shape).
 */
export function governanceFor(
  o: SimulateOptions,
  policy: PolicyName,
): NonNullable<Parameters<typeof runReplay>[1]['governance']> | undefined {
  const governed = isGovernedPolicy(policy);
  if (!governed && !o.probes) return undefined;
  return {
    seed: o.seed,
    idleReclaim: governed && (o.idleReclaim ?? false),
    controller: policy === 'controller',
    ...(o.controllerWindowMs !== undefined ? { controllerSettings: { windowMs: o.controllerWindowMs } } : {}),
    slaMs: (o.slaSeconds ?? 60) * 1000,
  };
}

/** Where a run stands, for a progress display (stderr): nothing of it reaches the report. */
export interface RunProgress {
  mode: 'replay' | 'fill';
  policy: string;
  placement: string;
  /** 0…1. Replay: (submits + finishes) / (2 × jobs); fill: GPUs requested / the last target's. */
  fraction: number;
  /** Jobs processed so far, for a rate (replay: a job counts half at its submit, half at its finish). */
  jobs: number;
  /** What the fraction is made of, in words. */
  detail: string;
}

export interface RunTiming {
  policy: string;
  placement: string;
  jobs: number;
  ms: number;
  /** Replay only: explain() calls made for ETA sampling and the time they took (part of `ms`). */
  explains?: number;
  explainMs?: number;
}

export interface SimulationResult {
  report: Report;
  timings: RunTiming[];
}

export function loadInput(o: Pick<SimulateOptions, 'trace' | 'cluster' | 'queues'>): SimInput {
  const cluster = readCluster(o.cluster);
  const queues = readQueues(o.queues);
  checkQueuesAgainstCluster(queues, cluster);
  const trace = readTrace(o.trace);
  const input = { trace, cluster, queues };
  resolveQueues(input); // fail early on tenants without a queue
  return input;
}

export function simulate(
  o: SimulateOptions,
  input: SimInput = loadInput(o),
  onRun?: (t: RunTiming) => void,
  onProgress?: (p: RunProgress) => void,
): SimulationResult {
  const inputs: ReportInputs = {
    trace: basename(o.trace),
    cluster: basename(o.cluster),
    queues: basename(o.queues),
    jobs: input.trace.length,
    capacityGpus: totalGpus(input.cluster),
    nodes: input.cluster.nodes.length,
  };
  const timings: RunTiming[] = [];
  if (o.mode === 'replay') {
    const report: ReplayReport = {
      format: 'fairway-simulation/1',
      mode: 'replay',
      inputs,
      slaSeconds: o.slaSeconds ?? 60,
      windowEnd: o.windowEnd ?? 'last-submit',
      runs: [],
    };
    for (const policy of o.policies) {
      for (const placement of o.placements) {
        const t0 = performance.now();
        const ro: Parameters<typeof runReplay>[1] = { policy, placement };
        if (o.windowEnd) ro.windowEnd = o.windowEnd;
        if (o.preview !== undefined) ro.preview = o.preview;
        if (o.eta !== undefined) ro.eta = o.eta;
        const gov = governanceFor(o, policy);
        if (gov) ro.governance = gov;
        if (onProgress) {
          ro.onProgress = (p) =>
            onProgress({
              mode: 'replay',
              policy,
              placement,
              fraction: (p.submitted + p.finished) / (2 * p.total),
              jobs: (p.submitted + p.finished) / 2,
              detail: `${p.submitted}/${p.total} submitted, ${p.finished} finished`,
            });
          if (o.progressEvery !== undefined) ro.progressEvery = o.progressEvery;
        }
        const out = runReplay(input, ro);
        const ms = performance.now() - t0;
        report.runs.push(
          computeReplayMetrics(out, o.slaSeconds !== undefined ? { slaSeconds: o.slaSeconds } : {}),
        );
        const t: RunTiming = {
          policy,
          placement,
          jobs: input.trace.length,
          ms,
          explains: out.stats.explains,
          explainMs: out.stats.explainMs,
        };
        timings.push(t);
        onRun?.(t);
      }
    }
    return { report, timings };
  }
  const report: FillReport = { format: 'fairway-simulation/1', mode: 'fill', inputs, seed: o.seed, runs: [] };
  for (const policy of o.policies) {
    for (const placement of o.placements) {
      const t0 = performance.now();
      const fo: Parameters<typeof runFill>[1] = {
        policy,
        placement,
        seed: o.seed,
        targetsPct: o.fillTargets ?? DEFAULT_FILL_TARGETS,
      };
      if (onProgress) {
        fo.onProgress = (p) =>
          onProgress({
            mode: 'fill',
            policy,
            placement,
            fraction: Math.min(1, p.requestedGpus / p.targetGpus),
            jobs: p.submitted,
            detail: `${p.submitted} jobs drawn, ${Math.round(p.requestedGpus)}/${Math.round(p.targetGpus)} GPUs requested`,
          });
        if (o.progressEvery !== undefined) fo.progressEvery = o.progressEvery;
      }
      const out = runFill(input, fo);
      const ms = performance.now() - t0;
      report.runs.push(fillRun(out));
      const t = { policy, placement, jobs: out.sample.length, ms };
      timings.push(t);
      onRun?.(t);
    }
  }
  return { report, timings };
}

export function terminalReport(r: Report, perTenant = true): string {
  return r.mode === 'replay' ? replayTerminal(r, perTenant) : fillTerminal(r);
}

/** Async: the HTML page's charts are rendered by vega, which is asynchronous. */
export async function writeReport(
  r: Report,
  outDir: string,
  name = 'report',
): Promise<{ json: string; html: string; md: string }> {
  mkdirSync(outDir, { recursive: true });
  const json = join(outDir, `${name}.json`);
  const html = join(outDir, `${name}.html`);
  const md = join(outDir, `${name}.md`);
  writeFileSync(json, reportJson(r));
  writeFileSync(html, r.mode === 'replay' ? await replayHtml(r) : await fillHtml(r));
  writeFileSync(md, r.mode === 'replay' ? replayMarkdown(r, true) : fillMarkdown(r));
  return { json, html, md };
}
