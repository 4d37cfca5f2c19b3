// Benchmark of the usage ledger's writer (not a test: nothing here asserts a time,
// but it fails when the ledger does not hold exactly the GPU-seconds charged).
// Run: npm run bench:ledger
//
// What metering costs the writer, on SQLite and on PostgreSQL: the leader's checkpoint over
// BENCH_JOBS running jobs in transactions of 500, and a backend's finish report closing one
// job, each against a baseline measured in the same run (the same transactions writing only the
// job state, `meteredFrom`, without ledger rows, rollup or budget check).
//
// Knobs (environment): BENCH_JOBS=2000 BENCH_CHECKPOINTS=20 BENCH_CLOSES=500 BENCH_BATCH=500
//   BENCH_DIALECTS=sqlite,postgresql BENCH_SEED=12 BENCH_HISTORY_ROWS=0 (month-to-date rollup rows
//   of the bench's tenants before the run: the budget check after each charge sums them)
//   BENCH_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/postgres (the server; the scratch
//   database BENCH_POSTGRES_DB=fw_bench_ledger is created on it and dropped at the end)
//   BENCH_KEEP_DB=1 (keep the scratch databases) BENCH_RESULTS=bench/RESULTS.md (the section
//   between the `<!-- bench:ledger -->` markers is replaced, or appended; empty string: do not write)
import path from 'node:path';
import { loadAvg } from './api/process-stats.js';
import { ROOT } from './api/repo-root.js';
import { passTable, resultTable, section, writeSection } from './ledger/report.js';
import { runLedgerBench } from './ledger/run.js';
import type { Dialect } from './usage/load.js';

async function main(): Promise<void> {
  const env = process.env;
  const checkpoints = Number(env.BENCH_CHECKPOINTS ?? 20);
  const closes = Number(env.BENCH_CLOSES ?? 500);
  const batch = Number(env.BENCH_BATCH ?? 500);
  const resultsFile = env.BENCH_RESULTS ?? path.join(ROOT, 'bench', 'RESULTS.md');
  const started = Date.now();
  const loadStart = loadAvg();
  const results = await runLedgerBench({
    dialects: (env.BENCH_DIALECTS ?? 'sqlite,postgresql').split(',').map((d) => d.trim()) as Dialect[],
    jobs: Number(env.BENCH_JOBS ?? 2000),
    checkpoints,
    closes,
    batch,
    seed: Number(env.BENCH_SEED ?? 12),
    historyRows: Number(env.BENCH_HISTORY_ROWS ?? 0),
    postgresUrl: env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres',
    postgresDatabase: env.BENCH_POSTGRES_DB ?? 'fw_bench_ledger',
    keep: env.BENCH_KEEP_DB === '1',
    progress: (line) => console.error(`[bench:ledger] ${line}`),
  });
  console.log([...resultTable(results), '', ...passTable(results)].join('\n'));
  const knobs = Object.entries(env)
    .filter(([key]) => key.startsWith('BENCH_') && key !== 'BENCH_RESULTS')
    .map(([key, v]) => `${key}=${v}`);
  if (resultsFile) {
    const command = `${knobs.length ? `${knobs.join(' ')} ` : ''}npm run bench:ledger`;
    writeSection(
      resultsFile,
      section(results, { command, started, loadStart, loadEnd: loadAvg(), checkpoints, closes, batch }),
    );
    console.error(`[bench:ledger] written to ${path.relative(process.cwd(), resultsFile)}`);
  }
  const failed = results.filter((r) => r.verification.problems.length);
  for (const r of failed)
    console.error(`[bench:ledger] ${r.dialect}: THE LEDGER IS WRONG: ${r.verification.problems.join('; ')}`);
  if (failed.length) process.exitCode = 1;
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
