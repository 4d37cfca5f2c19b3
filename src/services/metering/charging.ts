// Charging as a use case: the ledger writer (src/metering) with what the installation knows
// (the backend's time scale, the utilization samples, the currency) and what must follow a
// charge in the same transaction (budget thresholds). Every state change that ends or
// checkpoints a hold calls `charge` inside its own transaction.
import { type EntityManager, LockMode } from '@mikro-orm/core';
import { UtilizationSamples } from '../../core/metering/index.js';
import type { AdmissionHold } from '../../core/scheduling/index.js';
import type { Job } from '../../persistence/jobs/index.js';
import type { UsageCloser } from '../../persistence/metering/index.js';
import { loadMeteringTables, type MeteringTables } from '../../persistence/metering/index.js';
import { chargeJobs, chargeStopping } from './ledger.js';

export interface MeteringSettings {
  /** The backend's declared time / real time (see LedgerContext.timeScale). */
  timeScale: number;
  /** The price book's currency (FAIRWAY_CURRENCY). */
  currency: string;
  dialect: 'sqlite' | 'postgresql';
  /**
   * Budget thresholds crossed by what has been charged, evaluated once per checkpoint in a
   * transaction of its own (budgets.ts). Not after every charge: a month-to-date sum per
   * finished job would grow with the month (bench:ledger).
   */
  afterCheckpoint?: (em: EntityManager, nowMs: number, currency: string) => Promise<unknown>;
  /**
   * The backend's grace for stopping runs (port.ts stopGraceSeconds): a preempted run is charged
   * until the backend says its pods are gone, at most this long (or its policy's grace). Absent:
   * a preempted run's charge ends at the preemption.
   */
  stopGraceSeconds?: number;
  /** Hard budgets spent this period, as the core's admission holds (budgets.ts). */
  holds?: (em: EntityManager, nowMs: number, currency: string) => Promise<AdmissionHold[]>;
}

export class Metering {
  /** GPU utilization samples of running jobs on this replica, until charged. */
  readonly utilization = new UtilizationSamples();

  constructor(readonly settings: MeteringSettings) {}

  /** Lock options for reading job rows that are about to be charged (rows lock only on PostgreSQL). */
  get jobLock(): { lockMode?: LockMode.PESSIMISTIC_WRITE } {
    return this.settings.dialect === 'postgresql' ? { lockMode: LockMode.PESSIMISTIC_WRITE } : {};
  }

  /** The admission holds in force at `nowMs` (none when no budgets are wired). */
  async holdsAt(em: EntityManager, nowMs: number): Promise<AdmissionHold[]> {
    return this.settings.holds ? this.settings.holds(em, nowMs, this.settings.currency) : [];
  }

  /** After a checkpoint: budget thresholds (fired once per period by their unique key). */
  async checkpointed(em: EntityManager, nowMs: number): Promise<void> {
    if (this.settings.afterCheckpoint) await this.settings.afterCheckpoint(em, nowMs, this.settings.currency);
  }

  /**
   * Charges the jobs' open intervals up to `until` (see chargeJobs; per job when a function), in the
   * caller's transaction. Returns the tenants charged.
   */
  async charge(
    em: EntityManager,
    jobs: readonly Job[],
    until: number | ((job: Job) => number),
    closedBy: UsageCloser,
  ): Promise<Set<string>> {
    if (!jobs.some((j) => j.meteredFrom != null)) {
      if (closedBy !== 'checkpoint') for (const job of jobs) job.meteredFrom = null;
      return new Set();
    }
    const tables = await this.tablesOf(em);
    const tenants = await chargeJobs(em, jobs, until, closedBy, {
      tables,
      timeScale: this.settings.timeScale,
      utilization: this.utilization,
    });
    if (closedBy !== 'checkpoint') for (const job of jobs) this.utilization.forget(job.id);
    return tenants;
  }

  /**
   * Charges the jobs' stopping runs (preempted, pods within their grace) up to `until`, capped at
   * each one's grace, and clears them; in the caller's transaction (see chargeStopping).
   */
  async chargeStopping(
    em: EntityManager,
    jobs: readonly Job[],
    until: number | ((job: Job) => number),
  ): Promise<Set<string>> {
    const stopping = jobs.filter((j) => j.stoppingSince != null);
    if (!stopping.length) return new Set();
    return chargeStopping(em, stopping, until, {
      tables: await this.tablesOf(em),
      timeScale: this.settings.timeScale,
    });
  }

  /**
   * The price book, read once per transaction: a batch that charges in several calls (succeeded
   * and failed jobs) reads it once. Keyed by the transaction's entity manager, so a price
   * changed since is seen by the next transaction.
   */
  private readonly tables = new WeakMap<EntityManager, Promise<MeteringTables>>();

  private tablesOf(em: EntityManager): Promise<MeteringTables> {
    let tables = this.tables.get(em);
    if (!tables) {
      tables = loadMeteringTables(em);
      this.tables.set(em, tables);
      // A failed read is not remembered (the transaction rolls back anyway).
      tables.catch(() => this.tables.delete(em));
    }
    return tables;
  }
}
