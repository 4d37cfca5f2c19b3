// The scheduler core's job types: job specs, admissions, preemptions, holds, pending decisions and
// the result of a cycle. Part of types.ts.
import type { Quantities, ResourceName } from './config-types.js';

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

/** 'idle' and 'not-running': taken back by `Scheduler.reclaim` (a governance flag), not by another job. */
export type PreemptionReason =
  | 'reclaim'
  | 'priority'
  | 'fair-share'
  | 'window-closed'
  | 'idle'
  | 'not-running';

export interface Preemption {
  victimId: string;
  victimQueue: string;
  preemptorId: string;
  preemptorQueue: string;
  reason: PreemptionReason;
  at: number;
  /** GPU-milliseconds of work the victim loses (GPUs × time since its last checkpoint, or since admission).
   *
   */
  lostGpuMs?: number;
}

export type PendingReasonCode =
  | 'NotYetEvaluated'
  | 'WaitingForQuota'
  | 'ExceedsMaxQuota'
  /** No eligible node of the job's flavors exists at all (none in the pool, none the tenant may use): waits
   * for nodes to be added.
   */
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
   * queue's nominal, judged against the queue's jobs that are never preempted (`guaranteedUsed`):
   * `available` is what it could take now within that room (nominal − guaranteedUsed), `maxAvailable`
   * is capped by the nominal and `borrowingLimit` is 0.
   */
  nominalOnly?: boolean;
  /** With `nominalOnly`: what the queue's jobs that are never preempted use (part of `used`). */
  guaranteedUsed?: number;
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

/** The job that preempted this one, by id: for the services to render to whoever may see it (never in core
 * messages).
 */
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

export interface RestoredAdmission {
  job: JobSpec;
  admission: Admission;
}
