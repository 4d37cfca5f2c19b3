// What a governance replay (governance.ts) is given and what it reports: data only, so that the
// engine's outcome types can name them without importing the replay.
import type {
  ControllerAdjustment,
  ControllerSettings,
  LimitSetting,
  UtilizationProfile,
  WorkloadType,
} from '../../core/governance/index.js';

export interface GovernanceOptions {
  /** Seeds the workload types (jobs without a trace type) and the utilization profiles. */
  seed: number;
  /** Flag jobs in their idle tail and act on them by their queue's policy (governed queues only). */
  idleReclaim: boolean;
  /** Run the controller every window (the controller policy). */
  controller: boolean;
  /** Controller settings; windowMs default 5 min of virtual time. */
  controllerSettings?: Partial<ControllerSettings>;
  /** The SLA deadline the controller's per-window attainment uses (ms, default 60 s). */
  slaMs?: number;
}

/** One run of a job, with where in the job's work it started (for its utilization). */
export interface ProbeSegment {
  job: number;
  start: number;
  end: number;
  /** Run time already done when it started (kept by a checkpoint). */
  offsetMs: number;
  /** The part of it kept when it was preempted (all of it when not preempted). */
  keptMs: number;
}

export interface IdleCounts {
  flagged: number;
  /** Flags that only notified (NOTIFY, or RECLAIM_IF_BORROWING while the queue was within its nominal). */
  notified: number;
  /** Flags that reclaimed: the job's work was done, so it ends then (finished early). */
  reclaimed: number;
  /** GPU-time the reclaimed jobs would still have held idle (GPU-ms). */
  freedGpuMs: number;
}

export interface GovernanceOutcome {
  seed: number;
  idleReclaim: boolean;
  controller: boolean;
  controllerSettings: ControllerSettings;
  /** Policy of each queue (null: ungoverned) in queues-file order. */
  queuePolicies: { queue: string; policy: string | null }[];
  types: WorkloadType[];
  profiles: UtilizationProfile[];
  segments: ProbeSegment[];
  idle: IdleCounts;
  idleByPolicy: Record<string, IdleCounts>;
  /** Every flag, in order. */
  flags: IdleFlag[];
  windows: number;
  adjustments: ControllerAdjustment[];
  /** The settings in force at the end, per adjusted queue. */
  finalSettings: Record<string, LimitSetting>;
}

export interface IdleFlag {
  job: number;
  at: number;
  policy: string;
  reclaimed: boolean;
  freedGpuMs: number;
}
