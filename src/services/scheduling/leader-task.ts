// Periodic leader work (governance loops) and what it may use of the leader: the interface the
// tasks implement; LeaderSession schedules them.
import type { EntityManager } from '@mikro-orm/core';
import type { BackendEvent } from '../../backends/port.js';
import type { QueueStatus, Scheduler } from '../../core/scheduling/index.js';
import type { EventBus } from '../../events/index.js';

/**
 * Periodic work only the leader does (idle reclaim, the governance controller, quota expiry, probe
 * polling): it runs every `everyMs()` in the leader's serial turn — never beside a cycle or a
 * write — from the takeover until the session ends. A failure pauses the session like any leader
 * work (it recovers by itself); the task runs again at its next period.
 */
export interface LeaderTask {
  name: string;
  /** Milliseconds until the next run (read before each). */
  everyMs(): number;
  run(ctx: LeaderTaskContext): Promise<void>;
  /** Told every backend 'utilization' report while this replica leads (the probe writer), outside the serial
   * turn.
   */
  onUtilization?(event: Extract<BackendEvent, { type: 'utilization' }>): void;
}

export interface LeaderTaskContext {
  /** The leader's clock (the backend's ms). */
  now: number;
  core: Scheduler;
  queueStatus(name: string): QueueStatus | null;
  /** Queue name → queue id. */
  queueIds: ReadonlyMap<string, string>;
  events: EventBus;
  /** Backend time per declared time (the simulated cluster at 60: a declared hour is a minute). */
  timeScale: number;
  /** An EntityManager over every tenant, for reads. */
  em(): EntityManager;
  /** Runs `work` in one transaction fenced by this term's epoch: a stale leader's write is refused and nothing of it commits. */
  write(work: (em: EntityManager) => Promise<void>): Promise<void>;
  /** Asks for an admission cycle soon (after `core.reclaim`, say). */
  wake(): void;
  /** Brings the core to the stored configuration (after queue limits changed in a committed write): in place
   * when only queue and cohort specs changed, else rebuilt (LeaderSession.reconfigure).
   */
  reloadConfig(): Promise<void>;
  /** Whether the term has ended (check after each await). */
  ended(): boolean;
}
