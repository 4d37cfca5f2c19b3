// A follower's read model (scheduler-service.ts): the core it answers positions and usage from,
// rebuilt from the database when the leader says the state moved, and brought to a committed
// configuration change in place when it only alters queue and cohort specs (config-reload.ts).
import type { EntityManager } from '@mikro-orm/core';
import type { Scheduler } from '../../core/scheduling/index.js';
import { applyInPlace, loadConfig } from './config-reload.js';
import { type CoreLoaderOptions, type LoadedCore, loadCore } from './core-loader.js';

export interface FollowerHost {
  readonly loaderOptions: CoreLoaderOptions;
  /** This replica leads now: the leader's own core wins, nothing is installed. */
  leading(): boolean;
  stopped(): boolean;
  em(): EntityManager;
  core(): Scheduler;
  install(loaded: LoadedCore): void;
  reconfigured(queueIds: Map<string, string>): void;
  logError(error: unknown): void;
  recoveryRetryMs?: number;
}

export class FollowerModel {
  private timer: NodeJS.Timeout | null = null;
  private failing = false;
  /** Read-model work one at a time, in arrival order: a rebuild that read the database before a
   * configuration change is installed before that change is applied, never after it.
   */
  private chain: Promise<unknown> = Promise.resolve();

  constructor(private readonly host: FollowerHost) {}

  /** Builds the read model anew from the database (after the work queued before). */
  rebuild(): Promise<void> {
    return this.serial(async () => {
      const loaded = await loadCore(this.host.em(), this.host.loaderOptions, true);
      if (!this.host.leading()) this.host.install(loaded);
    });
  }

  /** A configuration change was committed: in place when it can, else rebuilt; a failure retries a rebuild. */
  configChanged(): void {
    void this.serial(async () => {
      const stored = await loadConfig(this.host.em(), this.host.loaderOptions.timeScale);
      if (this.host.leading() || this.host.stopped()) return;
      if (applyInPlace(this.host.core(), stored)) this.host.reconfigured(stored.queueIds);
      else {
        const loaded = await loadCore(this.host.em(), this.host.loaderOptions, true);
        if (!this.host.leading()) this.host.install(loaded);
      }
    }).catch((error) => this.failed(error));
  }

  /** A rebuild soon; calls meanwhile coalesce into it. */
  scheduleRebuild(afterMs: number): void {
    if (this.timer || this.host.stopped()) return;
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.host.leading() || this.host.stopped()) return;
      this.rebuild().then(
        () => (this.failing = false),
        (error) => this.failed(error),
      );
    }, afterMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
  }

  /** The database is down: keep the last read model, say so once, and try again. */
  private failed(error: unknown): void {
    if (!this.failing) this.host.logError(error);
    this.failing = true;
    setTimeout(() => this.scheduleRebuild(0), this.host.recoveryRetryMs ?? 1000).unref();
  }

  private serial(work: () => Promise<void>): Promise<void> {
    const next = this.chain.then(work, work);
    this.chain = next.catch(() => undefined);
    return next;
  }
}
