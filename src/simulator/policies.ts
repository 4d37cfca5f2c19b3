import { Scheduler, type Clock, type QueueSpec, type QuotaSpec } from '../core/index.js';
import { flavorCapacity, type SimCluster } from './cluster.js';
import { coreTimeWindows, type SimQueue, type SimQueues } from './queues.js';
import type { TraceJob } from './trace.js';

export type PolicyName = 'fairway' | 'static' | 'fifo';
export const POLICIES: readonly PolicyName[] = ['fairway', 'static', 'fifo'];
export type PlacementName = 'best-fit' | 'fragmentation-aware';
export const PLACEMENTS: readonly PlacementName[] = ['best-fit', 'fragmentation-aware'];

/** The queue every job uses under the `fifo` policy, and its tenant. */
export const FIFO_QUEUE = 'fifo';

export interface BuiltScheduler {
  sched: Scheduler;
  /** Core queue and core tenant for a trace job (fifo maps every job to one queue). */
  route(job: TraceJob, tenantQueue: SimQueue): { queue: string; tenant: string };
  /** Priority class passed to the core. */
  priorityOf(job: TraceJob): string;
}

/** The trace's default priority class when a row names none. */
export const DEFAULT_CLASS = 'training';

/**
 * The fairway policy's preemption for a queue without a preemption block: lenders reclaim their
 * nominal at once from anyone (the SLA), nothing is preempted within a queue, and a borrower wins
 * by fair share only against jobs that would lose at most 30 minutes of run time (since their last
 * checkpoint): long runners are taken back only for nominal owed, never to even out shares. On
 * Philly at 768 GPUs this cut GPU-hours lost from ~7% to ~0.4% of those delivered (docs/simulator.md).
 */
export const FAIRWAY_DEFAULT_PREEMPTION = {
  withinQueue: 'Never',
  reclaimWithinCohort: 'Any',
  fairShareMaxLostRunMs: 30 * 60_000,
} as const satisfies QueueSpec['preemption'];

/**
 * Build a core Scheduler configured for a policy:
 * - fairway: the queues file as written (cohorts, borrowing, weights); fair sharing on;
 *   queues without a preemption block get FAIRWAY_DEFAULT_PREEMPTION (reclaimWithinCohort Any,
 *   withinQueue Never, fairShareMaxLostRunMs 30 min).
 * - static: every queue keeps only its nominal (borrowingLimit 0 on each declared
 *   resource, no cohort, no reclaim, no fair sharing).
 * - fifo: one BestEffortFIFO queue owning the whole cluster (nominal = capacity per
 *   flavor for gpu, cpu and memory), no preemption; every job has the same priority class
 *   so arrival order decides.
 */
export function buildScheduler(
  policy: PolicyName,
  placement: PlacementName,
  cluster: SimCluster,
  queues: SimQueues,
  clock: Clock,
): BuiltScheduler {
  const sched = new Scheduler({
    clock,
    placement,
    fairSharing:
      policy === 'fairway'
        ? { enabled: true, ...(queues.fairSharing ?? {}) }
        : { enabled: false },
  });
  for (const f of cluster.flavors) sched.upsertFlavor({ ...f });
  for (const n of cluster.nodes) sched.upsertNode({ ...n });
  if (policy === 'fifo') {
    const quotas: QuotaSpec = {};
    for (const [flavor, cap] of flavorCapacity(cluster)) {
      quotas[flavor] = { gpu: { nominal: cap.gpu }, cpu: { nominal: cap.cpu }, memory: { nominal: cap.memory } };
    }
    sched.upsertQueue({
      name: FIFO_QUEUE,
      tenant: FIFO_QUEUE,
      quotas,
      queueingStrategy: 'BestEffortFIFO',
      preemption: { withinQueue: 'Never', reclaimWithinCohort: 'Never' },
    });
    return {
      sched,
      route: () => ({ queue: FIFO_QUEUE, tenant: FIFO_QUEUE }),
      priorityOf: () => DEFAULT_CLASS,
    };
  }
  if (policy === 'fairway') {
    // parents before children
    const done = new Set<string>();
    const byName = new Map(queues.cohorts.map((c) => [c.name, c]));
    const add = (name: string): void => {
      if (done.has(name)) return;
      const c = byName.get(name)!;
      if (c.parent !== undefined) add(c.parent);
      sched.upsertCohort({ name: c.name, ...(c.parent !== undefined ? { parent: c.parent } : {}), ...(c.quotas ? { quotas: c.quotas } : {}) });
      done.add(name);
    };
    for (const c of queues.cohorts) add(c.name);
  }
  for (const q of queues.queues) {
    const spec: QueueSpec = { name: q.name, tenant: q.tenant, quotas: q.quotas };
    if (q.weight !== undefined) spec.weight = q.weight;
    if (q.queueingStrategy !== undefined) spec.queueingStrategy = q.queueingStrategy;
    if (q.dedicatedPool !== undefined) spec.dedicatedPool = q.dedicatedPool;
    // time windows: fairway as written, static with its no-borrowing rule (queues.ts); fifo has none
    const windows = coreTimeWindows(q, policy !== 'fairway');
    if (windows) spec.timeWindows = windows;
    if (policy === 'fairway') {
      if (q.cohort !== undefined) spec.cohort = q.cohort;
      if (q.isolation !== undefined) spec.isolation = q.isolation;
      spec.preemption = q.preemption ?? { ...FAIRWAY_DEFAULT_PREEMPTION };
    } else {
      const quotas: QuotaSpec = {};
      for (const [flavor, res] of Object.entries(q.quotas)) {
        const fq: QuotaSpec[string] = {};
        for (const [r, lim] of Object.entries(res)) {
          if (lim) fq[r as 'gpu'] = { nominal: lim.nominal, borrowingLimit: 0 };
        }
        quotas[flavor] = fq;
      }
      spec.quotas = quotas;
      spec.preemption = { withinQueue: q.preemption?.withinQueue ?? 'Never', reclaimWithinCohort: 'Never' };
    }
    sched.upsertQueue(spec);
  }
  return {
    sched,
    route: (_job, tq) => ({ queue: tq.name, tenant: tq.tenant }),
    priorityOf: (job) => job.priority ?? DEFAULT_CLASS,
  };
}
