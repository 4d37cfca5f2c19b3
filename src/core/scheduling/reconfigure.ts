// Replacing queue and cohort specs on a live core (quotas, limits, weights, policies, cohort
// membership), with its running and pending jobs kept: one checked batch, one rebuild of the quota
// tree, every queue woken. The services apply a configuration change this way instead of building a
// new core from the database (test/core/scheduling/reconfigure.test.ts: the next cycles decide as a
// core rebuilt from the same data would).
import { applyCohort, applyQueue, checkCohort, checkQueue, flavorOrderOf } from './configure.js';
import { rebuildQuotas } from './quota-config.js';
import type { CoreState } from './state.js';
import type { CohortSpec, FlavorSpec, NodeSpec, PriorityClass, QueueSpec } from './types.js';
import { structuredCloneSpec } from './units.js';

/** Cohort and queue specs to set, new ones or replacing the current ones of the same name. */
export interface SpecChange {
  cohorts?: readonly CohortSpec[];
  queues?: readonly QueueSpec[];
}

/** The configuration a core holds (copies): what the services compare a stored configuration with. */
export interface CoreConfiguration {
  flavors: FlavorSpec[];
  nodes: NodeSpec[];
  cohorts: CohortSpec[];
  queues: QueueSpec[];
  priorityClasses: PriorityClass[];
}

/**
 * Sets every spec of `change` at once. All are checked first, against the cohorts as they will be
 * with the change made (a new cohort may be another's parent or a queue's cohort): a refused spec
 * (SchedulerInputError, as upsertCohort/upsertQueue) changes nothing. Nor does a queue holding jobs
 * that would declare other flavors (or reorder them): then it answers false, and the caller builds a
 * core anew (its jobs' flavor options are resolved against the queue's flavors when submitted). Then the quota tree is
 * rebuilt once, running jobs charged again, and every queue woken: each pending job is evaluated
 * again by the next cycle. A cycle cut into slices that is under way takes its heads again under
 * the new specs at its next call (its decisions so far stand; a pending decision it already
 * answered may be answered again, the later being current).
 */
export function reconfigure(core: CoreState, change: SpecChange): boolean {
  const cohorts = change.cohorts ?? [];
  const queues = change.queues ?? [];
  const changed = new Map(cohorts.map((c) => [c.name, c]));
  const known = (name: string) => changed.has(name) || core.cohorts.has(name);
  const parentOf = (name: string) =>
    changed.has(name) ? changed.get(name)?.parent : core.cohorts.get(name)?.spec.parent;
  for (const c of cohorts) checkCohort(core, c, parentOf, known);
  for (const q of queues) checkQueue(core, q, known);
  if (queues.some((q) => flavorsMoveUnderJobs(core, q))) return false;
  if (cohorts.length === 0 && queues.length === 0) return true;
  for (const c of cohorts) applyCohort(core, c);
  for (const q of queues) applyQueue(core, q);
  rebuildQuotas(core);
  // Every parked job was just woken (rebuildQuotas): none waits on a flavor's nodes any more. A core
  // keeps a queue among a flavor's waiters until a release wakes it; dropping them all here keeps a
  // release after the change from waking what a core built anew would not.
  core.flavorWaiters.clear();
  const run = core.cycleRun;
  if (run) {
    // Heads were taken (and their shares computed) under the old specs: take them again.
    run.heads = [];
    run.next = 0;
    run.refresh = null;
    run.refreshNext = 0;
  }
  return true;
}

/**
 * Whether `q` would declare other flavors, or the same in another order, while it holds jobs: a job's
 * pod sets without a flavor list took the queue's flavors when it was submitted, and a flavor no
 * longer declared refuses the job, so only a core built anew with its jobs submitted again decides
 * as one built from the same data would.
 */
function flavorsMoveUnderJobs(core: CoreState, q: QueueSpec): boolean {
  const cur = core.queues.get(q.name);
  if (!cur) return false;
  const order = flavorOrderOf(q);
  if (order.length === cur.flavorOrder.length && order.every((f, i) => cur.flavorOrder[i] === f))
    return false;
  if (cur.admitted.size > 0 || cur.heap.size > 0 || cur.parked.size > 0) return true;
  for (const j of core.held) if (j.queue === cur) return true;
  return false;
}

export function configuration(core: CoreState): CoreConfiguration {
  return structuredCloneSpec({
    flavors: [...core.flavors.values()].map((f) => f.spec),
    nodes: [...core.nodes.values()].map((n) => n.spec),
    cohorts: [...core.cohorts.values()].map((c) => c.spec),
    queues: [...core.queues.values()].map((q) => q.spec),
    priorityClasses: [...core.classes.values()],
  });
}
