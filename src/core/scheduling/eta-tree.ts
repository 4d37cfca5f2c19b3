// The ETA of a tree's pending jobs: the forward simulation of eta.ts run on the snapshot (trial
// admissions and releases on the trail, rolled back afterwards).
import { assignDirect } from './assignment/direct.js';
import { BORROW, nominalOnly, quotaMode } from './assignment/quota-mode.js';
import { ETA_MAX_JOBS, type EtaResult, simulateEtas } from './eta.js';
import type { FlavorState } from './nodes.js';
import { CPU, GPU, MEM } from './quota.js';
import type { CoreState, JobState, TreeView } from './state.js';
import { rollback, tRelease, tReleaseHeld } from './trail.js';

export function expectedEnd(j: JobState): number | null {
  const d = j.spec.expectedDurationMs ?? j.spec.maxRunMs;
  return d === undefined ? null : j.admittedAt + d;
}

/** The job's simulated admission time (see eta.ts), computed once per tree view. */
export function etaOf(core: CoreState, view: TreeView, j: JobState): EtaResult {
  if (!view.etas) view.etas = simulateTree(core, view.order);
  return view.etas.get(j) ?? { at: null, why: 'TooFarAhead' };
}

export function simulateTree(core: CoreState, all: JobState[]): Map<JobState, EtaResult> {
  const order = all.slice(0, ETA_MAX_JOBS);
  const roots = new Set(order.map((j) => j.queue.root));
  const flavors = new Set(order.flatMap((j) => j.podSets.flatMap((p) => p.flavors)));
  const running: { end: number | null; release: () => void }[] = [];
  for (const o of core.jobs.values()) {
    if (o.status !== 'admitted') continue;
    let relevant = roots.has(o.queue.root);
    if (!relevant) for (const f of o.usage.keys()) if (flavors.has(f)) relevant = true;
    if (relevant) running.push({ end: expectedEnd(o), release: () => tRelease(core, o) });
  }
  const mark = core.trail.length;
  const out = simulateEtas<JobState>({
    now: core.clock.now(),
    order,
    strictQueueOf: (j) => (j.queue.strategy === 'StrictFIFO' ? j.queue : null),
    durationOf: (j) => j.spec.expectedDurationMs ?? j.spec.maxRunMs,
    running,
    signatureOf: (j) =>
      `${j.queue.spec.name}|${j.shapeKeys.join(';')}|${j.podSets.map((p) => `${p.count}/${p.minCount}`).join(',')}`,
    tryAdmit: (j) => trialAdmit(core, j),
  });
  rollback(core, mark);
  return out;
}

/** Admits a job on the snapshot (full gang, else its minimum) and returns the trial release of what it took.
 *
 */
export function trialAdmit(core: CoreState, j: JobState): (() => void) | null {
  // Quick reject before a trial assignment: each pod set needs, at its gang minimum, a flavor the
  // quota admits without preemption and whose nodes have that much free in total.
  for (const ps of j.podSets) {
    const n = ps.minCount;
    const vec = [ps.shape.gpu * n, ps.shape.cpu * n, ps.shape.mem * n];
    const ok = ps.flavors.some((f) => {
      const fs = core.flavors.get(f) as FlavorState;
      return (
        fs.freeGpu >= (vec[GPU] as number) &&
        fs.freeCpu >= (vec[CPU] as number) &&
        fs.freeMem >= (vec[MEM] as number) &&
        quotaMode(j.queue, f, vec, undefined, nominalOnly(j)).mode <= BORROW
      );
    });
    if (!ok) return null;
  }
  let r = assignDirect(
    core,
    j,
    j.podSets.map((p) => p.count),
  );
  if (!r.ok && j.podSets.some((p) => p.minCount < p.count))
    r = assignDirect(
      core,
      j,
      j.podSets.map((p) => p.minCount),
    );
  if (!r.ok) return null;
  const q = j.queue;
  const usage = r.usage;
  const allocs = r.parts.flatMap((p) => p.allocs);
  const guaranteed = nominalOnly(j);
  return () => tReleaseHeld(core, q, usage, allocs, guaranteed);
}
