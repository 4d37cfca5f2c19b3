// Public data types of the scheduler core. Pure data: no classes, no I/O.
// Units at the API boundary: gpu = GPUs (or MIG slices / time-slice shares for those
// flavors), cpu = millicores, memory = MiB. Internally GPU amounts are integer milli-units.

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
   * whose nominal is lent may wait up to this long for it (its SLA). Own-queue priority preemption ignores it.
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
  /** Kueue's flavorFungibility: whether borrowing (or preempting) on a flavor beats another flavor that fits without it. */
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

export interface PodSetSpec {
  name: string;
  count: number;
  /** Gang minimum; default = count (all or nothing). */
  minCount?: number;
  perPod: Quantities;
  /** Flavor preference list; default: the queue's flavors in declaration order. */
  flavors?: string[];
}

export interface JobSpec {
  id: string;
  tenant: string;
  project?: string;
  queue: string;
  priorityClass: string;
  submitTime: number;
  podSets: PodSetSpec[];
  expectedDurationMs?: number;
  maxRunMs?: number;
  /** How the job saves progress: a preemption then loses only the GPU-time since its last checkpoint. */
  checkpoint?: CheckpointSpec;
}

/**
 * A job's checkpointing, as declared by its owner. Without it a victim loses all the GPU-time since its
 * admission (it restarts from zero).
 */
export interface CheckpointSpec {
  /** The job writes a checkpoint every `intervalMs` of running, counted from its admission. */
  intervalMs?: number;
  /** The job can be suspended and resumed without losing progress (it checkpoints when told to stop). */
  resumable?: boolean;
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
    /** GPU-milliseconds charged to a queue's history per requested GPU at admission (default 60 000 = one GPU-minute). */
    entryPenalty?: number;
  };
  /** Replaces the default table (inference-critical 1000 no, production 500 reclaim-only, training 100, experiment 10). */
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

export interface PodPlacement {
  node: string;
  /**
   * GPU indices on the node, pods × unitsPerPod entries in pod order. A unit is one whole GPU
   * (gpu flavor, gpu >= 1), one pod's share of a GPU (gpu flavor, gpu < 1) or one slice/share
   * (mig, timeslice). Omitted when the pods request no GPU.
   */
  gpuIndices?: number[];
  pods: number;
}

export interface PodSetAdmission {
  name: string;
  flavor: string;
  /** Pods admitted (between the gang minimum and count). */
  count: number;
  placements: PodPlacement[];
}

export type AdmissionMode = 'fit' | 'borrow' | 'preempt' | 'preempt-borrow';

export interface Admission {
  jobId: string;
  queue: string;
  at: number;
  podSets: PodSetAdmission[];
  borrowed: boolean;
  mode: AdmissionMode;
}

/** 'idle' and 'not-running': taken back by `Scheduler.reclaim` (a governance flag, issue 16), not by another job. */
export type PreemptionReason = 'reclaim' | 'priority' | 'fair-share' | 'window-closed' | 'idle' | 'not-running';

export interface Preemption {
  victimId: string;
  victimQueue: string;
  preemptorId: string;
  preemptorQueue: string;
  reason: PreemptionReason;
  at: number;
  /** GPU-milliseconds of work the victim loses (GPUs × time since its last checkpoint, or since admission). */
  lostGpuMs?: number;
}

export type PendingReasonCode =
  | 'NotYetEvaluated'
  | 'WaitingForQuota'
  | 'ExceedsMaxQuota'
  /** No eligible node of the job's flavors exists at all (none in the pool, none the tenant may use): waits for nodes to be added. */
  | 'NoFittingNode'
  /** Quota allows the job, but no set of eligible nodes has room for its pods right now (see `nodeFit`). */
  | 'NoNodeFits'
  | 'WindowClosed'
  | 'StrictFIFOBlocked'
  | 'WaitingForPreemption'
  /** A hard budget of its tenant or project is spent (`hold` has the numbers): it waits until the hold is lifted. */
  | 'BudgetExhausted'
  /** Reclaimed for a governance flag (idle, not running): not admitted again before `reclaimHoldUntil`. */
  | 'ReclaimHold';

/**
 * Holds pending jobs back from admission (a hard budget that is spent). Set as a whole with
 * `Scheduler.setAdmissionHolds`; running jobs are never touched.
 */
export interface AdmissionHold {
  scope: 'tenant' | 'project';
  /** JobSpec.tenant or JobSpec.project (ids). */
  id: string;
  /** Jobs of these priority classes are not held. */
  exemptPriorityClasses: string[];
  /** The numbers, carried as data for the explanation. */
  budget: { spent: number; limit: number; currency: string; period: string };
}

/** The hold that keeps a job (or a previewed spec) waiting, with its numbers. */
export interface HoldInfo {
  scope: 'tenant' | 'project';
  id: string;
  spent: number;
  limit: number;
  currency: string;
  /** 'YYYY-MM' (UTC calendar month). */
  period: string;
}

/** The numbers behind a quota-related pending reason (API units). */
export interface QuotaShortfall {
  flavor: string;
  resource: ResourceName;
  /** What the job asks for on this flavor/resource. */
  requested: number;
  /** What the queue could take right now (own unused nominal + what the cohort can lend within limits). */
  available: number;
  nominal: number;
  /** Undefined = unlimited. */
  borrowingLimit?: number;
  /** Current usage of the queue. */
  used: number;
  /** The most the queue could ever get (nominal + borrowing within what the cohort holds). */
  maxAvailable: number;
  /**
   * The job's priority class is never preempted (`preemptible: 'no'`), so it runs only within its
   * queue's nominal: `available` and `maxAvailable` are capped by the nominal and `borrowingLimit` is 0.
   */
  nominalOnly?: boolean;
}

/** Free capacity of one flavor against the pods a `NoNodeFits` job needs (flavor units: GPUs, slices or shares). */
export interface NodeFit {
  flavor: string;
  /** The most free units on any single eligible node. */
  largestFreeGpusOnOneNode: number;
  /** Free units summed over the eligible nodes. */
  freeGpus: number;
  podsNeeded: number;
  gpusPerPod: number;
}

/** The job that preempted this one, by id: for the services to render to whoever may see it (never in core messages). */
export interface PreemptedBy {
  jobId: string;
  reason: PreemptionReason;
}

export interface PendingDecision {
  jobId: string;
  queue: string;
  reason: PendingReasonCode;
  /** Plain text without any other job's id (ids are in the structured fields below). */
  message: string;
  /** The flavor/resource that blocked the best flavor option, with its numbers. */
  shortfall?: QuotaShortfall;
  /** `NoNodeFits`: per flavor tried, the free capacity the pods could not use. */
  nodeFit?: NodeFit[];
  /** Requeued by a preemption and not admitted since. */
  preemptedBy?: PreemptedBy;
  /** `StrictFIFOBlocked`: the id of the queue head it waits behind. */
  blockedBy?: string;
  /** `BudgetExhausted`: the hold and its numbers. */
  hold?: HoldInfo;
}

export interface CycleResult {
  at: number;
  admitted: Admission[];
  preempted: Preemption[];
  /** Jobs evaluated in this cycle that stay pending, with why. */
  pending: PendingDecision[];
  /**
   * A sliced cycle (`cycle({ maxHeads })`) stopped at its budget with work left: the next
   * `cycle()` call continues it where it stopped (same decisions as one unsliced cycle when
   * nothing happens in between). False when the cycle is complete.
   */
  more: boolean;
}

/** Bounds the work of one `cycle()` call; the rest is done by the next calls (`CycleResult.more`). */
export interface CycleOptions {
  /**
   * Work units per call: each head evaluated (assignment, preemption search) and each pending
   * decision diagnosed again at the end counts one. At least one unit is done per call.
   * Omitted: the cycle runs to its end.
   */
  maxHeads?: number;
}

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
export type EtaUnknownReason = 'NoDeclaredDuration' | 'TooFarAhead' | 'NeverFits' | 'WindowClosed' | 'BudgetExhausted' | 'ReclaimHold';

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
  /** Part of this queue's unused lendable nominal that other queues of the cohort currently use (attributed as min(unused lendable, borrowed by siblings)). */
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

export interface RestoredAdmission {
  job: JobSpec;
  admission: Admission;
}
