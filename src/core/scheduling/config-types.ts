// The scheduler core's configuration types: the clock, resources, flavors, nodes, quotas, cohorts,
// queues and their policies, priority classes, and the scheduler's options. Part of types.ts.

/** Source of time for every decision (ms since epoch). Injected so tests and simulators control it. */
export interface Clock {
  now(): number;
}

export type ResourceName = 'gpu' | 'cpu' | 'memory';
export const RESOURCE_NAMES: readonly ResourceName[] = ['gpu', 'cpu', 'memory'];
export type Quantities = Partial<Record<ResourceName, number>>;

export interface FlavorSpec {
  name: string;
  kind: 'gpu' | 'mig' | 'timeslice';
  gpuModel?: string;
  /** For 'mig': slices per physical GPU; for 'timeslice': shares per GPU. Required for those kinds. */
  slicesPerGpu?: number;
  pricePerUnitHour?: number;
}

export interface NodeSpec {
  name: string;
  pool: string;
  /** A node carries exactly one GPU flavor. */
  flavor: string;
  /** Physical GPUs on the node. */
  gpus: number;
  /** Millicores. */
  cpu: number;
  /** MiB. */
  memory: number;
  /** Taint: only this tenant's jobs may run here. */
  dedicatedTenant?: string;
  /** Cordoned or not ready: nothing new is placed here; pods already here keep their GPUs. */
  unschedulable?: boolean;
}

export interface QuotaLimits {
  nominal: number;
  /** How much above nominal the queue may take from its cohort; unset = no limit. */
  borrowingLimit?: number;
  /** How much of its unused nominal the cohort may use; unset = all of it. */
  lendingLimit?: number;
}
export type QuotaSpec = Record<string /* flavor */, Partial<Record<ResourceName, QuotaLimits>>>;

export interface CohortSpec {
  name: string;
  parent?: string;
  /** A cohort may hold its own nominal (lendable to its children) and limits towards its parent. */
  quotas?: QuotaSpec;
}

export interface TimeWindowSpec {
  /** Days the window starts on, 0 = Sunday .. 6 = Saturday. */
  days: number[];
  /** 'HH:MM' local time. If end <= start the window runs past midnight into the next day. */
  start: string;
  end: string;
  /** IANA zone, e.g. 'Europe/Berlin'. */
  timeZone: string;
  /** Quotas while the window is open; outside it the queue's base quotas apply. */
  quotas: QuotaSpec;
}

export type WithinQueuePolicy = 'Never' | 'LowerPriority' | 'LowerOrNewerEqualPriority';
export type ReclaimPolicy = 'Never' | 'LowerPriority' | 'Any';
export interface PreemptionSpec {
  withinQueue?: WithinQueuePolicy;
  reclaimWithinCohort?: ReclaimPolicy;
  borrowWithinCohort?: { policy: 'Never' | 'LowerPriority'; maxPriorityThreshold?: number };
  /**
   * A job of this queue running on borrowed capacity (its queue above nominal) is not taken back by
   * another queue's reclaim or fair-share preemption until it has run this long. Trade-off: a lender
   * whose nominal is lent may wait up to this long for it (its SLA). Own-queue priority preemption ignores
   * it.
   */
  minRunBeforeReclaimMs?: number;
  /**
   * With fair sharing: a job of this queue is taken by another queue's fair-share preemption (the
   * preemptor ends up borrowing) only while it would lose at most this much run time since its last
   * checkpoint (resumable jobs lose none). Reclaim of nominal is not limited. Unset: no limit.
   */
  fairShareMaxLostRunMs?: number;
}
export type IsolationLevel = 'DEDICATED' | 'GUARANTEED' | 'ELASTIC' | 'BEST_EFFORT';

export interface QueueSpec {
  name: string;
  tenant: string;
  cohort?: string;
  /** Declaration order of flavors here is the default flavor preference of the queue's jobs. */
  quotas: QuotaSpec;
  /** Fair-share weight, default 1. */
  weight?: number;
  queueingStrategy?: 'StrictFIFO' | 'BestEffortFIFO';
  preemption?: PreemptionSpec;
  isolation?: IsolationLevel;
  timeWindows?: TimeWindowSpec[];
  /** Jobs of this queue are placed only on nodes of this pool. */
  dedicatedPool?: string;
  /** Kueue's flavorFungibility: whether borrowing (or preempting) on a flavor beats another flavor that fits
   * without it.
   */
  flavorFungibility?: FlavorFungibility;
}

/**
 * Kueue's ClusterQueue flavorFungibility. `whenCanBorrow` — `TryNextFlavor` (default here): a flavor that
 * fits within quota is taken before any that needs borrowing; `Borrow`: flavors that fit by borrowing
 * compete with those that fit (best score wins). `whenCanPreempt` — `TryNextFlavor` (default): preempt
 * only when no flavor fits by borrowing; `Preempt`: a job that would borrow tries first to reclaim
 * within its nominal by preemption, and takes that if it succeeds.
 */
export interface FlavorFungibility {
  whenCanBorrow?: 'Borrow' | 'TryNextFlavor';
  whenCanPreempt?: 'Preempt' | 'TryNextFlavor';
}

/** A pod shape of the expected workload, for fragmentation-aware placement (FGD's task distribution). */
export interface WorkloadShape {
  perPod: Quantities;
  /** Flavors pods of this shape may use; unset = any. */
  flavors?: string[];
  /** Popularity (e.g. share of pods); only ratios matter. */
  weight: number;
}

export interface PriorityClass {
  name: string;
  value: number;
  /** 'reclaim-only': preemptible only by another queue reclaiming capacity this job's queue borrowed. */
  preemptible: 'yes' | 'no' | 'reclaim-only';
}

export interface SchedulerOptions {
  clock: Clock;
  placement?: 'best-fit' | 'fragmentation-aware';
  /**
   * Fragmentation-aware placement scores against this expected workload (also settable by
   * `setWorkloadShapes`); without it, against the shapes pending at that moment.
   */
  workloadShapes?: WorkloadShape[];
  /**
   * A pod set that does not pin flavors (uses its queue's list) goes to the flavor whose placement
   * scores best ('score', the default) or to the first that fits in declaration order ('preference-order').
   */
  flavorSelection?: 'score' | 'preference-order';
  fairSharing?: {
    enabled: boolean;
    /** Enables decayed usage history: ranks equal-share heads by recent consumption. */
    usageHalfLifeMs?: number;
    /** GPU-milliseconds charged to a queue's history per requested GPU at admission (default 60 000 = one
     * GPU-minute).
     */
    entryPenalty?: number;
  };
  /** Replaces the default table (inference-critical 1000 no, production 500 reclaim-only, training 100,
   * experiment 10).
   */
  priorityClasses?: PriorityClass[];
  /**
   * Benchmark baseline only: every cycle recomputes quota usage and node free capacity from all
   * running jobs and re-evaluates every pending job (no parking, no incremental indexes used).
   * Same rules (it retries every parked job, so it can admit where the wake-up rules wait), much slower.
   */
  rescanEveryCycle?: boolean;
  /**
   * Bounded tails (README, "Bounded tails"), for jobs pending at least `afterMs` (default 2 h, since
   * submit or last preemption). `reserve` (default on): such a head that fails on nodes or on cohort
   * quota gets nodes reserved at its earliest start (from running jobs' expected ends); jobs that
   * would borrow there, at its priority or lower, may use them only if expected to end before then;
   * at most `maxReservations` (default 4) at once. `aging` (default off): such heads are tried
   * before the share order, oldest first.
   */
  boundedTails?: { afterMs?: number; reserve?: boolean; maxReservations?: number; aging?: boolean };
}
