// Governance: isolation-strength policies, runtime probes, idle and held reclaim, the
// second-level controller and quota recommendations — as pure data and functions. The services run
// them on the scheduling leader; the simulator runs the same functions on its virtual clock.
import type { IsolationLevel } from '../scheduling/index.js';

export const WORKLOAD_TYPES = ['TRAINING', 'FINE_TUNING', 'BATCH_INFERENCE', 'ONLINE_INFERENCE'] as const;
export type WorkloadType = (typeof WORKLOAD_TYPES)[number];

export const SLA_CLASSES = ['CRITICAL', 'STANDARD', 'BEST_EFFORT'] as const;
export type SlaClass = (typeof SLA_CLASSES)[number];

/** What a queue's policy does with a flagged (idle or admitted-but-not-running) job. */
export const IDLE_ACTIONS = ['NOTIFY', 'RECLAIM_IF_BORROWING', 'RECLAIM'] as const;
export type IdleAction = (typeof IDLE_ACTIONS)[number];

/** Who may preempt this queue's jobs: nobody, only a lender taking back what they borrowed, or anyone the
 * rules allow.
 */
export const PREEMPTIBILITIES = ['NEVER', 'RECLAIM_ONLY', 'ANY'] as const;
export type Preemptibility = (typeof PREEMPTIBILITIES)[number];

/** A coefficient the controller may move: it starts at `base` (the static setting) and stays within [min, max]. */
export interface CoefficientRange {
  min: number;
  base: number;
  max: number;
}

export interface IdlePolicy {
  /** A running job whose mean GPU utilization stays below this (0..1) … */
  utilizationBelow: number;
  /** … for this long is flagged IDLE. */
  idleForMs: number;
  /** An admitted job whose pods are not running after this long is flagged NOT_RUNNING. */
  notRunningForMs: number;
  action: IdleAction;
}

/**
 * A named isolation strength. The floor of a queue is its nominal quota: never lowered by the
 * controller, and always reachable (at once for what is never lent, by reclaim for what is).
 */
export interface IsolationPolicy {
  name: string;
  description: string;
  /** The core's isolation knob the limits start from (DEDICATED: lends and borrows nothing; BEST_EFFORT:
   * nominal 0).
   */
  level: IsolationLevel;
  /** Share of the queue's unused nominal the cohort may borrow: lendingLimit = nominal × lend (0..1). */
  lend: CoefficientRange;
  /** Borrowing limit as a multiple of nominal (≥ 0); null: unlimited at every setting. */
  borrow: CoefficientRange | null;
  /** A job of this queue running on borrowed capacity is not reclaimed before it has run this long. */
  minRunBeforeReclaimMs: number;
  /** A preempted job of this queue gets this long to checkpoint and stop (Kubernetes:
   * terminationGracePeriodSeconds).
   */
  reclaimGraceMs: number;
  preemptible: Preemptibility;
  idle: IdlePolicy;
}

/** Chooses a policy for queues matching it; null fields match anything. The most specific rule wins, then
 * the earliest.
 */
export interface PolicyRule {
  tier: string | null;
  workloadType: WorkloadType | null;
  slaClass: SlaClass | null;
  policy: string;
}

/** The coefficients in force for a queue (fractions, as in IsolationPolicy). */
export interface LimitSetting {
  lend: number;
  /** null: unlimited borrowing. */
  borrow: number | null;
}

/** One probe reading of a running job. */
export interface ProbeSample {
  at: number;
  /** Mean over the job's GPUs, 0..1. */
  gpuUtilization: number;
  /** GPU memory in use over GPU memory, 0..1; null when the source does not say. */
  memoryUtilization: number | null;
}

export type FlagKind = 'IDLE' | 'NOT_RUNNING';

/** Why a job was flagged, with the numbers its owner sees. */
export interface JobFlag {
  kind: FlagKind;
  /** When the condition started (first low sample, or admission). */
  since: number;
  /** How long it has held at `at`. */
  forMs: number;
  at: number;
  /** IDLE: mean GPU utilization over the idle stretch; NOT_RUNNING: null. */
  meanUtilization: number | null;
  /** The policy's numbers that were crossed. */
  utilizationBelow: number | null;
  limitMs: number;
  action: IdleAction;
  /** What the action came to: reclaim, or notify (also RECLAIM_IF_BORROWING while the queue does not
   * borrow).
   */
  decision: 'NOTIFY' | 'RECLAIM';
}

/** What the controller reads about one queue over the last window. */
export interface ControllerQueueInput {
  queue: string;
  tenant: string;
  policy: string;
  nominalGpus: number;
  /** Mean GPUs the queue's own jobs held over the window. */
  usedGpus: number;
  /** Mean GPUs of the queue's unused nominal that others held (lent). */
  lentGpus: number;
  /** Mean GPUs the queue held above its nominal (borrowed). */
  borrowedGpus: number;
  /** GPUs asked for by its pending jobs at the window's end. */
  pendingGpus: number;
  /** Longest wait of its pending jobs at the window's end (ms; 0 with none). */
  oldestWaitMs: number;
  /** Jobs submitted in the window that fitted the queue's unused nominal, and of them those started within
   * the SLA.
   */
  slaEligible: number;
  slaMet: number;
  /** Mean probed GPU utilization of its running jobs; null without samples. */
  utilization: number | null;
}

export interface ControllerSettings {
  windowMs: number;
  /** How far one window moves a coefficient (lend: absolute share; borrow: multiple of nominal). */
  step: number;
  /** A queue whose jobs wait longer than this for their nominal (or miss the SLA) has its lending tightened.
   *
   */
  waitLimitMs: number;
  /** SLA attainment below this in a window tightens lending. */
  slaTarget: number;
}

export const DEFAULT_CONTROLLER_SETTINGS: ControllerSettings = {
  windowMs: 5 * 60_000,
  step: 0.25,
  waitLimitMs: 60_000,
  slaTarget: 0.995,
};

export type AdjustmentReason = 'LEND_IDLE' | 'TIGHTEN_LENDING' | 'TIGHTEN_BORROWING' | 'RELAX_BORROWING';

/** One audited change of a queue's coefficients, with what it was decided from. */
export interface ControllerAdjustment {
  queue: string;
  tenant: string;
  policy: string;
  from: LimitSetting;
  to: LimitSetting;
  reasons: AdjustmentReason[];
  input: ControllerQueueInput;
  /** What the other queues' inputs came to in this window (the borrow rules read it): with input, from and the settings, enough to recompute `to` (replayAdjustment). */
  window: ControllerWindow;
}

/** The window-wide facts the borrowing rules read: whether any queue tightens its lending, and whether one
 * that lends (lentGpus > 0) does.
 */
export interface ControllerWindow {
  anyTightens: boolean;
  lenderTightens: boolean;
}

/** Usage history of one queue (from the usage ledger), for recommendations. */
export interface QueueUsageHistory {
  queue: string;
  tenant: string;
  nominalGpus: number;
  /** Hours covered. */
  hours: number;
  meanUsedGpus: number;
  peakUsedGpus: number;
  /** Hours in which the queue held more than its nominal. */
  hoursBorrowing: number;
  meanBorrowedGpus: number;
}

export type RecommendationKind = 'UNDER_USED' | 'CONSTANT_BORROWER';

export interface Recommendation {
  queue: string;
  tenant: string;
  kind: RecommendationKind;
  /** UNDER_USED: move to a shared pool and lower nominal; CONSTANT_BORROWER: raise nominal or give a
   * dedicated pool.
   */
  suggestion: 'SHARED_POOL' | 'DEDICATED_POOL';
  currentNominalGpus: number;
  suggestedNominalGpus: number;
  /** The figures behind it, in words with numbers. */
  evidence: string;
}
