// The snapshot is the live state plus this undo trail: every trial change (charging quota, claiming
// node capacity, releasing a would-be victim) pushes its inverse, and a rejected or what-if decision
// rolls the trail back to its mark, leaving the state exactly as it was. Every trial mutation must go
// through these functions; anything else breaks `preview` and the rollback of rejected decisions.

import { addGuaranteed, neverPreempted } from './guaranteed.js';
import {
  type FlavorState,
  type NodeState,
  type PlaceScore,
  type PodAlloc,
  placePods,
  reapplyAlloc,
  releaseAlloc,
  type Shape,
} from './nodes.js';
import { fragShapes } from './pending-shapes.js';
import { addUsage, RESOURCE_COUNT, removeUsage } from './quota.js';
import type { CoreState, JobState, QueueState } from './state.js';

/** Charges (sign 1) or releases (sign −1) usage to the queue's quota tree; `guaranteed`: a never-preempted
 * job's, kept in the queue's guaranteed usage as well (guaranteed.ts).
 */
export function chargeQueue(
  q: QueueState,
  usage: Map<string, number[]>,
  sign: 1 | -1,
  guaranteed = false,
): void {
  q.usageVersion++;
  if (guaranteed) addGuaranteed(q, usage, sign);
  for (const [f, v] of usage) {
    for (let r = 0; r < RESOURCE_COUNT; r++) {
      const x = v[r] as number;
      if (x === 0) continue;
      if (sign > 0) addUsage(q.node, f, r, x);
      else removeUsage(q.node, f, r, x);
    }
  }
}

export function rollback(core: CoreState, mark: number): void {
  while (core.trail.length > mark) (core.trail.pop() as () => void)();
}

export function tCharge(
  core: CoreState,
  q: QueueState,
  usage: Map<string, number[]>,
  guaranteed = false,
): void {
  chargeQueue(q, usage, 1, guaranteed);
  core.trail.push(() => chargeQueue(q, usage, -1, guaranteed));
}

export function tPlace(
  core: CoreState,
  flavor: FlavorState,
  count: number,
  shape: Shape,
  eligible: (n: NodeState) => boolean,
  score?: PlaceScore,
): PodAlloc[] | null {
  const frag = core.placementMode === 'fragmentation-aware' ? fragShapes(core, flavor.spec.name) : null;
  const allocs = placePods(flavor, count, shape, eligible, frag, score);
  if (allocs && allocs.length > 0)
    core.trail.push(() => {
      for (let i = allocs.length - 1; i >= 0; i--) releaseAlloc(allocs[i] as PodAlloc);
    });
  return allocs;
}

/** Trial release of an admitted job's quota and node capacity. */
export function tRelease(core: CoreState, j: JobState): void {
  const g = neverPreempted(j);
  chargeQueue(j.queue, j.usage, -1, g);
  for (let i = j.allocs.length - 1; i >= 0; i--) releaseAlloc(j.allocs[i] as PodAlloc);
  core.trail.push(() => {
    for (const a of j.allocs) reapplyAlloc(a);
    chargeQueue(j.queue, j.usage, 1, g);
  });
}

export function tReadd(core: CoreState, j: JobState): void {
  const g = neverPreempted(j);
  for (const a of j.allocs) reapplyAlloc(a);
  chargeQueue(j.queue, j.usage, 1, g);
  core.trail.push(() => {
    chargeQueue(j.queue, j.usage, -1, g);
    for (let i = j.allocs.length - 1; i >= 0; i--) releaseAlloc(j.allocs[i] as PodAlloc);
  });
}

/** Trial removal of usage from a queue (a would-be victim's quota, for a share comparison). */
export function tUncharge(core: CoreState, q: QueueState, usage: Map<string, number[]>): void {
  chargeQueue(q, usage, -1);
  core.trail.push(() => chargeQueue(q, usage, 1));
}

/**
 * Trial release of capacity held under `q` (a simulated admission's quota and pods, the ETA
 * search's end event); its undo goes on the trail like every other trial change. `guaranteed`: the
 * simulated job is never preempted (its usage leaves the queue's guaranteed usage too).
 */
export function tReleaseHeld(
  core: CoreState,
  q: QueueState,
  usage: Map<string, number[]>,
  allocs: PodAlloc[],
  guaranteed = false,
): void {
  chargeQueue(q, usage, -1, guaranteed);
  for (let i = allocs.length - 1; i >= 0; i--) releaseAlloc(allocs[i] as PodAlloc);
  core.trail.push(() => {
    for (const a of allocs) reapplyAlloc(a);
    chargeQueue(q, usage, 1, guaranteed);
  });
}
