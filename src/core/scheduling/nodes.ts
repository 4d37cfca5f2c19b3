// Node capacity and pod placement. GPU amounts are integer milli-units: a whole GPU is 1000,
// a MIG slice or time-slice share is 1000 as well (so a 7-slice A100 holds 7000).
import { type FragChoice, fragChoice, fragGroups, stateKey } from './frag-score.js';
import type { FlavorState, NodeState, PodAlloc, Shape, WeightedShape } from './node-types.js';
import type { NodeSpec } from './types.js';

export type { FlavorState, NodeState, PodAlloc, Shape, WeightedShape } from './node-types.js';

export function isFractional(flavor: FlavorState, gpuMilli: number): boolean {
  return flavor.spec.kind === 'gpu' && gpuMilli > 0 && gpuMilli < 1000;
}

export function newNodeState(spec: NodeSpec, flavor: FlavorState): NodeState {
  const gpuFree = new Array<number>(spec.gpus).fill(flavor.perGpuMilli);
  return {
    spec,
    flavor,
    gpuFree,
    freeGpuTotal: spec.gpus * flavor.perGpuMilli,
    cpuFree: Math.round(spec.cpu),
    memFree: Math.round(spec.memory),
    pods: 0,
    ver: 0,
    key: '',
    keyVer: -1,
  };
}

/** Could one pod of this shape go on this node right now? */
export function fitsPod(node: NodeState, s: Shape): boolean {
  if (node.cpuFree < s.cpu || node.memFree < s.mem) return false;
  if (s.gpu === 0) return true;
  if (node.freeGpuTotal < s.gpu) return false;
  const per = node.flavor.perGpuMilli;
  if (node.flavor.spec.kind === 'gpu') {
    if (s.gpu < 1000) {
      for (const f of node.gpuFree) if (f >= s.gpu) return true;
      return false;
    }
    let whole = 0;
    for (const f of node.gpuFree) if (f === per) whole++;
    return whole * 1000 >= s.gpu;
  }
  return true; // slices may span GPUs of the node; total already checked
}

/** How many pods of this shape the node could take right now (ignoring tenant/pool eligibility). */
export function podsThatFit(node: NodeState, s: Shape): number {
  let n = Number.POSITIVE_INFINITY;
  if (s.cpu > 0) n = Math.floor(node.cpuFree / s.cpu);
  if (s.mem > 0) n = Math.min(n, Math.floor(node.memFree / s.mem));
  if (s.gpu > 0) {
    const per = node.flavor.perGpuMilli;
    let g = 0;
    if (node.flavor.spec.kind === 'gpu' && s.gpu < 1000)
      for (const f of node.gpuFree) g += Math.floor(f / s.gpu);
    else if (node.flavor.spec.kind === 'gpu') {
      let whole = 0;
      for (const f of node.gpuFree) if (f === per) whole++;
      g = Math.floor((whole * 1000) / s.gpu);
    } else g = Math.floor(node.freeGpuTotal / s.gpu);
    n = Math.min(n, g);
  }
  return Math.max(0, n === Number.POSITIVE_INFINITY ? 1_000_000 : n);
}

/** Upper bound on the pods of this shape the flavor's nodes could take right now. */
export function flavorPodCapacity(flavor: FlavorState, s: Shape, atLeast: number): number {
  let total = 0;
  for (const n of s.gpu > 0 ? flavor.withFreeGpu : flavor.nodes) {
    total += podsThatFit(n, s);
    if (total >= atLeast) return total;
  }
  return total;
}

/** Could one pod of this shape ever go on this node (empty)? */
export function nodeCanEverHold(node: NodeState, s: Shape): boolean {
  const spec = node.spec;
  if (spec.cpu < s.cpu || spec.memory < s.mem) return false;
  if (s.gpu === 0) return true;
  if (node.flavor.spec.kind === 'gpu' && s.gpu < 1000) return spec.gpus >= 1;
  return spec.gpus * node.flavor.perGpuMilli >= s.gpu;
}

function applyAlloc(a: PodAlloc): void {
  const n = a.node;
  const hadFree = n.freeGpuTotal > 0;
  for (let i = 0; i < a.gpus.length; i++) {
    const idx = a.gpus[i] as number;
    n.gpuFree[idx] = (n.gpuFree[idx] as number) - (a.gpuMilli[i] as number);
    n.freeGpuTotal -= a.gpuMilli[i] as number;
    n.flavor.freeGpu -= a.gpuMilli[i] as number;
  }
  n.cpuFree -= a.cpu;
  n.memFree -= a.mem;
  n.flavor.freeCpu -= a.cpu;
  n.flavor.freeMem -= a.mem;
  n.pods++;
  n.ver++;
  if (hadFree && n.freeGpuTotal <= 0) n.flavor.withFreeGpu.delete(n);
}

export function releaseAlloc(a: PodAlloc): void {
  const n = a.node;
  if (n.freeGpuTotal <= 0 && a.gpus.length > 0) n.flavor.withFreeGpu.add(n);
  for (let i = 0; i < a.gpus.length; i++) {
    const idx = a.gpus[i] as number;
    n.gpuFree[idx] = (n.gpuFree[idx] as number) + (a.gpuMilli[i] as number);
    n.freeGpuTotal += a.gpuMilli[i] as number;
    n.flavor.freeGpu += a.gpuMilli[i] as number;
  }
  n.cpuFree += a.cpu;
  n.memFree += a.mem;
  n.flavor.freeCpu += a.cpu;
  n.flavor.freeMem += a.mem;
  n.pods--;
  n.ver++;
}

/** Re-applies an exact earlier allocation (undo of a trial release, or restore after restart). */
export function reapplyAlloc(a: PodAlloc): void {
  applyAlloc(a);
}

/** Chooses GPUs for one pod on a node that fits it (a share goes on GPU `shareGpu` when given), and claims them. */
export function allocPod(node: NodeState, s: Shape, shareGpu = -1): PodAlloc {
  const gpus: number[] = [];
  const gpuMilli: number[] = [];
  const per = node.flavor.perGpuMilli;
  if (s.gpu > 0) {
    if (node.flavor.spec.kind === 'gpu') {
      if (s.gpu < 1000) {
        // Pack shares: the GPU with the least free share that still fits.
        let best = shareGpu >= 0 && (node.gpuFree[shareGpu] as number) >= s.gpu ? shareGpu : -1;
        for (let i = 0; i < node.gpuFree.length && shareGpu < 0; i++) {
          const f = node.gpuFree[i] as number;
          if (f >= s.gpu && (best < 0 || f < (node.gpuFree[best] as number))) best = i;
        }
        gpus.push(best);
        gpuMilli.push(s.gpu);
      } else {
        let need = s.gpu / 1000;
        for (let i = 0; i < node.gpuFree.length && need > 0; i++) {
          if (node.gpuFree[i] === per) {
            gpus.push(i);
            gpuMilli.push(1000);
            need--;
          }
        }
      }
    } else {
      // Slices/shares: fill the fullest GPUs first so whole GPUs stay free for bigger shapes.
      const order = node.gpuFree
        .map((f, i) => [f, i] as const)
        .filter(([f]) => f >= 1000)
        .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
      let need = s.gpu / 1000;
      for (const [f, i] of order) {
        let take = Math.min(need, Math.floor(f / 1000));
        while (take-- > 0) {
          gpus.push(i);
          gpuMilli.push(1000);
          need--;
        }
        if (need === 0) break;
      }
    }
  }
  const a: PodAlloc = { node, cpu: s.cpu, mem: s.mem, gpus, gpuMilli };
  applyAlloc(a);
  return a;
}

/** How good a placement was (summed over its pods), to compare flavors: lower is better, in this order. */
export interface PlaceScore {
  /** Expected fragmentation increase (fragmentation-aware placement; 0 under best-fit). */
  frag: number;
  /** GPU (milli) left free on the chosen nodes, after each pod. */
  leftGpu: number;
  /** CPU left free on the chosen nodes, after each pod. */
  leftCpu: number;
}

/** a < b as placements: fragmentation increase, then best-fit (GPU, then CPU left). */
export function scoreLess(a: PlaceScore, b: PlaceScore): boolean {
  if (a.frag !== b.frag) return a.frag < b.frag;
  if (a.leftGpu !== b.leftGpu) return a.leftGpu < b.leftGpu;
  return a.leftCpu < b.leftCpu;
}

/**
 * Places `count` pods of one shape on the flavor's eligible nodes, claiming capacity as it goes.
 * Best-fit: the node left with the least free GPU (then CPU) after one pod, then as many pods of
 * the gang as fit on it. Fragmentation-aware (`fragShapes` given): the node and GPU where the
 * expected fragmentation for those shapes (frag-score.ts) grows least, best-fit as tie-break.
 * Returns null (and claims nothing) if the gang cannot be placed whole. `score`, when given,
 * receives the sums over the pods placed.
 */
export function placePods(
  flavor: FlavorState,
  count: number,
  s: Shape,
  eligible: (n: NodeState) => boolean,
  fragShapes: readonly WeightedShape[] | null,
  score?: PlaceScore,
): PodAlloc[] | null {
  if (count === 0) return [];
  if (flavor.freeGpu < s.gpu * count || flavor.freeCpu < s.cpu * count || flavor.freeMem < s.mem * count)
    return null;
  const groups = fragShapes && fragShapes.length > 0 ? fragGroups(fragShapes) : null;
  // node states already scored (equal free state, equal score): valid for the whole call, since a
  // placed pod changes its node's state and so its key
  const memo = groups ? new Map<string, FragChoice>() : null;
  const allocs: PodAlloc[] = [];
  let remaining = count;
  while (remaining > 0) {
    let best: NodeState | null = null;
    let bestFrag = 0;
    let bestShare = -1;
    let bestGpu = 0;
    let bestCpu = 0;
    // A snapshot: trial allocations below may take nodes out of (and back into) the live set.
    const scan = s.gpu > 0 ? [...flavor.withFreeGpu] : flavor.nodes;
    for (const n of scan) {
      if (!fitsPod(n, s) || !eligible(n)) continue;
      const leftGpu = n.freeGpuTotal - s.gpu;
      const leftCpu = n.cpuFree - s.cpu;
      let frag = 0;
      let share = -1;
      if (groups && memo) {
        const key = stateKey(n);
        let c = memo.get(key);
        if (!c) memo.set(key, (c = fragChoice(n, s, groups)));
        frag = c.delta;
        share = c.gpu;
      }
      if (
        best === null ||
        frag < bestFrag ||
        (frag === bestFrag &&
          (leftGpu < bestGpu ||
            (leftGpu === bestGpu &&
              (leftCpu < bestCpu || (leftCpu === bestCpu && n.spec.name < best.spec.name)))))
      ) {
        best = n;
        bestFrag = frag;
        bestShare = share;
        bestGpu = leftGpu;
        bestCpu = leftCpu;
      }
    }
    if (!best) {
      for (let i = allocs.length - 1; i >= 0; i--) releaseAlloc(allocs[i] as PodAlloc);
      return null;
    }
    if (score) {
      score.frag += bestFrag;
      score.leftGpu += bestGpu;
      score.leftCpu += bestCpu;
    }
    allocs.push(allocPod(best, s, bestShare));
    remaining--;
    // the rest of a gang on the same node while it fits: the first pod's choice, repeated
    while (remaining > 0 && fitsPod(best, s)) {
      if (score) {
        score.leftGpu += best.freeGpuTotal - s.gpu;
        score.leftCpu += best.cpuFree - s.cpu;
      }
      allocs.push(allocPod(best, s));
      remaining--;
    }
  }
  return allocs;
}
