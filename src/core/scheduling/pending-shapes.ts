// The index of pending pod shapes: for pendingShapes() and the fragmentation-aware placement score.
import type { WeightedShape } from './nodes.js';
import type { CoreState, JobState } from './state.js';
import type { PendingShape } from './types.js';
import { workloadFragShapes } from './workload-shapes.js';

/** Counts a job's pod sets in the index; the fragmentation score's shape cache starts over. */
export function addPendingShapes(core: CoreState, j: JobState): void {
  j.podSets.forEach((ps, i) => {
    const key = j.shapeKeys[i] as string;
    let s = core.shapes.get(key);
    if (!s) {
      s = { flavors: ps.flavors, shape: ps.shape, pods: 0, jobs: 0 };
      core.shapes.set(key, s);
    }
    s.pods += ps.count;
    s.jobs++;
  });
  if (core.placementMode === 'fragmentation-aware') core.fragShapeCache.clear();
}

export function removePendingShapes(core: CoreState, j: JobState): void {
  j.podSets.forEach((ps, i) => {
    const key = j.shapeKeys[i] as string;
    const s = core.shapes.get(key);
    if (!s) return;
    s.pods -= ps.count;
    s.jobs--;
    if (s.jobs === 0) core.shapes.delete(key);
  });
  if (core.placementMode === 'fragmentation-aware') core.fragShapeCache.clear();
}

/** The expected workload's shapes if set (workload-shapes.ts), else the (at most 8) most common pending GPU
 * shapes that may use this flavor, weighted by pod count.
 */
export function fragShapes(core: CoreState, flavor: string): WeightedShape[] {
  if (core.workloadShapes) return workloadFragShapes(core, flavor);
  let s = core.fragShapeCache.get(flavor);
  if (!s) {
    const top = [...core.shapes.values()]
      .filter((x) => x.flavors.includes(flavor) && x.shape.gpu > 0)
      .sort(
        (a, b) =>
          b.pods - a.pods ||
          a.shape.gpu - b.shape.gpu ||
          a.shape.cpu - b.shape.cpu ||
          a.shape.mem - b.shape.mem,
      )
      .slice(0, 8);
    const pods = top.reduce((n, x) => n + x.pods, 0);
    s = top.map((x) => ({ ...x.shape, weight: x.pods / pods }));
    core.fragShapeCache.set(flavor, s);
  }
  return s;
}

export function pendingShapes(core: CoreState): PendingShape[] {
  return [...core.shapes.values()].map((s) => ({
    flavors: [...s.flavors],
    perPod: { gpu: s.shape.gpu / 1000, cpu: s.shape.cpu, memory: s.shape.mem },
    pods: s.pods,
    jobs: s.jobs,
  }));
}
