// Benchmark of the rate limits (not a test: nothing here asserts a time).
// Run: npx tsx bench/flood.ts
//
// One real server (`src/main.ts` as a child process, NODE_ENV=production, the demo seeded with
// 200 jobs in aurora-research's queue), once with the rate limits on (the defaults) and once
// with FAIRWAY_RATE_LIMITS=off. Tenant aurora's dashboard (the api bench's query, a tenant
// admin's token) is asked at a steady rate, first alone, then while tenant borealis's member
// token floods the server from many concurrent connections with the abuse mix once measured (three small
// queries, then a previewJob, over and over). Printed
// and written to bench/RESULTS.md: the dashboard's p50/p99 latency and refusals, the flood's
// accepted and refused (429) requests, and the server's CPU per request (/proc, 10 ms ticks).
//
// Knobs (environment): BENCH_SECONDS=6 (each phase) BENCH_DASHBOARD_RATE=5 (requests/s)
//   BENCH_FLOOD_CONCURRENCY=32 BENCH_RESULTS=bench/RESULTS.md (the section between the
//   `<!-- bench:flood -->` markers is replaced, or appended; empty string: do not write)
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { DASHBOARD } from './api/dashboard-throughput.js';
import { gql, post, sleep } from './api/load-client.js';
import { cpuSeconds, gitDescribe, loadAvg } from './api/process-stats.js';
import { ROOT } from './api/repo-root.js';
import { ms, pct } from './api/report.js';
import { startFairway } from './api/servers.js';
import { writeResultsSection } from './results-section.js';

const START = '<!-- bench:flood -->';
const END = '<!-- /bench:flood -->';

const PREVIEW = `mutation($in: SubmitJobInput!) { previewJob(input: $in) { __typename } }`;

interface PhaseResult {
  limits: 'on' | 'off';
  phase: 'alone' | 'flood';
  dashboard: { latencies: number[]; refused: number; failed: number };
  flood: { sent: number; accepted: number; refused: number; failed: number };
  seconds: number;
  cpuSeconds: number;
}

const codeOf = (text: string) => {
  try {
    return (
      (JSON.parse(text) as { errors?: { extensions?: { code?: string } }[] }).errors?.[0]?.extensions?.code ??
      'OK'
    );
  } catch {
    return 'UNPARSEABLE';
  }
};

async function runPhase(
  limits: 'on' | 'off',
  phase: 'alone' | 'flood',
  server: { url: string; pid: number; tokens: Record<string, string>; floodQueueId: string },
  o: { seconds: number; rate: number; concurrency: number },
): Promise<PhaseResult> {
  const url = new URL(server.url);
  const dashboardBody = JSON.stringify({ query: DASHBOARD, variables: { slug: 'aurora-research' } });
  const victim = server.tokens['aurora-research/TENANT_ADMIN']!;
  const flooder = server.tokens['borealis-inference/MEMBER']!;
  const floodQuery = JSON.stringify({ query: `{ viewer { email } queues { name pendingCount } }` });
  const floodPreview = JSON.stringify({
    query: PREVIEW,
    variables: {
      in: {
        queueId: server.floodQueueId,
        name: 'flood preview',
        podSets: [{ gpusPerPod: 1 }],
        expectedDurationSeconds: 3600,
      },
    },
  });
  const dashboardAgent = new http.Agent({ keepAlive: true, maxSockets: 8 });
  const floodAgent = new http.Agent({ keepAlive: true, maxSockets: o.concurrency });
  const result: PhaseResult = {
    limits,
    phase,
    dashboard: { latencies: [], refused: 0, failed: 0 },
    flood: { sent: 0, accepted: 0, refused: 0, failed: 0 },
    seconds: o.seconds,
    cpuSeconds: 0,
  };
  const cpuBefore = cpuSeconds(server.pid);
  const endAt = performance.now() + o.seconds * 1000;

  // The flood: closed loop, `concurrency` requests always in flight.
  const flooders =
    phase === 'flood'
      ? Array.from({ length: o.concurrency }, async () => {
          while (performance.now() < endAt) {
            const body = result.flood.sent++ % 4 === 3 ? floodPreview : floodQuery;
            const res = await post(floodAgent, url, flooder, body).catch(() => ({ status: 0, text: '' }));
            if (res.status === 429 && codeOf(res.text) === 'RATE_LIMITED') result.flood.refused++;
            else if (res.status === 200 && codeOf(res.text) === 'OK') result.flood.accepted++;
            else result.flood.failed++;
          }
        })
      : [];

  // The dashboard: open loop at a steady rate (a late answer does not delay the next request).
  const asks: Promise<void>[] = [];
  const begin = performance.now();
  for (let i = 0; performance.now() < endAt; i++) {
    asks.push(
      (async () => {
        const t0 = performance.now();
        const res = await post(dashboardAgent, url, victim, dashboardBody).catch(() => ({
          status: 0,
          text: '',
        }));
        const code = codeOf(res.text);
        if (code === 'OK') result.dashboard.latencies.push(performance.now() - t0);
        else if (code === 'RATE_LIMITED') result.dashboard.refused++;
        else result.dashboard.failed++;
      })(),
    );
    await sleep(Math.max(0, begin + ((i + 1) * 1000) / o.rate - performance.now()));
  }
  await Promise.all([...asks, ...flooders]);
  result.cpuSeconds = cpuSeconds(server.pid) - cpuBefore;
  dashboardAgent.destroy();
  floodAgent.destroy();
  result.dashboard.latencies.sort((a, b) => a - b);
  return result;
}

function table(results: PhaseResult[]): string[] {
  const rows = results.map((r) => {
    const d = r.dashboard;
    const requests = d.latencies.length + d.refused + d.failed + r.flood.sent;
    return `| ${r.limits} | ${r.phase === 'alone' ? 'dashboard alone' : 'during the flood'} | ${d.latencies.length + d.refused + d.failed} | ${ms(pct(d.latencies, 0.5))} | ${ms(pct(d.latencies, 0.99))} | ${d.refused + d.failed} | ${r.flood.sent} | ${r.flood.accepted} | ${r.flood.refused} | ${Math.round(r.flood.sent / r.seconds)} | ${Math.round((r.cpuSeconds / r.seconds) * 100)} % | ${ms((r.cpuSeconds * 1000) / requests)} |`;
  });
  return [
    '| rate limits | phase | dashboard requests | dashboard p50 ms | dashboard p99 ms | dashboard refused/failed | flood requests | flood accepted | flood refused (429) | flood req/s | server CPU | server CPU ms/request |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows,
  ];
}

async function main(): Promise<void> {
  const env = process.env;
  const o = {
    seconds: Number(env.BENCH_SECONDS ?? 6),
    rate: Number(env.BENCH_DASHBOARD_RATE ?? 5),
    concurrency: Number(env.BENCH_FLOOD_CONCURRENCY ?? 32),
  };
  const resultsFile = env.BENCH_RESULTS ?? path.join(ROOT, 'bench', 'RESULTS.md');
  const started = Date.now();
  const loadStart = loadAvg();
  const results: PhaseResult[] = [];
  // 200 one-GPU jobs in aurora's queue, as the api bench's dashboard (150 H100: some pend; 50 MIG).
  const seed = Array.from({ length: 200 }, (_, i) => ({
    name: `dash-${i}`,
    flavor: i % 4 === 3 ? ('a100-1g.10gb' as const) : ('h100-80g' as const),
    gpus: 1,
    seconds: 1e6,
  }));
  for (const limits of ['on', 'off'] as const) {
    process.env.FAIRWAY_RATE_LIMITS = limits === 'on' ? 'true' : 'false'; // read by the server child (startFairway passes the environment on)
    const started = await startFairway(60, seed);
    const server = {
      ...started,
      floodQueueId: (await gql(started, started.tokens['borealis-inference/MEMBER']!, `{ queues { id } }`))
        .queues[0].id as string,
    };
    try {
      console.error(`[bench:flood] rate limits ${limits}: server pid ${server.pid}`);
      await runPhase(limits, 'alone', server, { ...o, seconds: 1 }); // warm-up, not reported
      await sleep(4000); // the warm-up's window (4 s) is over before measuring
      for (const phase of ['alone', 'flood'] as const) {
        results.push(await runPhase(limits, phase, server, o));
        await sleep(4000);
      }
    } finally {
      await server.stop();
    }
  }
  const lines = table(results);
  console.log(lines.join('\n'));
  if (resultsFile) {
    const cpus = os.cpus();
    const knobs = Object.entries(env)
      .filter(([key]) => key.startsWith('BENCH_') && key !== 'BENCH_RESULTS')
      .map(([key, v]) => `${key}=${v}`);
    const block = [
      START,
      '## Rate limits under a flood (`npm run bench:flood`)',
      '',
      `Command: \`${knobs.length ? `${knobs.join(' ')} ` : ''}npm run bench:flood\` (bench/flood.ts)  `,
      `Date: ${new Date(started).toISOString()}; ${cpus.length} × ${cpus[0]?.model ?? '?'} (shared), Node ${process.version}; load average at start / end: ${loadStart} / ${loadAvg()}; code ${gitDescribe()}.`,
      '',
      `One gateway (\`src/main.ts\`, NODE_ENV=production, SQLite, the demo with 200 jobs in aurora's queue), with the default rate limits and with \`FAIRWAY_RATE_LIMITS=off\`. ` +
        `Aurora's tenant admin asks the api bench's dashboard query ${o.rate} times a second (open loop) for ${o.seconds} s, alone, then while borealis's member token floods from ${o.concurrency} connections in a closed loop: three small queries (1 point each), then a previewJob (3 points), over and over (the default budget: 200 points, then 50 a second). ` +
        'Server CPU: the gateway process (/proc, 10 ms ticks) over every request of the phase, dashboard and flood.',
      '',
      ...lines,
      END,
    ].join('\n');
    writeResultsSection(resultsFile, START, END, block);
    console.error(`[bench:flood] written to ${path.relative(process.cwd(), resultsFile)}`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
