// The scheduler's state: what it holds per job and per queue, and the one object (`CoreState`) that
// the `Scheduler` façade owns and passes to every module's functions.
import type { EtaResult } from './eta.js';
import type { HeapItem, IndexedHeap } from './heap.js';
import type { FlavorState, NodeState, PodAlloc, Shape, WeightedShape } from './nodes.js';
import type { ParkIndex } from './park-index.js';
import type { QuotaNode } from './quota.js';
import { createReservationState, type ReservationState } from './reservation-state.js';
import type {
  Admission,
  AdmissionHold,
  Clock,
  CohortSpec,
  IsolationLevel,
  JobSpec,
  PendingDecision,
  PreemptedBy,
  Preemption,
  PriorityClass,
  QueueSpec,
  ReclaimPolicy,
  SchedulerOptions,
  WithinQueuePolicy,
  WorkloadShape,
} from './types.js';

/** The default priority classes (design doc, "Priority classes"). */
export const DEFAULT_PRIORITY_CLASSES: readonly PriorityClass[] = [
  { name: 'inference-critical', value: 1000, preemptible: 'no' },
  { name: 'production', value: 500, preemptible: 'reclaim-only' },
  { name: 'training', value: 100, preemptible: 'yes' },
  { name: 'experiment', value: 10, preemptible: 'yes' },
];

export const DEFAULT_ENTRY_PENALTY = 60_000;

export interface PodSetState {
  name: string;
  count: number;
  minCount: number;
  shape: Shape;
  flavors: string[];
}

export interface JobState extends HeapItem {
  spec: JobSpec;
  queue: QueueState;
  priority: number;
  preemptible: PriorityClass['preemptible'];
  podSets: PodSetState[];
  status: 'pending' | 'admitted';
  parked: boolean;
  /** Pending but held by an admission hold (holds.ts): in `CoreState.held`, not in its queue's heap or parked set. */
  held: boolean;
  /** Reclaimed for a governance flag (reclaim.ts): held (in `CoreState.held`) and not admitted before this instant; null: no such hold. */
  reclaimHoldUntil: number | null;
  /** The hold is a disruption's backoff (reclaim.ts requeueDisrupted), not a governance reclaim's. */
  disruptionHold: boolean;
  decision: PendingDecision | null;
  /** stateVersion the decision was diagnosed at: a stale one is diagnosed again before it is shown. */
  decisionVersion: number;
  /** Requeued by a preemption and not admitted since: explanations name the preemptor in a structured field.
   *
   */
  preemptedBy: PreemptedBy | null;
  admission: Admission | null;
  /** Charged usage per flavor (internal units) while admitted. */
  usage: Map<string, number[]>;
  allocs: PodAlloc[];
  admittedAt: number;
  admitSeq: number;
  preemptions: number;
  lastPreemption: Preemption | null;
  /** Cycle number of the last preemption: a victim is not re-admitted in the cycle that evicted it. */
  preemptedCycle: number;
  shapeKeys: string[];
  /**
   * Why it is parked, which decides which release wakes it: 'quota' jobs only when their queue's
   * available quota reaches what they need (request minus what their preemption candidates could
   * release); 'node' jobs when their flavor frees node capacity; 'never' (ExceedsMaxQuota,
   * WindowClosed) only on configuration changes; 'any' on every release.
   */
  parkKind: 'any' | 'quota' | 'node' | 'never';
  parkNeeds: { flavor: string; need: number[] }[];
  /** Its entries in its queue's park index (park-index.ts), 0 when it has none. */
  parkSeq: number;
  /** Nodes whose release woke this node-waiting job: if none still fits its pods when its turn comes, it
   * re-parks untried.
   */
  wakeNodes: NodeState[] | null;
  /** From the last preemption search: what its candidates could release, per flavor searched. */
  releasable: Map<string, number[]> | null;
}

export interface QueueState {
  spec: QueueSpec;
  node: QuotaNode;
  root: QuotaNode;
  weight: number;
  strategy: 'StrictFIFO' | 'BestEffortFIFO';
  isolation: IsolationLevel;
  withinQueue: WithinQueuePolicy;
  reclaim: ReclaimPolicy;
  borrowPolicy: 'Never' | 'LowerPriority';
  borrowThreshold: number | null;
  /** Default flavor preference of its jobs: declaration order (base quotas, then window-only flavors). */
  flavorOrder: string[];
  heap: IndexedHeap<JobState>;
  parked: Set<JobState>;
  /** `parked` indexed by why each job waits (park-index.ts), so a release visits only the jobs it can wake. */
  parkIndex: ParkIndex;
  /** StrictFIFO: the head failed and nothing may pass it until something is released. */
  blocked: boolean;
  admitted: Set<JobState>;
  activeWindow: number | null;
  /** A window closed while the queue used more than its new nominal: its borrowers are reclaimable as
   * 'window-closed'.
   */
  windowReclaimable: boolean;
  /** Decayed GPU usage history (GPU·ms), integrated lazily. */
  history: { value: number; at: number; rateMilli: number };
  /** Per resource: what the parent could lend, the denominator of the dominant resource share. */
  lendable: number[];
  /** Bumped on every usage change of this queue; keys the cached weighted share. */
  usageVersion: number;
  shareCache: { version: number; value: number };
  /**
   * Guaranteed usage per flavor (internal units): what its admitted jobs of a never-preempted class hold
   * (guaranteed.ts). Changed with the quota tree's usage by every charge and release (trail.ts).
   */
  guaranteed: Map<string, number[]>;
  /**
   * Preemption searches that failed at the current state version. A later job of this queue with
   * the same flavor options, an equal or larger shape and gang minimum, and equal or lower priority
   * (submitted no earlier) has a subset of the candidates and needs more: its search would fail
   * too, so it is skipped (the cycle stays linear when many similar jobs wait).
   */
  preemptFails: {
    version: number;
    flavors: string;
    shape: Shape;
    minCount: number;
    priority: number;
    submit: number;
    /** Searched for a job that is never preempted (other candidates, guaranteed.ts): applies only to such jobs. */
    nominalOnly: boolean;
    releasable: Map<string, number[]>;
  }[];
}

/** A tree's pending jobs in admission order at one state: positions and (lazily) ETAs. */
export interface TreeView {
  sv: number;
  pv: number;
  order: JobState[];
  index: Map<JobState, number>;
  queuePos: Map<JobState, number>;
  etas: Map<JobState, EtaResult> | null;
}

/** A queue's head as the order phase sees it: the sort keys are computed once per pass. */
export interface Head {
  job: JobState;
  share: number;
  borrow: number;
  hist: number;
}

/**
 * A cycle cut into slices (cycle.ts): where the next `cycle()` call continues. The current pass's
 * heads in their order (with `next`, the first not yet tried), the decisions made so far (refreshed
 * at the end), and every victim of the cycle (holds apply to them at the end).
 */
export interface CycleRun {
  heads: Head[];
  next: number;
  pending: Map<string, PendingDecision>;
  /** Set once the passes are over: the decisions left to diagnose again, in the order they were made. */
  refresh: PendingDecision[] | null;
  refreshNext: number;
  preempted: Preemption[];
}

export function queueLess(a: JobState, b: JobState): boolean {
  if (a.priority !== b.priority) return a.priority > b.priority;
  if (a.spec.submitTime !== b.spec.submitTime) return a.spec.submitTime < b.spec.submitTime;
  return a.spec.id < b.spec.id;
}

/**
 * Everything the scheduler holds between calls. The `Scheduler` façade owns one; every module's
 * functions take it as their first argument (no module keeps state of its own).
 */
export interface CoreState {
  readonly clock: Clock;
  readonly placementMode: 'best-fit' | 'fragmentation-aware';
  readonly fairSharing: boolean;
  readonly halfLife: number | null;
  readonly entryPenalty: number;
  readonly rescanEveryCycle: boolean;
  readonly classes: Map<string, PriorityClass>;
  readonly flavors: Map<string, FlavorState>;
  readonly nodes: Map<string, NodeState>;
  readonly cohorts: Map<string, { spec: CohortSpec; node: QuotaNode }>;
  readonly queues: Map<string, QueueState>;
  readonly jobs: Map<string, JobState>;
  /** Queues whose head may be admissible: the only ones a cycle looks at. */
  readonly active: Set<QueueState>;
  /** Queues to wake at the next cycle (they hold victims evicted in this one). */
  readonly deferred: Set<QueueState>;
  /** Queues with jobs parked for lack of node capacity, per flavor. */
  readonly flavorWaiters: Map<string, Set<QueueState>>;
  readonly treeQueues: Map<QuotaNode, QueueState[]>;
  readonly shapes: Map<string, { flavors: string[]; shape: Shape; pods: number; jobs: number }>;
  fragShapeCache: Map<string, WeightedShape[]>;
  /** The expected workload for fragmentation-aware placement (workload-shapes.ts); null = pending shapes. */
  workloadShapes: WorkloadShape[] | null;
  /** A pod set without its own flavor list picks the best-scoring flavor (flavor-score.ts). */
  readonly flavorByScore: boolean;
  readonly windowQueues: Set<QueueState>;
  lastWindowMinute: number;
  /** The undo trail of trial changes (trail.ts): each entry undoes one change; rollback pops to a mark. */
  trail: (() => void)[];
  admitSeq: number;
  /** Bumped whenever running jobs, quotas or nodes change (not by trial changes, which roll back). */
  stateVersion: number;
  /** Bumped whenever a job enters or leaves a pending list (keys the cached admission order). */
  pendingVersion: number;
  readonly treeViews: Map<QuotaNode, TreeView>;
  cycleNo: number;
  /** A cycle cut into slices (`cycle({ maxHeads })`) that has work left: the next `cycle()` continues it (cycle.ts). */
  cycleRun: CycleRun | null;
  /** Admission holds by `scope:id` (holds.ts); replaced as a whole by setAdmissionHolds. */
  holds: Map<string, AdmissionHold>;
  /** What decides which jobs the holds match (keys and exempt classes, not the numbers): unchanged means
   * nothing to move.
   */
  holdsSignature: string;
  /** Pending jobs held back from admission, in the order they were held (lifted in this order). */
  readonly held: Set<JobState>;
  /** Reclaims asked for (Scheduler.reclaim), by job id in call order: the next cycle() carries them out
   * first (reclaim.ts).
   */
  readonly reclaims: Map<string, { job: JobState; reason: 'idle' | 'not-running'; holdUntil: number }>;
  /** Held jobs whose reclaim hold is in force (reclaimHoldUntil set), lifted by the first cycle at or after
   * it.
   */
  readonly reclaimHeld: Set<JobState>;
  /** Bounded tails: nodes reserved for long-waiting heads (reservation.ts). */
  readonly reserve: ReservationState;
}

export function createCoreState(opts: SchedulerOptions): CoreState {
  const fairSharing = opts.fairSharing?.enabled ?? false;
  const s: CoreState = {
    clock: opts.clock,
    placementMode: opts.placement ?? 'best-fit',
    fairSharing,
    halfLife: fairSharing ? (opts.fairSharing?.usageHalfLifeMs ?? null) : null,
    entryPenalty: opts.fairSharing?.entryPenalty ?? DEFAULT_ENTRY_PENALTY,
    rescanEveryCycle: opts.rescanEveryCycle ?? false,
    classes: new Map(),
    flavors: new Map(),
    nodes: new Map(),
    cohorts: new Map(),
    queues: new Map(),
    jobs: new Map(),
    active: new Set(),
    deferred: new Set(),
    flavorWaiters: new Map(),
    treeQueues: new Map(),
    shapes: new Map(),
    fragShapeCache: new Map(),
    workloadShapes:
      opts.workloadShapes && opts.workloadShapes.length > 0
        ? opts.workloadShapes.map((w) => ({ ...w, perPod: { ...w.perPod } }))
        : null,
    flavorByScore: (opts.flavorSelection ?? 'score') === 'score',
    windowQueues: new Set(),
    lastWindowMinute: Number.NaN,
    trail: [],
    admitSeq: 0,
    stateVersion: 0,
    pendingVersion: 0,
    treeViews: new Map(),
    cycleNo: 0,
    cycleRun: null,
    holds: new Map(),
    holdsSignature: '',
    held: new Set(),
    reclaims: new Map(),
    reclaimHeld: new Set(),
    reserve: createReservationState(opts),
  };
  for (const c of opts.priorityClasses ?? DEFAULT_PRIORITY_CLASSES) s.classes.set(c.name, { ...c });
  return s;
}
