// Benchmark of the usage query (not a test: nothing here asserts a time).
// Run: npm run bench:usage
//
// `readUsage` grouped by project and UTC day over a month, on SQLite and on PostgreSQL, each
// loaded with BENCH_ROWS ledger rows (default 1,000,000) and the hourly rollup the ledger writer
// keeps beside them; the baseline, measured in the same run, is the same grouping straight from
// the ledger with SQL. The target is under 100 ms on PostgreSQL.
//
// Knobs (environment): BENCH_ROWS=1000000 BENCH_ITERATIONS=50 BENCH_BASELINE_ITERATIONS=10
//   BENCH_WARMUP=3 BENCH_DIALECTS=sqlite,postgresql BENCH_SEED=12
//   BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres (the server; the scratch
//   database BENCH_POSTGRES_DB=fw_bench_usage is created on it and dropped at the end)
//   BENCH_KEEP_DB=1 (keep the scratch databases) BENCH_GRAPHQL=0 (skip the HTTP stage)
//   BENCH_SERVER_NODE_ARGS (node flags of the gateway, e.g. --cpu-prof) BENCH_RESULTS=bench/RESULTS.md (the
// section
//   between the `<!-- bench:usage -->` markers is replaced, or appended; empty string: do not write)
import path from 'node:path';
import { loadAvg } from './api/process-stats.js';
import { ROOT } from './api/repo-root.js';
import type { Dialect } from './usage/load.js';
import { resultTable, section, writeSection } from './usage/report.js';
import { runUsageBench } from './usage/run.js';

async function main(): Promise<void> {
  const env = process.env;
  const iterations = Number(env.BENCH_ITERATIONS ?? 50);
  const baselineIterations = Number(env.BENCH_BASELINE_ITERATIONS ?? 10);
  const warmup = Number(env.BENCH_WARMUP ?? 3);
  const resultsFile = env.BENCH_RESULTS ?? path.join(ROOT, 'bench', 'RESULTS.md');
  const started = Date.now();
  const loadStart = loadAvg();
  const results = await runUsageBench({
    dialects: (env.BENCH_DIALECTS ?? 'sqlite,postgresql').split(',').map((d) => d.trim()) as Dialect[],
    scenario: { rows: Number(env.BENCH_ROWS ?? 1_000_000), seed: Number(env.BENCH_SEED ?? 12) },
    postgresUrl: env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    postgresDatabase: env.BENCH_POSTGRES_DB ?? 'fw_bench_usage',
    iterations,
    baselineIterations,
    warmup,
    graphql: env.BENCH_GRAPHQL !== '0',
    keep: env.BENCH_KEEP_DB === '1',
    progress: (line) => console.error(`[bench:usage] ${line}`),
  });
  console.log(resultTable(results).join('\n'));
  for (const r of results) {
    if (r.plans)
      console.log(
        `\n${r.dialect} plan, readUsage's statement:\n${r.plans.service}\n\n${r.dialect} plan, baseline:\n${r.plans.baseline}`,
      );
  }
  const knobs = Object.entries(env)
    .filter(([key]) => key.startsWith('BENCH_') && key !== 'BENCH_RESULTS')
    .map(([key, v]) => `${key}=${v}`);
  if (resultsFile) {
    const command = `${knobs.length ? `${knobs.join(' ')} ` : ''}npm run bench:usage`;
    writeSection(
      resultsFile,
      section(results, {
        command,
        started,
        loadStart,
        loadEnd: loadAvg(),
        iterations,
        baselineIterations,
        warmup,
      }),
    );
    console.error(`[bench:usage] written to ${path.relative(process.cwd(), resultsFile)}`);
  }
  if (results.some((r) => r.mismatches.length)) process.exitCode = 1;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
