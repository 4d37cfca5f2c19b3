// The fair-share scheduler core. Pure: no I/O, no timers; time comes from the injected Clock.
// This file is the public façade; the work is in the modules listed in README.md ("Files"): the
// cycle in cycle.ts, flavor assignment in assignment/, victims in preemption/, the undo trail in
// trail.ts.
import { removeNode, upsertCohort, upsertFlavor, upsertNode, upsertQueue } from './configure.js';
import { cycle } from './cycle.js';
import { explain } from './explain.js';
import { setAdmissionHolds } from './holds.js';
import { cancel, finish, submit } from './jobs.js';
import { pendingShapes } from './pending-shapes.js';
import { requestReclaim, requeueDisrupted } from './reclaim.js';
import { type CoreConfiguration, configuration, reconfigure, type SpecChange } from './reconfigure.js';
import { restore } from './restore.js';
import { type CoreState, createCoreState } from './state.js';
import type {
  Admission,
  AdmissionHold,
  CohortSpec,
  CycleOptions,
  CycleResult,
  FlavorSpec,
  JobExplanation,
  JobSpec,
  NodeSpec,
  NodeStatus,
  PendingShape,
  Preview,
  QueueSpec,
  QueueStatus,
  RestoredAdmission,
  SchedulerOptions,
  WorkloadShape,
} from './types.js';
import { admissionOf, debugState, jobState, nodeStatus, preview, queueStatus } from './views.js';
import { nextQueueWindowChange } from './windows.js';
import { setWorkloadShapes } from './workload-shapes.js';

export { DEFAULT_PRIORITY_CLASSES } from './state.js';

/**
 * The public face of the core: owns the state and delegates each call to the module that does it
 * (README.md, "Files", says which module holds which phase).
 */
export class Scheduler {
  private readonly state: CoreState;

  constructor(opts: SchedulerOptions) {
    this.state = createCoreState(opts);
  }

  // ───────────────────────────── configuration (configure.ts) ─────────────────────────────

  upsertFlavor(f: FlavorSpec): void {
    upsertFlavor(this.state, f);
  }

  upsertNode(n: NodeSpec): void {
    upsertNode(this.state, n);
  }

  removeNode(name: string): void {
    removeNode(this.state, name);
  }

  upsertCohort(c: CohortSpec): void {
    upsertCohort(this.state, c);
  }

  upsertQueue(q: QueueSpec): void {
    upsertQueue(this.state, q);
  }

  /**
   * Sets cohort and queue specs (new or replacing) at once on the live core, jobs kept: all checked
   * before any is set, one rebuild of the quota tree, every pending job evaluated again by the next
   * cycle (reconfigure.ts). False, with nothing changed, when a queue holding jobs would declare
   * other flavors: build a core anew then.
   */
  reconfigure(change: SpecChange): boolean {
    return reconfigure(this.state, change);
  }

  /** Copies of the flavor, node, cohort, queue and priority-class specs the core holds. */
  configuration(): CoreConfiguration {
    return configuration(this.state);
  }

  // ───────────────────────────── jobs (jobs.ts) ─────────────────────────────

  submit(job: JobSpec): void {
    submit(this.state, job);
  }

  finish(jobId: string): void {
    finish(this.state, jobId);
  }

  cancel(jobId: string): void {
    cancel(this.state, jobId);
  }

  /**
   * Takes an admitted job's resources back for a governance flag (idle, or admitted but not running):
   * the next cycle() lists it first among its preemptions (this reason, preemptorId and preemptorQueue
   * ''), the job goes back to pending in its place, and it is not admitted again before `now + holdMs`
   * (default 0). Unknown or not admitted jobs are refused (SchedulerInputError UNKNOWN_JOB,
   * NOT_ADMITTED; a bad reason or holdMs: INVALID_SPEC). Nothing changes until that cycle (the job
   * stays admitted; asked twice, the later call counts); the cycle frees its quota and nodes as an
   * ended job's, stamps the preemption with its own time and lostGpuMs, and never re-admits it in that
   * same cycle. While held, explain() gives reason 'ReclaimHold' with `reclaimHoldUntil` (eta null,
   * etaUnknownReason 'ReclaimHold'); the first cycle at or after the hold's end puts it back in its queue.
   */
  reclaim(jobId: string, reason: 'idle' | 'not-running', holdMs = 0): void {
    requestReclaim(this.state, jobId, reason, holdMs);
  }

  /**
   * The backend lost an admitted job's run (disrupted: evicted, drained, a lost node): frees its
   * quota and nodes now and puts it back in its queue with its original submit time, without a
   * preemption (reclaim.ts requeueDisrupted), not before `now + holdMs` (a backoff; explain() says
   * ReclaimHold meanwhile). Unknown or not admitted jobs are refused (SchedulerInputError
   * UNKNOWN_JOB, NOT_ADMITTED; a bad holdMs: INVALID_SPEC).
   */
  requeue(jobId: string, holdMs = 0): void {
    requeueDisrupted(this.state, jobId, this.state.clock.now(), holdMs);
  }

  // ───────────────────────────── admission holds (holds.ts) ─────────────────────────────

  /**
   * Replaces the whole set of admission holds (spent hard budgets). Pending jobs a hold matches
   * (not of an exempt class) wait with reason `BudgetExhausted` and are never admitted or preempt;
   * lifting a hold makes its jobs eligible at the next cycle. Running jobs are untouched.
   */
  setAdmissionHolds(holds: AdmissionHold[]): void {
    setAdmissionHolds(this.state, holds);
  }

  /** Whether any admission hold is in force. */
  hasAdmissionHolds(): boolean {
    return this.state.holds.size > 0;
  }

  // ───────────────────────────── the cycle (cycle.ts) ─────────────────────────────

  /**
   * One admission cycle; with `maxHeads`, at most that many work units per call (`more: true`
   * when work is left: the next call continues the same cycle where this one stopped).
   */
  cycle(opts?: CycleOptions): CycleResult {
    return cycle(this.state, opts);
  }

  /**
   * The first instant after `after` at which some queue's time window opens or closes (or another
   * of its windows takes over), or undefined when none will (windows.ts). A caller moving its own
   * clock (the simulator) runs a cycle there; the gateway's periodic cycles need not.
   */
  nextWindowChange(after: number): number | undefined {
    return nextQueueWindowChange(this.state, after);
  }

  // ───────────────────────────── queries (views.ts, explain.ts, restore.ts) ─────────────────────────────

  preview(spec: JobSpec): Preview {
    return preview(this.state, spec);
  }

  explain(jobId: string): JobExplanation {
    return explain(this.state, jobId);
  }

  queueStatus(name: string): QueueStatus {
    return queueStatus(this.state, name);
  }

  nodeStatus(): NodeStatus[] {
    return nodeStatus(this.state);
  }

  pendingShapes(): PendingShape[] {
    return pendingShapes(this.state);
  }

  /** The expected workload fragmentation-aware placement scores against (empty: the pending shapes). Wakes
   * nothing.
   */
  setWorkloadShapes(shapes: WorkloadShape[]): void {
    setWorkloadShapes(this.state, shapes);
  }

  /** The admission of a running job, or undefined. */
  admissionOf(jobId: string): Admission | undefined {
    return admissionOf(this.state, jobId);
  }

  /** 'pending' | 'admitted' for a live job, undefined once finished/cancelled or never seen. */
  jobState(jobId: string): 'pending' | 'admitted' | undefined {
    return jobState(this.state, jobId);
  }

  /** Rebuilds running jobs after a restart from persisted admissions, exactly as recorded (no decisions are
   * made).
   */
  restore(admitted: RestoredAdmission[]): void {
    restore(this.state, admitted);
  }

  /** A plain, deep copy of every piece of state a decision depends on; tests compare it before/after a
   * what-if.
   */
  debugState(): unknown {
    return debugState(this.state);
  }
}
