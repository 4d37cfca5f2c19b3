import type { MikroORM } from '@mikro-orm/core';
import type { Admission, Preemption, QueueStatus, Scheduler } from '../../core/scheduling/index.js';
import type { EventBus } from '../../events/index.js';
import type { Metering } from '../metering/index.js';
import type { CoreLoaderOptions, LoadedCore } from './core-loader.js';
import type { LeaderEpochs } from './leader-epoch.js';
import type { LeaderTask } from './leader-task.js';
import type { OutboxDispatcher } from './outbox.js';
import type { WindowAnnouncer } from './service-helpers.js';

/** What a leader session needs from the service that runs it. */
export interface LeaderHost {
  readonly options: {
    orm: MikroORM;
    dialect: 'sqlite' | 'postgresql';
    events: EventBus;
    now: () => number;
    logError: (error: unknown) => void;
    debounceMs?: number;
    resyncIntervalMs?: number;
    recoveryRetryMs?: number;
    /** Running jobs' open intervals are written to the ledger this often. */
    meteringIntervalMs?: number;
    /** Told after each admission cycle (metrics); a sliced cycle tells each slice. */
    observeCycle?: (
      seconds: number,
      admitted: readonly Admission[],
      preempted: readonly Preemption[],
    ) => void;
    /**
     * An admission cycle runs in slices of about this many milliseconds, the event loop answering
     * requests between them (DEFAULT_CYCLE_SLICE_MS when unset; 0: each cycle in one turn).
     */
    cycleSliceMs?: number;
    groupCommitMs?: number;
    /** See SchedulerServiceOptions.disruptionBackoff. */
    disruptionBackoff?: { baseMs: number; maxMs: number };
    /** Periodic leader work (governance loops), each in the leader's serial turn; see LeaderTask. */
    leaderTasks?: readonly LeaderTask[];
  };
  /** How the core is loaded from the database (clock, placement, the backend's time scale). */
  readonly loaderOptions: CoreLoaderOptions;
  readonly core: Scheduler;
  /** The core's status of a queue; null for a queue it does not know. */
  queueStatus(name: string): QueueStatus | null;
  readonly queueIds: Map<string, string>;
  readonly epochs: LeaderEpochs;
  readonly outbox: OutboxDispatcher;
  readonly metering: Metering;
  readonly windows: WindowAnnouncer;
  /** Makes a freshly loaded core the current one (and notifies state listeners). */
  install(loaded: LoadedCore): void;
  /** The current core took a configuration change in place: the queue ids, and state listeners told. */
  reconfigured(queueIds: Map<string, string>): void;
  /** Runs work after all work queued before it: leader work never interleaves. */
  serial<T>(work: () => Promise<T>): Promise<T>;
  stateChanged(): void;
  log(message: string): void;
  /** Another replica leads: the host ends this session and becomes a follower. */
  demote(reason: string): void;
}
