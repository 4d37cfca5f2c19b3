import type { NodeStatus } from '../core/scheduling/index.js';

/** Per-pod resource shape of a pending (or expected) pod. gpu is in flavor units. */
export interface PodShape {
  gpu: number;
  cpu: number;
  memory: number;
  /** Flavors the pod may use; undefined = any. */
  flavors?: string[];
}

export function shapeKey(s: PodShape): string {
  return `${s.gpu}|${s.cpu}|${s.memory}|${s.flavors ? s.flavors.join('+') : '*'}`;
}

const EPS = 1e-9;

/**
 * Free GPU capacity (in GPUs) and the part of it that no shape can use.
 *
 * A free (part of a) GPU is usable when at least one shape could place one pod that
 * uses it on that node right now: the node's flavor is allowed, the node has the pod's
 * cpu and memory free, and
 *  - whole-GPU shapes (gpu ≥ 1, gpu flavors): the GPU is entirely free and the node has
 *    at least `gpu` entirely free GPUs;
 *  - fractional shapes (gpu < 1, gpu flavors): the GPU's free share is ≥ the pod's share;
 *  - mig/timeslice flavors: the node has at least `gpu` free slices in all.
 * Shapes asking for no GPU never make a GPU usable.
 */
export function fragmentation(
  nodes: readonly NodeStatus[],
  shapes: readonly PodShape[],
): { free: number; unusable: number } {
  let free = 0;
  let unusable = 0;
  const gpuShapes = shapes.filter((s) => s.gpu > 0);
  for (const n of nodes) {
    if (n.gpus.length === 0) continue;
    let fullFree = 0;
    let freeUnits = 0;
    for (const g of n.gpus) {
      if (g.free >= g.capacity - EPS) fullFree++;
      freeUnits += g.free;
    }
    if (freeUnits <= EPS) continue;
    const fits = gpuShapes.filter(
      (s) =>
        (s.flavors === undefined || s.flavors.includes(n.flavor)) &&
        s.cpu <= n.free.cpu + EPS &&
        s.memory <= n.free.memory + EPS,
    );
    for (const g of n.gpus) {
      if (g.free <= EPS) continue;
      const gpuFree = g.free / (g.capacity || 1);
      free += gpuFree;
      let usable = false;
      for (const s of fits) {
        if (n.kind === 'gpu') {
          if (s.gpu >= 1) {
            if (g.free >= g.capacity - EPS && fullFree >= s.gpu - EPS) usable = true;
          } else if (g.free >= s.gpu - EPS) usable = true;
        } else if (freeUnits >= s.gpu - EPS) usable = true;
        if (usable) break;
      }
      if (!usable) unusable += gpuFree;
    }
  }
  return { free, unusable };
}

/** GPU units in use on the nodes (flavor units: GPUs, or slices for mig/timeslice), as jobs count them. */
export function unitsInUse(nodes: readonly NodeStatus[]): number {
  let used = 0;
  for (const n of nodes) for (const g of n.gpus) used += g.capacity - g.free;
  return used;
}
