// Benchmark of the HTTP / graphql-ws API (not a test: nothing here asserts a time). Run: npm run bench:api
// (entry: bench/api/index.ts; the parts, servers, load client and report are its siblings).
//
// Starts Fairway itself as child processes (`node --import tsx src/main.ts`, the same entry
// point as `npm start`) on the embedded default — SQLite in a temp FAIRWAY_DATA_DIR, the
// simulated cluster, in-memory events — with NODE_ENV=production and FAIRWAY_DEMO_TRICKLE=false,
// a fresh server (fresh database) per part. Load comes from this (parent) process, which shares
// the machine's cores with the server under test.
//
//   (1) A tenant dashboard query (aurora admin token; its queue, usage, pending count and the
//       newest 50 of 200 jobs with project and position) at concurrency 1, 8, 32, 128 — closed
//       loop, keep-alive HTTP, warm-up then a fixed duration per level. Compared with a bare
//       graphql-yoga server (createYoga + createServer, no auth, no database, no plugins) in its
//       own child process, answering the same query text from in-memory data of the same size
//       and the same job states.
//   (2) Submit → ADMITTED latency as seen by a graphql-ws `tenantEvents` subscriber, open loop at
//       50 and 500 submits/s (1-slice MIG jobs that run 30 declared seconds at time scale 1000,
//       so capacity frees as fast as it is taken). Measured from the moment a submit was due
//       (its scheduled start, so a server that falls behind is charged for the queueing).
//   (3) N graphql-ws subscribers (one socket each), each watching one pending job's
//       `jobPosition(id)`; then one running job is cancelled so the queue head is admitted and
//       every position moves. Delivery latency from the trigger and from the head's ADMITTED
//       timestamp; server memory per subscriber from /proc/<pid>/status VmRSS before/after.
//       Sizes that would push the run past ~5.5 minutes (extrapolated) are skipped and said so.
//
// Bulk setup (the 200 dashboard jobs, the n + 32 position jobs) is written into the database
// before the server starts, through the server's own entities: submitting thousands of jobs
// over the API takes minutes on this machine (part 2 measures that rate).
// Server CPU time (/proc/<pid>/stat) and the JS thread's run/run-queue time (/proc/<pid>/schedstat)
// are reported beside wall-clock figures because the machine may be shared.
//
// Knobs (environment): BENCH_PARTS=1,2,3  BENCH_SECONDS=5  BENCH_SUBSCRIBERS=500,1000,5000
//   BENCH_BUDGET_S=330  BENCH_SERVER_NODE_ARGS (e.g. --cpu-prof)
//   BENCH_RESULTS=bench/RESULTS-api.md (empty string: do not write; text after a
//   `<!-- notes -->` line in the existing file is kept)
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runBaselineServer } from './baseline-server.js';
import { dashboardThroughput } from './dashboard-throughput.js';
import { sharedAgent } from './load-client.js';
import { positionSubscribers } from './position-subscribers.js';
import { gitDescribe, loadAvg } from './process-stats.js';
import { out, writeReport } from './report.js';
import { ROOT } from './repo-root.js';
import { live } from './servers.js';
import { submitToAdmitted } from './submit-to-admitted.js';

async function main(): Promise<void> {
  const parts = new Set((process.env.BENCH_PARTS ?? '1,2,3').split(',').map((s) => s.trim()));
  const seconds = Number(process.env.BENCH_SECONDS ?? 5);
  const sizes = (process.env.BENCH_SUBSCRIBERS ?? '500,1000,5000').split(',').map(Number).filter((n) => n > 0);
  const resultsFile = process.env.BENCH_RESULTS ?? path.join(ROOT, 'bench', 'RESULTS-api.md');
  const started = Date.now();
  // The whole run should stay around five minutes (5.5 at most); part 3 sizes that would not fit are dropped.
  const deadline = started + Number(process.env.BENCH_BUDGET_S ?? 330) * 1000;
  const cpu = os.cpus();
  out('# Fairway API benchmark');
  out();
  out(`Command: \`npm run bench:api\`${process.env.BENCH_PARTS || process.env.BENCH_SUBSCRIBERS || process.env.BENCH_SECONDS ? ` (BENCH_PARTS=${[...parts].join(',')} BENCH_SECONDS=${seconds} BENCH_SUBSCRIBERS=${sizes.join(',')})` : ''}  `);
  out(`Date: ${new Date().toISOString()}  `);
  out(`Machine: ${cpu.length} × ${cpu[0]?.model ?? '?'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, Node ${process.version}, ${os.platform()} ${os.release()}  `);
  out(`Load average at start (1/5/15 min): ${loadAvg()} — the machine is shared; other processes' CPU use inflates every latency below.  `);
  out(`Code: ${gitDescribe()}  `);
  out('Server: `node --import tsx src/main.ts` (what `npm start` runs), SQLite in a temp dir, simulated cluster, in-memory events, NODE_ENV=production, FAIRWAY_DEMO_TRICKLE=false; a fresh server per part.');
  out();
  if (parts.has('1')) await dashboardThroughput(seconds);
  if (parts.has('2')) await submitToAdmitted(seconds);
  if (parts.has('3')) await positionSubscribers(sizes, deadline);
  out(`Total bench time: ${((Date.now() - started) / 1000).toFixed(0)} s; load average at the end: ${loadAvg()}.`);
  sharedAgent.destroy();
  if (resultsFile) writeReport(resultsFile);
}

// The only command-line flag: `--baseline-server <spec.json>` turns this process into part 1's
// bare-yoga baseline (servers.ts spawns this same entry with it). Not strict: other arguments were
// always ignored, and still are; the bench's knobs are the environment variables above.
const { values: flags } = parseArgs({ options: { 'baseline-server': { type: 'string' } }, strict: false, allowPositionals: true });
const baselineSpecFile = flags['baseline-server'];

if (baselineSpecFile !== undefined) {
  runBaselineServer(String(baselineSpecFile)).catch((error) => {
    console.error(error);
    process.exit(1);
  });
} else {
  main().then(
    () => process.exit(0),
    async (error) => {
      console.error(error);
      await Promise.all([...live].map((stop) => stop()));
      process.exit(1);
    },
  );
}
