// Keeps bench:ledger from rotting: its whole harness on a tiny scenario (SQLite), the exactness
// check it ends with, its table, and its section of a results file.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { END, resultTable, START, section, writeSection } from '../../bench/ledger/report.js';
import { runLedgerBench } from '../../bench/ledger/run.js';
import { planJobs, unitsByFlavor } from '../../bench/ledger/scenario.js';
import { ExpectedCharges } from '../../bench/ledger/verify.js';

describe('bench:ledger harness', () => {
  it('charges 50 running jobs over 2 rounds of checkpoints on SQLite, the ledger exact and the rollup its sum', async () => {
    const results = await runLedgerBench({
      dialects: ['sqlite'],
      jobs: 50,
      checkpoints: 2,
      closes: 5,
      batch: 20,
    });
    expect(results).toHaveLength(1);
    const [r] = results;
    expect(r!.verification.problems).toEqual([]);
    expect(r!.verification.gpuSeconds).toBe(r!.verification.expectedGpuSeconds);
    expect(r!.verification.rollupRows).toBeGreaterThan(0);
    // 50 jobs in batches of 20: 3 transactions per checkpoint.
    expect(r!.checkpoint.metered.wallMs).toHaveLength(2 * 3);
    expect(r!.checkpoint.metered.jobs).toEqual([20, 20, 10, 20, 20, 10]);
    expect(r!.checkpoint.baseline.wallMs).toHaveLength(4 * 3);
    expect(r!.checkpoint.metered.passRows.every((n) => n >= 50)).toBe(true);
    expect(r!.close.metered.wallMs).toHaveLength(5);
    expect(r!.close.baseline.wallMs).toHaveLength(5);
    expect(r!.closeRows).toBeGreaterThanOrEqual(10);
    const table = resultTable(results);
    expect(table).toHaveLength(6);
    expect(table[2]).toMatch(/^\| SQLite \| checkpoint batch \(20 jobs/);
    expect(table[4]).toMatch(/close one job/);
    const lines = section(results, {
      command: 'npm run bench:ledger',
      started: 0,
      loadStart: '1',
      loadEnd: '1',
      checkpoints: 2,
      closes: 5,
      batch: 20,
    });
    expect(lines.join('\n')).not.toMatch(/FAILED/);
  }, 120_000);

  it('the expected charges: units × ms per flavor, a row per flavor and hour', () => {
    const [job] = planJobs(40, 3).jobs.filter((j) => j.shape === 'two-pod-sets');
    const e = new ExpectedCharges();
    const hour = Date.UTC(2026, 11, 1, 11);
    e.add(job!, hour - 30_000, hour + 30_000);
    expect(e.crossings).toBe(1);
    expect(e.rows).toBe(4);
    for (const [flavor, units] of unitsByFlavor(job!)) expect(e.unitMs.get(flavor)).toBe(units * 60_000);
  });

  it('writeSection replaces its own section and keeps the rest of the file', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ledger-bench-')), 'RESULTS.md');
    fs.writeFileSync(file, '# Results\n\nbefore\n');
    writeSection(file, [START, 'first', END]);
    fs.appendFileSync(file, '\nreading\n');
    writeSection(file, [START, 'second', END]);
    expect(fs.readFileSync(file, 'utf8')).toBe(
      `# Results\n\nbefore\n\n${START}\nsecond\n${END}\n\nreading\n`,
    );
  });
});
