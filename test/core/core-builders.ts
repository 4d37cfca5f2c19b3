// Builders for the module tests: the core's state object (CoreState) set up like makeCluster, so
// each module's functions can be called directly, plus a few shorthands to read it.
import { upsertCohort, upsertFlavor, upsertNode, upsertQueue } from '../../src/core/scheduling/configure.js';
import { cycle } from '../../src/core/scheduling/cycle.js';
import type { JobSpec } from '../../src/core/scheduling/index.js';
import { submit } from '../../src/core/scheduling/jobs.js';
import { available, GPU } from '../../src/core/scheduling/quota.js';
import {
  type CoreState,
  createCoreState,
  type JobState,
  type QueueState,
} from '../../src/core/scheduling/state.js';
import { debugState } from '../../src/core/scheduling/views.js';
import {
  type ClusterSetup,
  FLAVORS,
  JobBuilder,
  ManualClock,
  NodeBuilder,
  QueueBuilder,
} from './builders.js';

/** A CoreState with the standard flavors, then the given nodes, cohorts and queues (as makeCluster). */
export function makeCore(setup: ClusterSetup): { core: CoreState; clock: ManualClock } {
  const clock = setup.clock ?? new ManualClock();
  const core = createCoreState({ clock, ...(setup.options ?? {}) });
  for (const f of FLAVORS) upsertFlavor(core, f);
  for (const n of setup.nodes ?? []) upsertNode(core, n instanceof NodeBuilder ? n.build() : n);
  const queues = setup.queues.map((q) => (q instanceof QueueBuilder ? q.build() : q));
  const cohorts =
    setup.cohorts ??
    [...new Set(queues.flatMap((q) => (q.cohort ? [q.cohort] : [])))].map((name) => ({ name }));
  for (const c of cohorts) upsertCohort(core, c);
  for (const q of queues) upsertQueue(core, q);
  return { core, clock };
}

/** Submits the jobs and runs one cycle; returns the cycle's result. */
export function admit(core: CoreState, ...jobs: (JobBuilder | JobSpec)[]): ReturnType<typeof cycle> {
  for (const j of jobs) submit(core, j instanceof JobBuilder ? j.build() : j);
  return cycle(core);
}

export const queueOf = (core: CoreState, name: string): QueueState => core.queues.get(name) as QueueState;
export const jobOf = (core: CoreState, id: string): JobState => core.jobs.get(id) as JobState;
/** Available h100 GPUs (whole GPUs) for a queue. */
export const availGpus = (core: CoreState, queue: string, flavor = 'h100'): number =>
  available(queueOf(core, queue).node, flavor, GPU) / 1000;
export const snapshot = (core: CoreState): unknown => debugState(core);
/** An internal-units usage vector of `gpus` whole GPUs on one flavor. */
export const gpuUsage = (flavor: string, gpus: number): Map<string, number[]> =>
  new Map([[flavor, [gpus * 1000, 0, 0]]]);
