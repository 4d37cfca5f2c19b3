// The scheduler core's read-only views: a job's explanation, a preview, queue and node status, and
// the pending pod shapes. Part of types.ts.
import type { FlavorSpec, IsolationLevel, ResourceName } from './config-types.js';
import type {
  Admission,
  HoldInfo,
  NodeFit,
  PendingReasonCode,
  PreemptedBy,
  Preemption,
  QuotaShortfall,
} from './job-types.js';

export interface JobExplanation {
  jobId: string;
  queue: string;
  state: 'pending' | 'admitted';
  /** Pending only. */
  reason?: PendingReasonCode;
  /** Plain text without any other job's id. */
  message?: string;
  shortfall?: QuotaShortfall;
  nodeFit?: NodeFit[];
  preemptedBy?: PreemptedBy;
  blockedBy?: string;
  /** `BudgetExhausted`: the hold and its numbers. */
  hold?: HoldInfo;
  /** `ReclaimHold`: the instant (ms epoch) before which the reclaimed job is not admitted again. */
  reclaimHoldUntil?: number;
  /** 1-based position among the queue's pending jobs in queue order (priority, then submit time). */
  positionInQueue?: number;
  queuePending?: number;
  /** 1-based position in the cohort tree's admission order (fair share, borrowing and priority included). */
  positionInCohort?: number;
  cohortPending?: number;
  /**
   * Estimated admission time (ms epoch, the backend's clock): a forward simulation of the tree's
   * running jobs' expected ends and the jobs ahead in admission order (README, "ETA"). Null when
   * it cannot be known, with `etaUnknownReason`.
   */
  eta?: number | null;
  etaUnknownReason?: EtaUnknownReason;
  /** Admitted only. */
  admission?: Admission;
  /** Admitted only: admission time + expectedDurationMs (or maxRunMs), if known. */
  expectedEnd?: number | null;
  /** How often this job has been preempted, and the last preemption. */
  preemptions: number;
  lastPreemption?: Preemption;
  /** Pending only: nodes reserved for this job from `start` (it has waited long; README, "Reservations"). */
  reservation?: { flavor: string; nodes: string[]; start: number };
  /** Pending only: reserved nodes with room for its pods that it may not use (it would borrow and end after `start`). */
  keptOffReserved?: { nodes: number; start: number };
}

/**
 * Why a pending job has no ETA: `NoDeclaredDuration` — a job holding capacity (running, or ahead of
 * it and admitted first in the simulation) has neither an expected duration nor a max run time;
 * `TooFarAhead` — beyond the simulation's bounds (position or steps); `NeverFits` — even when every
 * job with a known end has ended it does not fit (quota, nodes, gang shape, or behind a StrictFIFO
 * head that never fits); `WindowClosed` — it waits for a time window to open; `BudgetExhausted` — it
 * is held by a spent hard budget until the hold is lifted.
 */
export type EtaUnknownReason =
  | 'NoDeclaredDuration'
  | 'TooFarAhead'
  | 'NeverFits'
  | 'WindowClosed'
  | 'BudgetExhausted'
  | 'ReclaimHold';

export interface Preview {
  admissible: boolean;
  /** Where it would land (not applied). */
  admission?: Admission;
  borrowed: boolean;
  wouldPreempt: Preemption[];
  reason?: PendingReasonCode;
  message?: string;
  shortfall?: QuotaShortfall;
  nodeFit?: NodeFit[];
  /** `BudgetExhausted`: the hold the job would be held by. */
  hold?: HoldInfo;
}

export interface QueueResourceStatus {
  flavor: string;
  resource: ResourceName;
  nominal: number;
  borrowingLimit?: number;
  lendingLimit?: number;
  used: number;
  /** Usage above nominal. */
  borrowed: number;
  /** Part of this queue's unused lendable nominal that other queues of the cohort currently use (attributed
   * as min(unused lendable, borrowed by siblings)).
   */
  lent: number;
}

export interface QueueStatus {
  name: string;
  tenant: string;
  cohort?: string;
  weight: number;
  isolation: IsolationLevel;
  queueingStrategy: 'StrictFIFO' | 'BestEffortFIFO';
  /** Index of the open time window, or null when base quotas apply. */
  activeWindow: number | null;
  resources: QueueResourceStatus[];
  /** Weighted dominant resource share (0 when not borrowing; Infinity when borrowing with weight 0). */
  weightedShare: number;
  pendingCount: number;
  admittedCount: number;
}

export interface GpuStatus {
  index: number;
  /** In flavor units: 1 for a whole GPU, slicesPerGpu for mig/timeslice. */
  capacity: number;
  free: number;
}

export interface NodeStatus {
  name: string;
  pool: string;
  flavor: string;
  kind: FlavorSpec['kind'];
  dedicatedTenant?: string;
  capacity: { gpu: number; cpu: number; memory: number };
  free: { gpu: number; cpu: number; memory: number };
  gpus: GpuStatus[];
}

export interface PendingShape {
  /** Flavors the pod may use (its preference list, or the queue's flavors). */
  flavors: string[];
  perPod: { gpu: number; cpu: number; memory: number };
  /** Pending pods of this shape (sum of counts). */
  pods: number;
  jobs: number;
}
