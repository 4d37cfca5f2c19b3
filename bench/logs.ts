// Benchmark of following job logs (not a test: nothing here asserts a time).
// Run: npm run bench:logs
//
// BENCH_LOG_FOLLOWERS followers (default 200) over BENCH_LOG_JOBS one-GPU jobs (default 20, so 10 per
// job) whose pods write BENCH_LOG_RATE lines a second in all (default 1,000), against a gateway
// started as `npm start` runs it (bench/kube/gateway.ts: `node --import tsx src/main.ts`,
// NODE_ENV=production, SQLite in a temp dir, the demo seeded). The jobs are aurora's member's, submitted
// through the graph without a declared duration: the simulated cluster's rank-0 pod writes a line per
// 30-s declared step (src/core/logs/simulated-log.ts) and the run never ends by itself, so
// FAIRWAY_SIM_TIME_SCALE = 30,000 × rate ÷ jobs ÷ 1,000 (1,500 by default: a line per job every 20 ms).
// Each follower is its own graphql-ws client (its own socket) with one subscription, as many
// `fairway logs -f` would be, all with aurora's member's token.
//   (1) jobLogs(id, tail: BENCH_LOG_TAIL=1): latency = time received − the line's `at` (the time the
//       simulated pod wrote it, the gateway's clock, this machine), over the lines received in a
//       window of BENCH_LOG_SECONDS (default 20); the gateway's CPU (/proc/<pid>/stat) per line
//       delivered; RSS before and after opening the followers; every follower checked for lines twice,
//       out of order and missing (verify.ts). Then every job is cancelled and each stream's `ended`
//       batch waited for.
//   (2) the baseline, on a fresh gateway with the same jobs at the same time scale: the same
//       followers on jobUpdated(id). Its events come only when a job's state changes, so the window
//       measures what the open followers cost at rest; the per-event figures come from cancelling
//       every job (one CANCELLED event to each of its followers).
// The caps a single token's followers would hit at their defaults are raised (setup.ts capsFor; the
// section lists them). Knobs (environment): BENCH_LOG_JOBS=20 BENCH_LOG_FOLLOWERS=200
// BENCH_LOG_RATE=1000 BENCH_LOG_SECONDS=20 BENCH_LOG_TAIL=1 BENCH_LOG_PHASES=jobLogs,jobUpdated
// BENCH_RESULTS=bench/RESULTS.md (the section between the `<!-- bench:logs -->` markers is replaced,
// or appended; empty string: do not write). FAIRWAY_LOG_FOLLOW_FLUSH_MS and the other gateway
// variables in the environment reach the gateway.
import os from 'node:os';
import path from 'node:path';
import { DEFAULT_LOG_FOLLOW_BUFFER_LINES, DEFAULT_LOG_FOLLOW_FLUSH_MS } from '../src/config/sections/logs.js';
import { gitDescribe, loadAvg } from './api/process-stats.js';
import { ROOT } from './api/repo-root.js';
import type { FollowerKind } from './logs/followers.js';
import { type PhaseResult, runPhase } from './logs/phase.js';
import { capsFor, lineEveryMs, STEP_MS, timeScaleFor } from './logs/setup.js';
import { writeResultsSection } from './results-section.js';

const START = '<!-- bench:logs -->';
const END = '<!-- /bench:logs -->';

function quantiles(xs: number[]): { p50: number; p95: number; p99: number; max: number; n: number } {
  const s = Float64Array.from(xs).sort();
  const at = (q: number) => s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))] ?? NaN;
  return { p50: at(0.5), p95: at(0.95), p99: at(0.99), max: s[s.length - 1] ?? NaN, n: s.length };
}
const num = (x: number) =>
  Number.isNaN(x) || !Number.isFinite(x) ? '–' : Math.abs(x) < 10 ? x.toFixed(1) : x.toFixed(0);
const dist = (xs: number[]) => {
  const q = quantiles(xs);
  return q.n ? `${num(q.p50)} / ${num(q.p95)} / ${num(q.p99)} / ${num(q.max)}` : '–';
};
const mib = (kib: number) => (kib / 1024).toFixed(0);

function table(results: PhaseResult[]): string[] {
  const head = results.map((r) =>
    r.kind === 'jobLogs' ? '`jobLogs` followers' : '`jobUpdated` followers (baseline)',
  );
  const line = (what: string, f: (r: PhaseResult) => string) => `| ${what} | ${results.map(f).join(' | ')} |`;
  const logs = (f: (r: PhaseResult) => string) => (r: PhaseResult) => (r.kind === 'jobLogs' ? f(r) : '–');
  const netCpuS = (r: PhaseResult) => r.windowCpuS - (r.idleCpuMsPerS / 1000) * r.windowSeconds;
  const check = (c: PhaseResult['check']) =>
    c
      ? `${c.expected.toLocaleString('en')} / ${c.missing} (${c.followersMissing} followers) / ${c.duplicates} / ${c.outOfOrder}`
      : '–';
  return [
    `| measure | ${head.join(' | ')} |`,
    `| --- | ${results.map(() => '---:').join(' | ')} |`,
    line('followers open / asked (one socket each)', (r) => `${r.opened} / ${r.followers}`),
    line('time to open them (50 at a time), s', (r) => r.openSeconds.toFixed(1)),
    line(
      'gateway RSS before → after opening them (2 s after), MiB',
      (r) => `${mib(r.rssBeforeKiB)} → ${mib(r.rssAfterKiB)}`,
    ),
    line('**memory per follower** (RSS difference ÷ followers), KiB', (r) =>
      num((r.rssAfterKiB - r.rssBeforeKiB) / r.followers),
    ),
    line('gateway RSS at the window’s end, MiB', (r) => mib(r.rssEndKiB)),
    line('gateway CPU, jobs running and no follower, ms per s', (r) => num(r.idleCpuMsPerS)),
    line('gateway CPU in the window, followers open, ms per s', (r) => num(r.windowCpuMsPerS)),
    line(
      'gateway JS thread on CPU / waiting for a CPU, % of the window',
      (r) =>
        `${((100 * r.windowSched.runNs) / 1e9 / r.windowSeconds).toFixed(0)}% / ${((100 * r.windowSched.waitNs) / 1e9 / r.windowSeconds).toFixed(0)}%`,
    ),
    line(
      'messages received in the window (batches / events), per follower per s',
      (r) =>
        `${r.messages.toLocaleString('en')} (${(r.messages / r.followers / r.windowSeconds).toFixed(1)})`,
    ),
    line(
      'lines delivered in the window (per s, all followers)',
      logs((r) => `${r.lines.toLocaleString('en')} (${(r.lines / r.windowSeconds).toFixed(0)})`),
    ),
    line(
      '**delivery latency** (received − the line’s `at`), ms p50 / p95 / p99 / max',
      logs((r) => dist(r.latencyMs)),
    ),
    line(
      '**gateway CPU per delivered line**, µs: all / above the no-follower CPU',
      logs((r) => `${num((1e6 * r.windowCpuS) / r.lines)} / ${num((1e6 * netCpuS(r)) / r.lines)}`),
    ),
    line('gateway CPU per message sent, µs (above the no-follower CPU)', (r) =>
      r.messages ? num((1e6 * netCpuS(r)) / r.messages) : '–',
    ),
    line(
      'by the window’s end: step lines due / missing / twice / out of order',
      logs((r) => check(r.check)),
    ),
    line(
      'whole streams after the cancel: missing / twice / out of order; ended with the pod’s last line',
      logs((r) =>
        r.finalCheck
          ? `${r.finalCheck.missing} / ${r.finalCheck.duplicates} / ${r.finalCheck.outOfOrder}; ${r.finalCheck.endedWithLastLine} of ${r.followers}`
          : '–',
      ),
    ),
    line(
      'lines in each follower’s first batch (the `tail`, and what was written during its first flush interval), p50 / max',
      logs((r) => {
        const q = quantiles(r.firstBatchLines);
        return `${q.p50} / ${q.max}`;
      }),
    ),
    line(
      'lines written before their follower opened, sent after its first batch',
      logs((r) => String(r.stale)),
    ),
    line('stream errors in the window (RATE_LIMITED, closed sockets…)', (r) =>
      r.errorsDuring.length
        ? `${r.errorsDuring.length}: ${[...new Set(r.errorsDuring)].slice(0, 3).join(', ')}`
        : '0',
    ),
    line(
      'all jobs cancelled: streams that saw it (`ended` batch / CANCELLED event) / followers',
      (r) => `${r.cancel.delivered} / ${r.cancel.expected}`,
    ),
    line('cancelJob sent → that end received, ms p50 / p95 / p99 / max', (r) => dist(r.cancel.latencyMs)),
    line(
      'gateway CPU from the cancels to the last end received (the cancelJob mutations included), ms; per follower',
      (r) => `${num(r.cancel.cpuS * 1000)}; ${num((r.cancel.cpuS * 1000) / Math.max(1, r.cancel.delivered))}`,
    ),
    line(
      'bench process CPU (the followers’ side), % of the window',
      (r) => `${((100 * r.benchCpuS) / r.windowSeconds).toFixed(0)}%`,
    ),
  ];
}

async function main(): Promise<void> {
  const jobs = Number(process.env.BENCH_LOG_JOBS ?? 20);
  const followers = Number(process.env.BENCH_LOG_FOLLOWERS ?? 200);
  const rate = Number(process.env.BENCH_LOG_RATE ?? 1000);
  const seconds = Number(process.env.BENCH_LOG_SECONDS ?? 20);
  const tail = Number(process.env.BENCH_LOG_TAIL ?? 1);
  const phases = (process.env.BENCH_LOG_PHASES ?? 'jobLogs,jobUpdated')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean) as FollowerKind[];
  for (const p of phases)
    if (p !== 'jobLogs' && p !== 'jobUpdated')
      throw new Error(`BENCH_LOG_PHASES: ${p} is neither jobLogs nor jobUpdated`);
  if (followers % jobs !== 0) throw new Error('BENCH_LOG_FOLLOWERS must be a multiple of BENCH_LOG_JOBS');
  const perJob = followers / jobs;
  const timeScale = timeScaleFor(rate, jobs);
  const flushMs = Number(process.env.FAIRWAY_LOG_FOLLOW_FLUSH_MS ?? DEFAULT_LOG_FOLLOW_FLUSH_MS);
  const bufferLines = Number(process.env.FAIRWAY_LOG_FOLLOW_BUFFER_LINES ?? DEFAULT_LOG_FOLLOW_BUFFER_LINES);
  const resultsFile = process.env.BENCH_RESULTS ?? path.join(ROOT, 'bench', 'RESULTS.md');
  const started = Date.now();
  const loadStart = loadAvg();
  console.error(
    `[bench:logs] ${followers} followers over ${jobs} jobs, ${rate} lines/s in all: time scale ${timeScale}, a line per job every ${lineEveryMs(timeScale).toFixed(1)} ms; flush ${flushMs} ms`,
  );
  const results: PhaseResult[] = [];
  for (const kind of phases) results.push(await runPhase({ kind, jobs, perJob, timeScale, seconds, tail }));

  const knobs = Object.entries(process.env)
    .filter(
      ([key]) => (key.startsWith('BENCH_') && key !== 'BENCH_RESULTS') || key.startsWith('FAIRWAY_LOG_'),
    )
    .map(([key, v]) => `${key}=${v}`);
  const cpu = os.cpus();
  const { raised } = capsFor(followers);
  const lines = [
    START,
    `## Job logs — ${followers} followers over ${jobs} jobs writing ${rate.toLocaleString('en')} lines/s, beside the same followers on jobUpdated`,
    '',
    `Command: \`${knobs.length ? `${knobs.join(' ')} ` : ''}npm run bench:logs\` (bench/logs.ts)  `,
    `Date: ${new Date(started).toISOString()}; ${cpu.length} × ${cpu[0]?.model ?? '?'}, Node ${process.version}; load average (1 / 5 / 15 min) at start ${loadStart}, at end ${loadAvg()}; code ${gitDescribe()}.`,
    '',
    'Each column is a fresh gateway, `node --import tsx src/main.ts` (NODE_ENV=production, SQLite, the demo seeded), ' +
      `with ${jobs} one-GPU jobs of aurora’s member submitted through the graph without a declared duration and RUNNING before anything is measured: ` +
      `the simulated cluster’s rank-0 pod writes a line per ${STEP_MS / 1000}-s declared step, and FAIRWAY_SIM_TIME_SCALE=${timeScale} makes that a line per job every ${lineEveryMs(timeScale).toFixed(1)} ms, ${rate.toLocaleString('en')} lines/s in all. ` +
      `${followers} followers (${perJob} per job), each its own graphql-ws client and socket with one subscription, all on aurora’s member’s token, from this process: ` +
      `\`jobLogs(id, tail: ${tail})\` selecting every line field, or \`jobUpdated(id) { id state }\`. ` +
      `Followers batch lines every FAIRWAY_LOG_FOLLOW_FLUSH_MS=${flushMs} ms (buffer ${bufferLines.toLocaleString('en')} lines) and the simulated pod is looked at every ${Math.min(1000, Math.max(50, Math.round(STEP_MS / timeScale)))} ms: both are in the latency by design. ` +
      `The window is ${seconds} s; latency counts the lines received in it except each follower’s first batch (its tail, sent with what came during the first flush interval); CPU is the gateway’s utime + stime (/proc/<pid>/stat) over the window, and “above the no-follower CPU” subtracts what the same gateway spent per second with its jobs running and no follower, measured just before. ` +
      'jobUpdated sends an event only when a job’s state changes: its window is the followers at rest (no event is due), and its per-event figures come from cancelling every job at the end (as the jobLogs column does, whose streams then drain and end).',
    '',
    process.env.BENCH_LOG_DEFAULT_CAPS === 'true'
      ? 'Every cap at its default (BENCH_LOG_DEFAULT_CAPS=true), rate limits on.'
      : raised.length
        ? `Caps raised for one token’s ${followers} followers, each to what they need (past a WebSocket cap the gateway closes the socket 4429 or answers the subscription RATE_LIMITED; BENCH_LOG_DEFAULT_CAPS=true runs with every cap at its default): ${raised.join(', ')}. Every other cap and the rate limits are at their defaults and on.`
        : 'No cap had to be raised for these followers.',
    '',
    ...table(results),
    ...results.flatMap((r) =>
      r.openErrors.length
        ? ['', `Errors opening ${r.kind} followers: ${[...new Set(r.openErrors)].slice(0, 5).join(' | ')}`]
        : [],
    ),
    ...results.flatMap((r) =>
      r.gatewayErrors.length
        ? ['', `Gateway stderr (${r.kind}), first lines: ${r.gatewayErrors.join(' | ').slice(0, 600)}`]
        : [],
    ),
    END,
  ];
  const section = lines.join('\n');
  console.log(section);
  if (resultsFile) {
    writeResultsSection(resultsFile, START, END, section);
    console.error(
      `[bench:logs] wrote ${path.relative(ROOT, resultsFile)} (${((Date.now() - started) / 1000).toFixed(0)} s in all)`,
    );
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
