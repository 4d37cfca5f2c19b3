// Benchmark of the HTTP / graphql-ws API (not a test: nothing here asserts a time). Run: npm run bench:api
// (entry: bench/api/index.ts; the parts, servers, load client and report are its siblings).
//
// Starts Fairway itself as child processes (`node --import tsx src/main.ts`, the same entry
// point as `npm start`) on the embedded default — SQLite in a temp FAIRWAY_DATA_DIR, the
// simulated cluster, in-memory events — with NODE_ENV=production and FAIRWAY_DEMO_TRICKLE=false,
// a fresh server (fresh database) per part; part 2 also on PostgreSQL (a fresh database created
// for the run and dropped after). Load comes from this (parent) process, which shares the
// machine's cores with the server under test. Each part measures one target of the write and stream paths
// against a baseline measured in the same run, with the server's CPU time per operation beside
// each figure (/proc/<pid>/stat: less sensitive than wall-clock figures to a shared machine).
//
//   (1)  Tenant dashboard query (aurora admin token; queue, usage, pending count and the newest 50
//        of 200 jobs with project and position) at concurrency 1, 8, 32, 128, closed loop, vs a
//        bare graphql-yoga server (own process, no auth/database/plugins) answering the same
//        query text from in-memory data of the same size and states. Target: ≥ 0.5× bare req/s
//        at 32, ≤ 1 ms server CPU per request.
//   (1b) `{ __typename }` with an aurora API token vs anonymous, same server, concurrency 1 and 32.
//        Target: authenticated CPU per request ≤ 1.5× anonymous.
//   (2)  Submits, open loop at 200, 500, 1,000/s for 10 s each, on SQLite and PostgreSQL: acked/s,
//        admitted/s, answer latency and submit → ADMITTED seen by a `tenantEvents` subscriber,
//        from the moment each submit was due. Targets: ≥ 500 acked/s sustained; seen p99 ≤ 250 ms
//        at 200/s.
//   (2c) Submits one by one, 32 callers in a closed loop (BENCH_CLOSED_CLIENTS, BENCH_CLOSED_SECONDS), SQLite
//        and PostgreSQL: acknowledged/s and admitted/s (the leader's counter), CPU per job. Target ≥ 500 of each.
//   (2b) Batch `submitJobs` (1,000 jobs per call), 1 caller then 4, SQLite: jobs/s accepted and
//        admitted. Target ≥ 5,000 of each. Says "submitJobs not available" on a server without it.
//   (4)  A 10,000-job burst (submitJobs) with admission cycles in slices and in one piece: p99 of an
//        authenticated `{ __typename }` meanwhile (open loop) and the time until all are admitted
//        (bench/api/burst-stall.ts). Target: p99 < 100 ms, admission time not worse.
//   (3)  N graphql-ws subscribers (one socket each) on one pending job's `jobPosition(id)` each;
//        one running job is cancelled so the head is admitted and every position moves. Delivery
//        latency from the head's ADMITTED, server memory per subscriber, CPU of the round.
//        Target at 10,000: p99 ≤ 1 s, ≤ 20 KiB per subscriber. Sizes that would push the run past
//        the budget (extrapolated) or past the open-file limit are skipped and said so.
//
// Bulk setup (the 200 dashboard jobs, the n + 32 position jobs) is written into the database
// before the server starts, through the server's own entities (SQLite only).
//
// Knobs (environment): BENCH_PARTS=1,1b,2,2c,2b,3,4  BENCH_SECONDS=5 (parts 1, 1b)
//   BENCH_SUBMIT_SECONDS=10  BENCH_SUBMIT_RATES=200,500,1000 (part 2)
//   BENCH_PG_URL=postgres://postgres@127.0.0.1:5432/postgres (only to CREATE/DROP DATABASE
//   fairway_bench_<random>; unreachable: part 2 runs on SQLite only and says so)
//   BENCH_BATCH_CALLS=20  BENCH_BATCH_SIZE=1000 (part 2b)  BENCH_SUBSCRIBERS=1000,5000,10000 (part 3)
//   BENCH_BUDGET_S=480 (the whole run; part 3 drops sizes that would not fit)
//   BENCH_SERVER_NODE_ARGS (e.g. --cpu-prof)
//   BENCH_RESULTS=bench/RESULTS-api.md (empty string: do not write; text after a
//   `<!-- notes -->` line in the existing file is kept)
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { authOverhead } from './auth-overhead.js';
import { runBaselineServer } from './baseline-server.js';
import { batchSubmit } from './batch-submit.js';
import { burstStall } from './burst-stall.js';
import { dashboardThroughput } from './dashboard-throughput.js';
import { sharedAgent } from './load-client.js';
import { positionSubscribers } from './position-subscribers.js';
import { gitDescribe, loadAvg } from './process-stats.js';
import { ROOT } from './repo-root.js';
import { out, writeReport } from './report.js';
import { live } from './servers.js';
import { submitClosedLoop } from './submit-closed-loop.js';
import { submitToAdmitted } from './submit-to-admitted.js';

async function main(): Promise<void> {
  const parts = new Set((process.env.BENCH_PARTS ?? '1,1b,2,2c,2b,3,4').split(',').map((s) => s.trim()));
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const submitSeconds = Number(process.env.BENCH_SUBMIT_SECONDS ?? 10);
  const rates = (process.env.BENCH_SUBMIT_RATES ?? '200,500,1000')
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  const sizes = (process.env.BENCH_SUBSCRIBERS ?? '1000,5000,10000')
    .split(',')
    .map(Number)
    .filter((n) => n > 0);
  const resultsFile = process.env.BENCH_RESULTS ?? path.join(ROOT, 'bench', 'RESULTS-api.md');
  const started = Date.now();
  // The whole run should stay under ~8 minutes on a 2-core machine. Parts 1, 1b, 2 and 2b have
  // bounded durations (~4 minutes together at worst, ~3.5 with a server that meets the targets);
  // part 3 gets what is left and drops sizes that would not fit.
  const deadline = started + Number(process.env.BENCH_BUDGET_S ?? 480) * 1000;
  const cpu = os.cpus();
  out('# Fairway API benchmark');
  out();
  const knobs = Object.entries(process.env).filter(
    ([k]) => k.startsWith('BENCH_') && k !== 'BENCH_RESULTS' && k !== 'BENCH_PG_URL',
  );
  out(
    `Command: \`npm run bench:api\`${knobs.length ? ` (${knobs.map(([k, v]) => `${k}=${v}`).join(' ')})` : ''}  `,
  );
  out(`Date: ${new Date().toISOString()}  `);
  out(
    `Machine: ${cpu.length} × ${cpu[0]?.model ?? '?'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}  `,
  );
  out(
    `Load average at start (1/5/15 min): ${loadAvg()} — the machine is shared; other processes' CPU use inflates every latency below.  `,
  );
  out(`Code: ${gitDescribe()}  `);
  out(
    'Server: `node --import tsx src/main.ts` (what `npm start` runs), SQLite in a temp dir (part 2 also PostgreSQL), simulated cluster, in-memory events, NODE_ENV=production, FAIRWAY_DEMO_TRICKLE=false, rate limits off; a fresh server per part.  ',
  );
  out(
    'Each table says which target of the write-path work it measures (the targets of issue 14, tightened where the write-path issue set its own); every target is a ratio against a baseline measured in the same run or an absolute figure with the server CPU per operation beside it, since the machine may be shared.',
  );
  out();
  if (parts.has('1')) await dashboardThroughput(seconds);
  if (parts.has('1b')) await authOverhead(seconds);
  if (parts.has('2')) await submitToAdmitted(submitSeconds, rates);
  if (parts.has('2c')) await submitClosedLoop();
  if (parts.has('2b')) await batchSubmit();
  if (parts.has('3')) await positionSubscribers(sizes, deadline);
  if (parts.has('4')) await burstStall();
  out(
    `Total bench time: ${((Date.now() - started) / 1000).toFixed(0)} s; load average at the end: ${loadAvg()}.`,
  );
  sharedAgent.destroy();
  if (resultsFile) writeReport(resultsFile);
}

// The only command-line flag: `--baseline-server <spec.json>` turns this process into part 1's
// bare-yoga baseline (servers.ts spawns this same entry with it). Not strict: other arguments were
// always ignored, and still are; the bench's knobs are the environment variables above.
const { values: flags } = parseArgs({
  options: { 'baseline-server': { type: 'string' } },
  strict: false,
  allowPositionals: true,
});
const baselineSpecFile = flags['baseline-server'];

if (baselineSpecFile !== undefined) {
  runBaselineServer(String(baselineSpecFile)).catch((error) => {
    console.error(error);
    process.exit(1);
  });
} else {
  // However the run ends — an error, an exception escaping a callback, Ctrl-C, `timeout` — the
  // servers it started are stopped and the PostgreSQL database it created is dropped.
  let ending = false;
  const abort = async (why: unknown, code: number) => {
    if (ending) return;
    ending = true;
    console.error(why);
    await Promise.all([...live].map((stop) => stop()));
    process.exit(code);
  };
  process.on('uncaughtException', (error) => void abort(error, 1));
  process.on('unhandledRejection', (error) => void abort(error, 1));
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const)
    process.once(signal, () => void abort(`${signal}: stopping the servers`, 130));
  main().then(
    () => process.exit(0),
    (error) => abort(error, 1),
  );
}
