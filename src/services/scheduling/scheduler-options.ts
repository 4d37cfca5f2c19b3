// What the scheduler service is built with, and the figures it offers /metrics.
import type { MikroORM } from '@mikro-orm/core';
import type { ExecutionBackend } from '../../backends/port.js';
import type { Admission, Preemption, QueueStatus } from '../../core/scheduling/index.js';
import type { EventBus } from '../../events/index.js';
import type { MeteringSettings } from '../metering/index.js';
import type { LeaderTask } from './leader-session.js';
import type { Leadership } from './leadership.js';

/** The figures /metrics reads at scrape time (src/server/metrics/registry.ts), which queries no table
 * itself.
 */
export interface SchedulerStats {
  isLeader(): boolean;
  /** Every stored queue's status, by name (queues the core does not know yet are left out). */
  queueStatuses(): Promise<QueueStatus[]>;
  /** Outbox rows not yet performed. */
  unperformedOutbox(): Promise<number>;
  /** When the oldest outbox row not yet performed was written; null when none. */
  oldestUnperformedOutboxAt(): Promise<Date | null>;
}

export interface SchedulerServiceOptions {
  orm: MikroORM;
  dialect: 'sqlite' | 'postgresql';
  backend: ExecutionBackend;
  events: EventBus;
  now: () => number;
  leadership: Leadership;
  logError: (error: unknown) => void;
  /** Operational messages (leadership taken or lost, paused, resumed). Default: stdout. */
  log?: (message: string) => void;
  /** Wait this long after a wake-up before running a cycle, so a burst is one cycle. */
  debounceMs?: number;
  /** The leader compares its state with the database this often (lost wake-ups, other writers). */
  resyncIntervalMs?: number;
  /** A follower tries to take the leadership this often. */
  leaderRetryMs?: number;
  /** While the database fails, the leader tries to rebuild from it this often. */
  recoveryRetryMs?: number;
  placement?: 'best-fit' | 'fragmentation-aware';
  /** Running jobs' usage is written to the ledger this often (ms). Default 60 000. */
  meteringIntervalMs?: number;
  /** Currency and what follows a charge (budgets); the time scale comes from the backend. */
  metering?: Pick<MeteringSettings, 'currency' | 'afterCheckpoint' | 'holds'>;
  /** Admission cycles run in slices of about this many ms, requests answered between them (default
   * DEFAULT_CYCLE_SLICE_MS; 0: unsliced).
   */
  cycleSliceMs?: number;
  /** Backend reports wait this long for others to share their transaction. Default DEFAULT_GROUP_COMMIT_MS. */
  groupCommitMs?: number;
  /**
   * A disrupted job waits `baseMs × 2^(disruptions − 1)` (at most `maxMs`) before it may be
   * admitted again. Default: none (at once).
   */
  disruptionBackoff?: { baseMs: number; maxMs: number };
  /** Told after each leader admission cycle (metrics): its duration in seconds, with the write, and its
   * decisions.
   */
  observeCycle?: (seconds: number, admitted: readonly Admission[], preempted: readonly Preemption[]) => void;
  /** Periodic leader work (governance loops), run by whichever replica leads. */
  leaderTasks?: readonly LeaderTask[];
}
