// The expected workload for fragmentation-aware placement (FGD's task distribution): shapes and
// popularity given by the caller (`SchedulerOptions.workloadShapes`, `Scheduler.setWorkloadShapes`).
// Per flavor the score uses the shapes that may run there, weighted by their share of the whole
// workload (not renormalised per flavor, so fragmentation increases compare across flavors).

import { SchedulerInputError } from './errors.js';
import type { WeightedShape } from './nodes.js';
import { CPU, GPU, MEM } from './quota.js';
import type { CoreState } from './state.js';
import type { WorkloadShape } from './types.js';
import { toInternal } from './units.js';

/** The most popular shapes kept per flavor: the score's cost grows with their number. */
export const MAX_WORKLOAD_SHAPES = 256;

const perFlavor = new WeakMap<readonly WorkloadShape[], Map<string, WeightedShape[]>>();

export function setWorkloadShapes(core: CoreState, shapes: readonly WorkloadShape[]): void {
  for (const w of shapes) {
    const v = [w.perPod.gpu ?? 0, w.perPod.cpu ?? 0, w.perPod.memory ?? 0, w.weight];
    if (v.some((x) => !Number.isFinite(x) || x < 0))
      throw new SchedulerInputError(
        'INVALID_QUANTITY',
        'workload shape quantities and weights must be finite and ≥ 0',
      );
  }
  core.workloadShapes =
    shapes.length > 0
      ? shapes.map((w) => ({
          ...w,
          perPod: { ...w.perPod },
          ...(w.flavors ? { flavors: [...w.flavors] } : {}),
        }))
      : null;
  core.fragShapeCache.clear();
}

/** The workload's GPU shapes that may use this flavor (at most MAX_WORKLOAD_SHAPES, most popular first). */
export function workloadFragShapes(core: CoreState, flavor: string): WeightedShape[] {
  const all = core.workloadShapes ?? [];
  // memo per workload list (replaced as a whole by setWorkloadShapes), so pending-shape changes
  // (which clear fragShapeCache) do not rebuild it
  let byFlavor = perFlavor.get(all);
  if (!byFlavor) perFlavor.set(all, (byFlavor = new Map()));
  let s = byFlavor.get(flavor);
  if (s) return s;
  let total = 0;
  for (const w of all) total += w.weight;
  s = all
    .filter(
      (w) =>
        w.weight > 0 && (w.perPod.gpu ?? 0) > 0 && (w.flavors === undefined || w.flavors.includes(flavor)),
    )
    .map((w) => ({
      gpu: toInternal(GPU, w.perPod.gpu ?? 0),
      cpu: toInternal(CPU, w.perPod.cpu ?? 0),
      mem: toInternal(MEM, w.perPod.memory ?? 0),
      weight: total > 0 ? w.weight / total : 0,
    }))
    .sort((a, b) => b.weight - a.weight || a.gpu - b.gpu || a.cpu - b.cpu || a.mem - b.mem)
    .slice(0, MAX_WORKLOAD_SHAPES);
  byFlavor.set(flavor, s);
  return s;
}
