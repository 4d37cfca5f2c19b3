// Keeps bench:usage from rotting: its whole harness on a tiny scenario (SQLite), and the
// pieces a wrong number would come from (row counts, interval cutting, the results section).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { END, resultTable, START, writeSection } from '../../bench/usage/report.js';
import { runUsageBench } from '../../bench/usage/run.js';
import {
  buildScenario,
  DEFAULT_SCENARIO,
  emitRows,
  HOUR_MS,
  intervalsOf,
} from '../../bench/usage/scenario.js';

describe('bench:usage harness', () => {
  it('loads 2,000 ledger rows into SQLite, and readUsage over the rollup agrees with the raw ledger', async () => {
    const results = await runUsageBench({
      dialects: ['sqlite'],
      scenario: { rows: 2000 },
      iterations: 2,
      baselineIterations: 1,
      warmup: 0,
      graphql: false,
    });
    expect(results).toHaveLength(1);
    const [r] = results;
    expect(r!.load.records).toBe(2000);
    expect(r!.load.rollupRows).toBeGreaterThan(0);
    expect(r!.cells).toBeGreaterThan(0);
    expect(r!.mismatches).toEqual([]);
    expect(r!.service.wallMs).toHaveLength(2);
    expect(r!.baseline.wallMs).toHaveLength(1);
    const table = resultTable(results);
    expect(table).toHaveLength(4);
    expect(table[2]).toMatch(/^\| SQLite \| 2,000 \(rollup \d.*readUsage/);
    expect(table[3]).toMatch(/baseline/);
  }, 60_000);

  it('the scenario gives exactly the rows asked for, in time order, none crossing an hour', async () => {
    const scenario = buildScenario({ ...DEFAULT_SCENARIO, rows: 5000 });
    let count = 0;
    let last = -Infinity;
    await emitRows(scenario, 700, async (rows) => {
      expect(rows.length).toBeLessThanOrEqual(700);
      for (const r of rows) {
        const start = r.startedAt.getTime();
        expect(start).toBeGreaterThanOrEqual(last - 60_000);
        last = Math.max(last, start);
        expect(Math.floor(start / HOUR_MS)).toBe(Math.floor((r.endedAt.getTime() - 1) / HOUR_MS));
        expect(r.durationMs).toBeGreaterThan(0);
      }
      count += rows.length;
    });
    expect(count).toBe(5000);
    expect(scenario.rows).toBe(5000);
  });

  it('intervals: cut at checkpoints and hours, covering the span exactly', () => {
    const h = Date.UTC(2026, 10, 1, 5);
    const parts = intervalsOf(h - 90_000, h + 30_000, 60_000, 17_000);
    expect(parts[0]![0]).toBe(h - 90_000);
    expect(parts[parts.length - 1]![1]).toBe(h + 30_000);
    for (let i = 1; i < parts.length; i++) expect(parts[i]![0]).toBe(parts[i - 1]![1]);
    expect(parts.some(([, b]) => b === h)).toBe(true);
  });

  it('writeSection replaces its own section and keeps the rest of the file', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'usage-bench-')), 'RESULTS.md');
    fs.writeFileSync(file, '# Results\n\nbefore\n');
    writeSection(file, [START, 'first', END]);
    fs.appendFileSync(file, '\nreading\n');
    writeSection(file, [START, 'second', END]);
    expect(fs.readFileSync(file, 'utf8')).toBe(
      `# Results\n\nbefore\n\n${START}\nsecond\n${END}\n\nreading\n`,
    );
  });
});
