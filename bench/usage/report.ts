// The usage bench's table and its section of bench/RESULTS.md (kept between its markers; a
// rerun replaces it, the reading written below the end marker stays).
import os from 'node:os';
import { gitDescribe } from '../api/process-stats.js';
import { writeResultsSection } from '../results-section.js';
import type { Timing } from './measure.js';
import { percentile } from './measure.js';
import { type DialectResult, median } from './run.js';

export const START = '<!-- bench:usage -->';
export const END = '<!-- /bench:usage -->';

const ms = (n: number) =>
  Number.isFinite(n) ? (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2)) : '–';
const name = (d: DialectResult['dialect']) => (d === 'postgresql' ? 'PostgreSQL' : 'SQLite');

/**
 * CPU ms per call. In process: this process (+ the PostgreSQL backends). Over HTTP: the gateway
 * (+ the backends); the load client's own CPU is left out.
 */
function cpu(t: Timing): string {
  const own = t.serverCpuMsPerCall ?? t.nodeCpuMs.reduce((a, b) => a + b, 0) / t.nodeCpuMs.length;
  const who = t.serverCpuMsPerCall === null ? '' : 'gateway ';
  return t.dbCpuMsPerCall === null
    ? `${who}${ms(own)}`
    : `${ms(own + t.dbCpuMsPerCall)} (${who}${ms(own)} + server ${ms(t.dbCpuMsPerCall)})`;
}

export function resultTable(results: DialectResult[]): string[] {
  const rows: string[][] = [];
  for (const r of results) {
    const base = median(r.baseline.wallMs);
    const baseCell = `${ms(base)} / ${ms(percentile(r.baseline.wallMs, 0.95))}`;
    const line = (query: string, t: Timing, bold: boolean) => {
      const m = median(t.wallMs);
      rows.push([
        name(r.dialect),
        `${r.load.records.toLocaleString('en')} (rollup ${r.load.rollupRows.toLocaleString('en')})`,
        query,
        bold ? `**${ms(m)}**` : ms(m),
        ms(percentile(t.wallMs, 0.95)),
        cpu(t),
        baseCell,
        `${(base / m).toFixed(base / m < 10 ? 1 : 0)}×`,
      ]);
    };
    line(`\`readUsage\` (service call), PROJECT × DAY, 30 days → ${r.cells} rows`, r.service, true);
    if (r.graphql)
      line('GraphQL `usage` over HTTP (gateway, API token; rows with project names)', r.graphql, false);
    else if (r.graphqlError)
      rows.push([
        name(r.dialect),
        '',
        `GraphQL over HTTP: failed (${r.graphqlError})`,
        '–',
        '–',
        '–',
        baseCell,
        '–',
      ]);
    line('baseline: `usage_records` GROUP BY project, UTC day (SQL)', r.baseline, false);
  }
  return [
    '| database | ledger rows | query | median ms | p95 ms | CPU ms/query | baseline median / p95 ms | baseline ÷ this |',
    '| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ];
}

export interface SectionContext {
  command: string;
  started: number;
  loadStart: string;
  loadEnd: string;
  iterations: number;
  baselineIterations: number;
  warmup: number;
}

export function section(results: DialectResult[], c: SectionContext): string[] {
  const cpus = os.cpus();
  const first = results[0];
  return [
    START,
    `## Usage query over ${(first?.load.records ?? 0).toLocaleString('en')} ledger rows (\`npm run bench:usage\`)`,
    '',
    `Command: \`${c.command}\` (bench/usage.ts)  `,
    `Date: ${new Date(c.started).toISOString()}; ${cpus.length} × ${cpus[0]?.model ?? '?'} (shared), Node ${process.version}; load average at start / end: ${c.loadStart} / ${c.loadEnd}; code ${gitDescribe()}.`,
    '',
    'Data (seeded, the same on both databases): a month (30 days) of GPU jobs — ' +
      `${first ? first.load.jobs.toLocaleString('en') : '?'} jobs, 90% in the big tenant the query reads (40 projects, 8 queues), the rest in two small ones; ` +
      '200 users, 4 flavors (one MIG), 4 priority classes; the ledger rows the writer makes with 60-second checkpoints ' +
      '(one per job × flavor × checkpoint interval, cut at UTC hours), inserted in time order, and the `usage_hourly` rollup summed with the ' +
      "writer's own `hourlyDeltas`. Schema from the migrations; PostgreSQL 15 (local, scratch database) after `VACUUM ANALYZE` (what autovacuum does), SQLite file in WAL mode.",
    '',
    `Query: \`readUsage\` (src/services/metering/usage.ts) as a tenant admin, groupBy [PROJECT], granularity DAY, the whole month; a fresh request context per call; ` +
      `${c.warmup} untimed calls, then ${c.iterations} timed (baseline: ${c.baselineIterations}), one at a time. Baseline: the same grouping (project, UTC day) straight from \`usage_records\` with SQL, in the same run. ` +
      "The GraphQL row asks a gateway started as `npm start` runs it (NODE_ENV=production) on the same database, with a tenant admin's API token, over HTTP on localhost. " +
      'CPU per query: this process (ORM, driver, and on SQLite the database itself; over HTTP: the gateway process instead) + on PostgreSQL the server backends (/proc; 10 ms ticks, so the mean over the run). ' +
      'Both answers are compared cell by cell (GPU-seconds, cost, jobs) before timing.',
    '',
    ...resultTable(results),
    ...results.flatMap((r) =>
      r.mismatches.length
        ? ['', `**${name(r.dialect)}: rollup and ledger disagree**: ${r.mismatches.join('; ')}`]
        : [],
    ),
    '',
    `Load (generation + INSERTs, ${results.map((r) => `${name(r.dialect)} ${(r.load.loadMs / 1000).toFixed(0)} s = ${Math.round(r.load.records / (r.load.loadMs / 1000)).toLocaleString('en')} ledger rows/s`).join(', ')}) goes through the drivers' bulk paths (bench/usage/bulk.ts), not the ledger writer's.`,
    END,
  ];
}

/** Replaces this bench's section (between START and END) in `file`, or appends it. */
export function writeSection(file: string, lines: string[]): void {
  writeResultsSection(file, START, END, lines.join('\n'));
}
