// The fragmentation-aware node score (after the FGD paper, Weng et al., ATC'23): a node's expected
// fragmentation is the free GPU capacity that a pod drawn from the expected workload could not use,
// weighted by each shape's popularity; a pod goes where (node and, for a GPU share, which GPU) that
// expectation grows least. "Could not use" is the simulator's definition (docs/simulator.md):
// nothing is usable if the node lacks the pod's cpu or memory; a share cannot use a GPU whose free
// part is below it; a whole-GPU pod cannot use partly used GPUs, nor any if too few GPUs are whole;
// slices are usable while the node has enough of them.
import type { NodeState, Shape, WeightedShape } from './node-types.js';

/**
 * Shapes grouped for a fast score: one entry per GPU request (ascending), holding the shapes of that
 * request with their cpu/memory thresholds and weights. Built once per shape list (cached by identity).
 */
export interface FragGroups {
  gpu: number[];
  /** Per group: [cpu, mem, weight] triples, flattened. */
  req: number[][];
}

const groupCache = new WeakMap<readonly WeightedShape[], FragGroups>();

export function fragGroups(shapes: readonly WeightedShape[]): FragGroups {
  let g = groupCache.get(shapes);
  if (g) return g;
  const by = new Map<number, number[]>();
  for (const s of shapes) {
    if (s.gpu <= 0 || s.weight <= 0) continue;
    let a = by.get(s.gpu);
    if (!a) by.set(s.gpu, (a = []));
    a.push(s.cpu, s.mem, s.weight);
  }
  const gpu = [...by.keys()].sort((x, y) => x - y);
  g = { gpu, req: gpu.map((x) => by.get(x) as number[]) };
  groupCache.set(shapes, g);
  return g;
}

/**
 * Expected unusable free GPU (milli, weighted) of a node state: `free` per physical GPU, the node's
 * free cpu and memory, its flavor kind and milli-units per GPU.
 */
export function fragOf(
  free: readonly number[],
  per: number,
  kind: string,
  cpuFree: number,
  memFree: number,
  g: FragGroups,
): number {
  let total = 0;
  let whole = 0;
  for (const f of free) {
    total += f;
    if (f === per) whole++;
  }
  if (total <= 0) return 0;
  const sorted = kind === 'gpu' ? [...free].sort((a, b) => a - b) : free;
  let out = 0;
  let below = 0; // Σ free of GPUs whose free share is below the current request (gpu kind, shares)
  let k = 0;
  for (let i = 0; i < g.gpu.length; i++) {
    const need = g.gpu[i] as number;
    const req = g.req[i] as number[];
    let fit = 0;
    let all = 0;
    for (let j = 0; j < req.length; j += 3) {
      const w = req[j + 2] as number;
      all += w;
      if ((req[j] as number) <= cpuFree && (req[j + 1] as number) <= memFree) fit += w;
    }
    let u: number;
    if (kind === 'gpu') {
      if (need < 1000) {
        while (k < sorted.length && (sorted[k] as number) < need) below += sorted[k++] as number;
        u = below;
      } else u = whole * 1000 < need ? total : total - whole * per;
    } else u = total < need ? total : 0;
    out += (all - fit) * total + fit * u;
  }
  return out;
}

/** A candidate's expected fragmentation increase if one pod of `s` goes on `node` (and which GPU, for a share). */
export interface FragChoice {
  delta: number;
  /** For a share on a gpu flavor: the GPU index to use; -1 otherwise. */
  gpu: number;
}

/**
 * The best GPU choice for one pod of `s` on a node that fits it: for a share, every GPU with a
 * distinct free amount that holds it is tried; whole GPUs and slices have only one outcome.
 */
export function fragChoice(node: NodeState, s: Shape, g: FragGroups): FragChoice {
  const per = node.flavor.perGpuMilli;
  const kind = node.flavor.spec.kind;
  const free = node.gpuFree;
  const before = fragOf(free, per, kind, node.cpuFree, node.memFree, g);
  const cpu = node.cpuFree - s.cpu;
  const mem = node.memFree - s.mem;
  if (s.gpu === 0) return { delta: fragOf(free, per, kind, cpu, mem, g) - before, gpu: -1 };
  const after = free.slice();
  if (kind === 'gpu' && s.gpu < 1000) {
    let best: FragChoice | null = null;
    const seen: number[] = [];
    for (let i = 0; i < free.length; i++) {
      const f = free[i] as number;
      if (f < s.gpu || seen.includes(f)) continue;
      seen.push(f);
      after[i] = f - s.gpu;
      const d = fragOf(after, per, kind, cpu, mem, g) - before;
      after[i] = f;
      // ties: the fuller GPU (best-fit within the node), then the lower index
      if (!best || d < best.delta || (d === best.delta && f < (free[best.gpu] as number)))
        best = { delta: d, gpu: i };
    }
    return best as FragChoice;
  }
  // whole GPUs / slices: take from the same GPUs allocPod would
  let need = s.gpu;
  if (kind === 'gpu') {
    for (let i = 0; i < after.length && need > 0; i++)
      if (after[i] === per) {
        after[i] = 0;
        need -= 1000;
      }
  } else {
    const order = after
      .map((f, i) => [f, i] as const)
      .filter(([f]) => f >= 1000)
      .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (const [, i] of order) {
      while (need > 0 && (after[i] as number) >= 1000) {
        after[i] = (after[i] as number) - 1000;
        need -= 1000;
      }
      if (need <= 0) break;
    }
  }
  return { delta: fragOf(after, per, kind, cpu, mem, g) - before, gpu: -1 };
}

/** Key of a node's free state: nodes with equal keys score alike for the same shapes. */
export function stateKey(node: NodeState): string {
  if (node.keyVer !== node.ver) {
    node.key = `${node.flavor.spec.kind}|${node.flavor.perGpuMilli}|${node.cpuFree}|${node.memFree}|${node.gpuFree.join(',')}`;
    node.keyVer = node.ver;
  }
  return node.key;
}
