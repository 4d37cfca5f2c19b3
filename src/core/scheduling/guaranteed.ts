// Guaranteed usage: what a queue's jobs of a priority class that is never preempted (`preemptible:
// 'no'`, e.g. inference-critical) hold, per flavor and resource. Such a job fits if this usage plus
// the job stays within the queue's nominal (assignment/quota-mode.ts); the queue's other jobs, and
// what it lent to its cohort, are room it takes back through the normal preemption paths
// (preemption/: its queue's own lower-priority preemptible jobs, reclaim of lent nominal). So the
// guaranteed usage never exceeds the nominal (short of a quota cut), and whatever a queue uses above
// its nominal is always preemptible: a lender's reclaim can always get its nominal back.
// Kept on the queue by every charge and release of such a job (trail.ts chargeQueue), so trials,
// what-ifs and the ETA search see it exactly as they see the quota tree's usage.
import { nominalOf } from './queue-usage.js';
import { RESOURCE_COUNT } from './quota.js';
import type { JobState, QueueState } from './state.js';

/** A job whose priority class is never preempted: it counts in its queue's guaranteed usage. */
export function neverPreempted(j: JobState): boolean {
  return j.preemptible === 'no';
}

/** The queue's guaranteed usage on (f, r), internal units. */
export function guaranteedOf(q: QueueState, f: string, r: number): number {
  return (q.guaranteed.get(f)?.[r] as number | undefined) ?? 0;
}

/** Adds (sign 1) or removes (sign −1) a never-preempted job's usage; an entry back at zero is dropped. */
export function addGuaranteed(q: QueueState, usage: Map<string, number[]>, sign: 1 | -1): void {
  for (const [f, v] of usage) {
    let g = q.guaranteed.get(f);
    if (!g) {
      g = [0, 0, 0];
      q.guaranteed.set(f, g);
    }
    for (let r = 0; r < RESOURCE_COUNT; r++) g[r] = (g[r] as number) + sign * ((v[r] as number) ?? 0);
    if (g.every((x) => x === 0)) q.guaranteed.delete(f);
  }
}

/** What the nominal leaves for another never-preempted job on (f, r): nominal − guaranteed usage
 * (negative only after a quota cut).
 */
export function guaranteedRoom(q: QueueState, f: string, r: number): number {
  return nominalOf(q, f, r) - guaranteedOf(q, f, r);
}

/**
 * Would `request` (not charged yet) keep the queue's guaranteed usage within its nominal on every
 * declared resource it asks for? The only quota test of a never-preempted job that no preemption can
 * change: guaranteed jobs are never victims, so only their own ends make room.
 */
export function guaranteedFits(q: QueueState, request: Map<string, number[]>): boolean {
  for (const [f, v] of request) {
    const fq = q.node.flavors.get(f);
    if (!fq) return false;
    for (let r = 0; r < RESOURCE_COUNT; r++) {
      const x = v[r] as number;
      if (x > 0 && fq.declared[r] && x > guaranteedRoom(q, f, r)) return false;
    }
  }
  return true;
}
