import {
  applyPolicy,
  baseSetting,
  type IsolationPolicy,
  type LimitSetting,
} from '../core/governance/index.js';
import { type Clock, type QueueSpec, type QuotaSpec, Scheduler } from '../core/scheduling/index.js';
import { flavorCapacity, type SimCluster } from './cluster.js';
import { policyOfQueue } from './governance/policy.js';
import { coreTimeWindows, type SimQueue, type SimQueues } from './queues.js';
import type { TraceJob } from './trace.js';

export type PolicyName = 'fairway' | 'static' | 'fifo' | 'governed' | 'controller';
/** The policies run by default. */
export const POLICIES: readonly PolicyName[] = ['fairway', 'static', 'fifo'];
/** Every policy: the defaults plus the governance ones, which read the queues' governance fields. */
export const ALL_POLICIES: readonly PolicyName[] = [...POLICIES, 'governed', 'controller'];
/** fairway with each governed queue's isolation policy applied (static coefficients, or moved by the
 * controller).
 */
export const isGovernedPolicy = (p: PolicyName): boolean => p === 'governed' || p === 'controller';
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
  /** governed and controller: the policy of each governed queue (by queue name); empty otherwise. */
  governed: Map<string, { queue: SimQueue; policy: IsolationPolicy }>;
}

/** The fairway policy's spec of a queue (its cohort, isolation and preemption as written, or the default
 * preemption).
 */
function fairwayQueueSpec(q: SimQueue): QueueSpec {
  const spec: QueueSpec = { name: q.name, tenant: q.tenant, quotas: q.quotas };
  if (q.weight !== undefined) spec.weight = q.weight;
  if (q.queueingStrategy !== undefined) spec.queueingStrategy = q.queueingStrategy;
  if (q.dedicatedPool !== undefined) spec.dedicatedPool = q.dedicatedPool;
  const windows = coreTimeWindows(q, false);
  if (windows) spec.timeWindows = windows;
  if (q.cohort !== undefined) spec.cohort = q.cohort;
  if (q.isolation !== undefined) spec.isolation = q.isolation;
  spec.preemption = q.preemption ?? { ...FAIRWAY_DEFAULT_PREEMPTION };
  return spec;
}

/** A governed queue's spec under its policy with `setting` in force: the fairway spec through applyPolicy (the services' rule). */
export function governedQueueSpec(q: SimQueue, policy: IsolationPolicy, setting: LimitSetting): QueueSpec {
  return applyPolicy(fairwayQueueSpec(q), policy, setting);
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
 * - governed: fairway, with each governed queue (queues-file isolationPolicy, workloadType or
 *   slaClass) under its isolation policy at the policy's base coefficients (applyPolicy).
 * - controller: governed, the coefficients then moved every window by the controller (governance.ts).
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
      policy === 'fairway' || isGovernedPolicy(policy)
        ? { enabled: true, ...(queues.fairSharing ?? {}) }
        : { enabled: false },
  });
  for (const f of cluster.flavors) sched.upsertFlavor({ ...f });
  for (const n of cluster.nodes) sched.upsertNode({ ...n });
  if (policy === 'fifo') {
    const quotas: QuotaSpec = {};
    for (const [flavor, cap] of flavorCapacity(cluster)) {
      quotas[flavor] = {
        gpu: { nominal: cap.gpu },
        cpu: { nominal: cap.cpu },
        memory: { nominal: cap.memory },
      };
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
      governed: new Map(),
    };
  }
  const governed: BuiltScheduler['governed'] = new Map();
  if (isGovernedPolicy(policy)) {
    for (const q of queues.queues) {
      const p = policyOfQueue(q);
      if (p) governed.set(q.name, { queue: q, policy: p });
    }
  }
  if (policy === 'fairway' || isGovernedPolicy(policy)) {
    // parents before children
    const done = new Set<string>();
    const byName = new Map(queues.cohorts.map((c) => [c.name, c]));
    const add = (name: string): void => {
      if (done.has(name)) return;
      const c = byName.get(name)!;
      if (c.parent !== undefined) add(c.parent);
      sched.upsertCohort({
        name: c.name,
        ...(c.parent !== undefined ? { parent: c.parent } : {}),
        ...(c.quotas ? { quotas: c.quotas } : {}),
      });
      done.add(name);
    };
    for (const c of queues.cohorts) add(c.name);
  }
  for (const q of queues.queues) {
    if (isGovernedPolicy(policy)) {
      const g = governed.get(q.name);
      sched.upsertQueue(g ? governedQueueSpec(q, g.policy, baseSetting(g.policy)) : fairwayQueueSpec(q));
      continue;
    }
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
    governed,
  };
}
