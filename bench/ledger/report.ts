// The ledger bench's table and its section of bench/RESULTS.md, kept between its own markers
// (a rerun replaces it; the reading written below the end marker stays).
import os from 'node:os';
import { gitDescribe } from '../api/process-stats.js';
import { writeResultsSection } from '../results-section.js';
import { percentile } from '../usage/measure.js';
import { median } from '../usage/run.js';
import type { LedgerDialectResult, Samples } from './run.js';

export const START = '<!-- bench:ledger -->';
export const END = '<!-- /bench:ledger -->';

const fmt = (n: number) =>
  Number.isFinite(n)
    ? n >= 100
      ? n.toFixed(0)
      : n >= 10
        ? n.toFixed(1)
        : n >= 1
          ? n.toFixed(2)
          : n.toFixed(3)
    : '–';
const name = (d: LedgerDialectResult['dialect']) => (d === 'postgresql' ? 'PostgreSQL' : 'SQLite');
const sum = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0);

/** CPU ms per job: this process + the PostgreSQL backends (mean over the run). */
export function cpuPerJob(s: Samples): { total: number; node: number; db: number | null } {
  const jobs = s.totalJobs || 1;
  const node = sum(s.nodeCpuMs) / jobs;
  const db = s.dbCpuMs === null ? null : s.dbCpuMs / jobs;
  return { total: node + (db ?? 0), node, db };
}

const cpuCell = (s: Samples) => {
  const c = cpuPerJob(s);
  return c.db === null ? fmt(c.total) : `${fmt(c.total)} (${fmt(c.node)} + server ${fmt(c.db)})`;
};

/** Wall ms per job of each transaction. */
const perJob = (s: Samples) => s.wallMs.map((w, i) => w / s.jobs[i]!);

export function resultTable(results: LedgerDialectResult[]): string[] {
  const rows: string[][] = [];
  for (const r of results) {
    const line = (what: string, s: Samples, base: Samples, rowsPerSecond: string) => {
      const extraWall = median(perJob(s)) - median(perJob(base));
      const extraCpu = cpuPerJob(s).total - cpuPerJob(base).total;
      rows.push([
        name(r.dialect),
        what,
        String(s.wallMs.length),
        `**${fmt(median(s.wallMs))}** / ${fmt(percentile(s.wallMs, 0.95))}`,
        fmt(median(perJob(s))),
        cpuCell(s),
        rowsPerSecond,
        `${fmt(median(base.wallMs))} / ${fmt(percentile(base.wallMs, 0.95))}`,
        fmt(median(perJob(base))),
        cpuCell(base),
        `${fmt(extraWall)} / ${fmt(extraCpu)} (${(median(s.wallMs) / median(base.wallMs)).toFixed(1)}×)`,
      ]);
    };
    const perSecond = (rows: number, ms: number) => Math.round(rows / (ms / 1000)).toLocaleString('en');
    const { metered: cp, ledgerOnly: cpl } = r.checkpoint;
    line(
      `checkpoint batch (${Math.max(...cp.jobs)} jobs, one transaction)`,
      cp,
      r.checkpoint.baseline,
      perSecond(sum(cp.passRows), sum(cp.passWallMs)),
    );
    line(
      '… the same without the budget check',
      cpl,
      r.checkpoint.baseline,
      perSecond(sum(cpl.passRows), sum(cpl.passWallMs)),
    );
    const { metered: cl, ledgerOnly: cll } = r.close;
    // Both metered kinds of close wrote the close rows: one rate over both.
    const closeRate = perSecond(r.closeRows, sum(cl.wallMs) + sum(cll.wallMs));
    line('close one job (`succeeded` report, own transaction)', cl, r.close.baseline, closeRate);
    line('… the same without the budget check', cll, r.close.baseline, closeRate);
  }
  return [
    '| database | transaction | count | median / p95 ms | ms per job (median) | CPU ms per job | ledger rows/s | baseline median / p95 ms | baseline ms per job | baseline CPU ms per job | metering adds per job: wall / CPU ms (median ÷ baseline) |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((row) => `| ${row.join(' | ')} |`),
  ];
}

/** Whole checkpoints: every batch of one pass over the running jobs. */
export function passTable(results: LedgerDialectResult[]): string[] {
  return [
    '| database | running jobs | whole checkpoint median / p95 ms | without the budget check | ledger rows per checkpoint | baseline median / p95 ms |',
    '| --- | ---: | ---: | ---: | ---: | ---: |',
    ...results.map((r) => {
      const m = r.checkpoint.metered;
      const b = r.checkpoint.baseline;
      const l = r.checkpoint.ledgerOnly;
      return `| ${name(r.dialect)} | ${r.jobs.toLocaleString('en')} | ${fmt(median(m.passWallMs))} / ${fmt(percentile(m.passWallMs, 0.95))} | ${fmt(median(l.passWallMs))} / ${fmt(percentile(l.passWallMs, 0.95))} | ${fmt(median(m.passRows))} | ${fmt(median(b.passWallMs))} / ${fmt(percentile(b.passWallMs, 0.95))} |`;
    }),
  ];
}

export interface SectionContext {
  command: string;
  started: number;
  loadStart: string;
  loadEnd: string;
  checkpoints: number;
  closes: number;
  batch: number;
}

const history = (results: LedgerDialectResult[]) => {
  const rows = [...new Set(results.map((r) => r.historyRows))];
  return rows.length === 1 && rows[0] === 0
    ? 'none (BENCH_HISTORY_ROWS=0)'
    : results.map((r) => `${name(r.dialect)} ${r.historyRows.toLocaleString('en')} rows`).join(', ');
};

export function section(results: LedgerDialectResult[], c: SectionContext): string[] {
  const cpus = os.cpus();
  const jobs = results[0]?.jobs ?? 0;
  return [
    START,
    `## Ledger writer: what metering costs a checkpoint and a job's close (\`npm run bench:ledger\`)`,
    '',
    `Command: \`${c.command}\` (bench/ledger.ts)  `,
    `Date: ${new Date(c.started).toISOString()}; ${cpus.length} × ${cpus[0]?.model ?? '?'} (shared), Node ${process.version}; load average at start / end: ${c.loadStart} / ${c.loadEnd}; code ${gitDescribe()}.`,
    '',
    `Data (seeded, the same on both databases; schema from the migrations, PostgreSQL 15 local scratch database, SQLite file in WAL mode): ${jobs.toLocaleString('en')} RUNNING jobs in 3 tenants ` +
      '(45% one H100, 25% one or two 8-GPU H100 pods, 15% 1–3 MIG slices of an A100 (1/7 device each), 15% two pod sets: an L40S launcher + one or two 8-GPU H100 workers, i.e. two flavors and two ledger rows per interval), ' +
      '4 priority classes with price multipliers, a soft budget per tenant (evaluated once per checkpoint, after its batches, as the server wires `afterCheckpoint`; never alerting; a single close no longer evaluates budgets); each job started at 2026-12-28 10:41:30 UTC with `meteredFrom` set. No utilization samples. ' +
      `Month-to-date rollup history of these tenants before the run (the budget check sums it): ${history(results)}.`,
    '',
    `Method: the leader's checkpoint (src/services/scheduling/leader-session.ts) — fenced transactions (\`writeFenced\`: epoch row check) of ${c.batch} jobs read \`{ state: RUNNING }\` by id with \`populate: ['queue']\`, FOR UPDATE on PostgreSQL, ` +
      "then `metering.charge(em, jobs, now, 'checkpoint')` and flush/commit. Baseline: the same transactions with a `Metering` whose `charge` only sets `meteredFrom = now` (no ledger rows, rollup or budget check); " +
      "'without the budget check': the real `Metering` with `afterCheckpoint` unset. " +
      `One untimed round, then ${c.checkpoints} rounds of metered, baseline, without budget check, baseline (${c.checkpoints} + ${2 * c.checkpoints} + ${c.checkpoints} checkpoints), the clock a minute on each time (each metered checkpoint charges exactly 60 s; an interval across a UTC hour is cut in two rows: counted in the check below). ` +
      `Close: ${c.closes} jobs of each kind in turn, each a backend \`succeeded\` report through \`applyBackendEvent\` in its own fenced transaction (job event, outbox row, state; metered: + its open interval charged). ` +
      'CPU per job: this process (ORM, driver, and on SQLite the database itself) + on PostgreSQL the server backends (/proc; 10 ms ticks, so the mean over the run). Rows/s: ledger rows written ÷ wall time of the transactions that wrote them.',
    '',
    ...resultTable(results),
    '',
    ...passTable(results),
    '',
    ...results.map((r) => {
      const v = r.verification;
      return `${name(r.dialect)} check after the run: ${v.rows.toLocaleString('en')} ledger rows (${r.hourCrossings.toLocaleString('en')} charged intervals crossed an hour), Σ gpuSeconds ${v.gpuSeconds} (expected ${v.expectedGpuSeconds}: ${v.problems.length ? `**FAILED**: ${v.problems.join('; ')}` : 'equal (whole-GPU flavors exactly, MIG within 1e-9 relative: 1/7 is no binary fraction), and Σ units × ms per flavor exact'}); rollup ${v.rollupRows.toLocaleString('en')} rows, equal to the ledger per hour × flavor (GPU-seconds, CPU-seconds, cost, jobs).`;
    }),
    END,
  ];
}

/** Replaces this bench's section (between START and END) in `file`, or appends it. */
export function writeSection(file: string, lines: string[]): void {
  writeResultsSection(file, START, END, lines.join('\n'));
}
