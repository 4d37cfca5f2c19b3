// The ledger bench's harness, without the command line. Per database: seed N running jobs, then
// checkpoint them as the leader does (fenced transactions of 500 jobs read FOR UPDATE on
// PostgreSQL, `metering.charge(em, jobs, now, 'checkpoint')`, flush, commit) in turn with three
// writers: the server's Metering (ledger rows, rollup; budgets checked once per checkpoint), the same
// without the budget
// check (ledger only), and the baseline (a Metering that only writes `meteredFrom = now`), the
// clock a minute on each time; then close jobs one at a time through the backend report path
// (applyBackendEvent 'succeeded') with the three in turn. Interleaving keeps the machine's load
// drift out of the differences. A baseline checkpoint runs before each metered one, so each
// metered checkpoint charges exactly 60 s (the baseline's minute is never charged).
import type { EntityManager } from '@mikro-orm/core';
import { Job } from '../../src/persistence/jobs/entities.js';
import { type UsageCloser, UsageRecord } from '../../src/persistence/metering/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import { evaluateBudgets } from '../../src/services/metering/budgets.js';
import { Metering } from '../../src/services/metering/charging.js';
import { applyBackendEvent } from '../../src/services/scheduling/backend-events.js';
import { type FencedWriter, writeFenced } from '../../src/services/scheduling/cycle-writer.js';
import { LeaderEpochs } from '../../src/services/scheduling/leader-epoch.js';
import { type Dialect, openScratch } from '../usage/load.js';
import { backendCpu } from '../usage/measure.js';
import { seedRollupHistory } from './history.js';
import { planJobs, seedLedgerScenario, T0 } from './scenario.js';
import { ExpectedCharges, type Verification, verifyLedger } from './verify.js';

export interface LedgerBenchOptions {
  dialects: Dialect[];
  jobs: number;
  /** Timed checkpoints of each kind (after one untimed of each). */
  checkpoints: number;
  /** Jobs closed one at a time, of each kind (metered, ledger only, baseline: needs 3 × closes <= jobs). */
  closes: number;
  batch: number;
  seed: number;
  /** Rollup rows of month-to-date history for the bench's tenants (history.ts); 0: none. */
  historyRows: number;
  postgresUrl: string;
  postgresDatabase: string;
  keep: boolean;
  progress: (line: string) => void;
}

export const DEFAULT_LEDGER_OPTIONS: LedgerBenchOptions = {
  dialects: ['sqlite', 'postgresql'],
  jobs: 2000,
  checkpoints: 20,
  closes: 500,
  batch: 500,
  seed: 12,
  historyRows: 0,
  postgresUrl: 'postgres://postgres@127.0.0.1:5432/postgres',
  postgresDatabase: 'fw_bench_ledger',
  keep: false,
  progress: () => {},
};

/** Samples of one kind of operation: one entry per transaction. */
export class Samples {
  readonly wallMs: number[] = [];
  readonly nodeCpuMs: number[] = [];
  readonly jobs: number[] = [];
  /** PostgreSQL backends' CPU summed over the operations (null: SQLite or unreadable). */
  dbCpuMs: number | null = null;
  /** Whole checkpoints (every batch of one pass): wall ms and rows written. */
  readonly passWallMs: number[] = [];
  readonly passRows: number[] = [];

  get totalJobs(): number {
    return this.jobs.reduce((a, b) => a + b, 0);
  }
}

export interface LedgerDialectResult {
  dialect: Dialect;
  where: string;
  jobs: number;
  /** ledgerOnly: metered without the budget check (afterCheckpoint unset), to tell the two apart. */
  checkpoint: { metered: Samples; ledgerOnly: Samples; baseline: Samples };
  close: { metered: Samples; ledgerOnly: Samples; baseline: Samples };
  /** Rollup rows of month-to-date history seeded before the run. */
  historyRows: number;
  /** Ledger rows the metered closes (with and without the budget check) wrote. */
  closeRows: number;
  verification: Verification;
  hourCrossings: number;
}

/** A Metering that writes only the state the real one would: the baseline's writer. */
class StateOnly extends Metering {
  override async charge(
    _em: EntityManager,
    jobs: readonly Job[],
    until: number,
    closedBy: UsageCloser,
  ): Promise<Set<string>> {
    for (const job of jobs) job.meteredFrom = closedBy === 'checkpoint' ? until : null;
    return new Set();
  }
}

export async function runLedgerBench(
  partial: Partial<LedgerBenchOptions> = {},
): Promise<LedgerDialectResult[]> {
  const opts = { ...DEFAULT_LEDGER_OPTIONS, ...partial };
  if (3 * opts.closes > opts.jobs)
    throw new Error(`closes (${opts.closes}) × 3 must not exceed jobs (${opts.jobs})`);
  const plan = planJobs(opts.jobs, opts.seed);
  const results: LedgerDialectResult[] = [];
  for (const dialect of opts.dialects) {
    const note = (line: string) => opts.progress(`${dialect}: ${line}`);
    const db = await openScratch(dialect, {
      adminUrl: opts.postgresUrl,
      database: opts.postgresDatabase,
      keep: opts.keep,
    });
    try {
      const seeded = await seedLedgerScenario(db.orm, plan);
      const ids = seeded.jobs;
      const historyRows = await seedRollupHistory(db.orm, dialect, seeded, opts.historyRows, T0);
      if (historyRows) note(`${historyRows.toLocaleString('en')} rollup rows of month-to-date history`);
      const byId = new Map(ids.map((id, i) => [id, plan.jobs[i]!]));
      note(`${ids.length} running jobs seeded in ${db.where}`);
      const epochs = new LeaderEpochs(dialect);
      const epoch = await epochs.takeOver(systemEntityManager(db.orm));
      const settings = { timeScale: 1, currency: 'USD', dialect };
      const writer = (metering: Metering): FencedWriter => ({
        em: systemEntityManager(db.orm),
        dialect,
        epochs,
        epoch,
        metering,
      });
      // As the server wires it: budgets evaluated once per checkpoint (app.ts).
      const metered = new Metering({
        ...settings,
        afterCheckpoint: (em, nowMs, currency) => evaluateBudgets(em, null, nowMs, currency),
      });
      const ledgerOnly = new Metering(settings);
      const stateOnly = new StateOnly(settings);
      const expected = new ExpectedCharges();
      /** Where each job's open interval starts, as the bench knows it. */
      const from = new Map(ids.map((id) => [id, T0]));
      const cpuOf = async () => (dialect === 'postgresql' ? backendCpu(db.orm) : null);
      const countRows = async () => systemEntityManager(db.orm).count(UsageRecord, {});

      const result: LedgerDialectResult = {
        dialect,
        where: db.where,
        jobs: ids.length,
        hourCrossings: 0,
        closeRows: 0,
        historyRows,
        checkpoint: { metered: new Samples(), ledgerOnly: new Samples(), baseline: new Samples() },
        close: { metered: new Samples(), ledgerOnly: new Samples(), baseline: new Samples() },
        verification: { rows: 0, gpuSeconds: 0, expectedGpuSeconds: 0, rollupRows: 0, problems: [] },
      };

      /** The leader's checkpoint (leader-session.ts), each batch timed; `into` null: untimed. */
      const checkpoint = async (metering: Metering, now: number, into: Samples | null) => {
        const rowsBefore = into ? await countRows() : 0;
        const dbBefore = into ? await cpuOf() : null;
        let after: string | null = null;
        let passMs = 0;
        for (;;) {
          let last: string | null = null;
          let charged: Job[] = [];
          const cpu = process.cpuUsage();
          const t = performance.now();
          await writeFenced(writer(metering), async (em, jobLock) => {
            const jobs = await em.find(
              Job,
              after === null ? { state: 'RUNNING' } : { state: 'RUNNING', id: { $gt: after } },
              { orderBy: { id: 'asc' }, limit: opts.batch, populate: ['queue'], ...jobLock },
            );
            await metering.charge(em, jobs, now, 'checkpoint');
            charged = jobs;
            last = jobs.length === opts.batch ? jobs[jobs.length - 1]!.id : null;
          });
          const wall = performance.now() - t;
          const used = process.cpuUsage(cpu);
          passMs += wall;
          if (into && charged.length) {
            into.wallMs.push(wall);
            into.nodeCpuMs.push((used.user + used.system) / 1000);
            into.jobs.push(charged.length);
          }
          for (const job of charged) {
            if (metering !== stateOnly) expected.add(byId.get(job.id)!, from.get(job.id)!, now);
            from.set(job.id, now);
          }
          if (last === null) break;
          after = last;
        }
        // The budget check the leader runs after the batches (none for ledger only and baseline).
        const budgetStart = performance.now();
        await writeFenced(writer(metering), (em) => metering.checkpointed(em, now));
        passMs += performance.now() - budgetStart;
        if (into) {
          into.passWallMs.push(passMs);
          into.passRows.push((await countRows()) - rowsBefore);
          addDbCpu(into, dbBefore, await cpuOf());
        }
      };

      let clock = T0;
      const tick = () => (clock += 60_000);
      // Untimed first round: the first charge of each job also asks whether it is its first.
      await checkpoint(metered, tick(), null);
      await checkpoint(stateOnly, tick(), null);
      await checkpoint(ledgerOnly, tick(), null);
      await checkpoint(stateOnly, tick(), null);
      for (let k = 0; k < opts.checkpoints; k++) {
        await checkpoint(metered, tick(), result.checkpoint.metered);
        await checkpoint(stateOnly, tick(), result.checkpoint.baseline);
        await checkpoint(ledgerOnly, tick(), result.checkpoint.ledgerOnly);
        await checkpoint(stateOnly, tick(), result.checkpoint.baseline);
        if ((k + 1) % 5 === 0) note(`${k + 1} / ${opts.checkpoints} checkpoints`);
      }

      // Closes: a backend finish report per job, in its own transaction, a second apart;
      // metered, baseline, ledger only in turn.
      const closing = ids.slice(0, 3 * opts.closes);
      const rowsBeforeCloses = await countRows();
      for (let i = 0; i < closing.length; i++) {
        const jobId = closing[i]!;
        const kind = (['metered', 'baseline', 'ledgerOnly'] as const)[i % 3]!;
        const into = result.close[kind];
        const isMetered = kind !== 'baseline';
        // Half seconds: not whole, yet a binary fraction, so whole-GPU sums stay exact in any order.
        const at = clock + 1000 * (i + 1) + 500;
        const dbBefore = await cpuOf();
        const cpu = process.cpuUsage();
        const t = performance.now();
        const { finished } = await applyBackendEvent(
          writer(kind === 'metered' ? metered : kind === 'ledgerOnly' ? ledgerOnly : stateOnly),
          { type: 'succeeded', jobId, at },
        );
        into.wallMs.push(performance.now() - t);
        const used = process.cpuUsage(cpu);
        into.nodeCpuMs.push((used.user + used.system) / 1000);
        into.jobs.push(1);
        addDbCpu(into, dbBefore, await cpuOf());
        if (!finished) throw new Error(`job ${jobId} was not finished by its report`);
        if (isMetered) expected.add(byId.get(jobId)!, from.get(jobId)!, at);
      }
      result.closeRows = (await countRows()) - rowsBeforeCloses;
      note(`${opts.closes} × 3 jobs closed one at a time`);

      result.hourCrossings = expected.crossings;
      result.verification = await verifyLedger(
        db.orm,
        dialect,
        expected,
        ids.length,
        Math.floor(T0 / 3_600_000) * 3_600_000,
      );
      const v = result.verification;
      note(
        `ledger ${v.rows} rows, Σ gpuSeconds ${v.gpuSeconds} (expected ${v.expectedGpuSeconds}); rollup ${v.rollupRows} rows; ${v.problems.length ? `PROBLEMS: ${v.problems.join('; ')}` : 'exact'}`,
      );
      results.push(result);
    } finally {
      await db.drop();
    }
  }
  return results;
}

function addDbCpu(
  into: Samples,
  before: Map<number, number> | null,
  after: Map<number, number> | null,
): void {
  if (!before || !after) return;
  let total = 0;
  for (const [pid, ms] of after) total += ms - (before.get(pid) ?? 0);
  into.dbCpuMs = (into.dbCpuMs ?? 0) + total;
}
