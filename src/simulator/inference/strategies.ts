// The three ways inference services get GPUs beside training, each as the same core configured
// differently (docs/simulator-inference.md): the cluster is the training trace's plus enough nodes
// for the static day reservation, identical under every strategy; what differs is the services'
// queues, their replicas' classes and who decides the replica count.
import {
  type AutoscalerMemory,
  decideReplicas,
  EMPTY_MEMORY,
  minimumAt,
  type ReplicaClasses,
  replicasFor,
  requestRate,
  type ScalingRules,
  serviceLoad,
} from '../../core/inference/index.js';
import type { SimCluster } from '../cluster.js';
import { totalGpus } from '../cluster.js';
import type { SimQueue, SimQueues } from '../queues.js';
import { FAIRWAY_DEFAULT_PREEMPTION } from '../scheduling-policies.js';
import {
  coordinatedRules,
  DAY_WINDOW,
  independentRules,
  isDay,
  reservedGpus,
  type ServiceSpec,
  type Steps,
} from './services.js';

export type StrategyName = 'coordinated' | 'independent' | 'static';
export const STRATEGIES: readonly StrategyName[] = ['coordinated', 'independent', 'static'];

const GUARANTEED = 'inference-critical';
const BURST = 'production';
/** Independent replicas: one class above training that is never preempted. */
const TOP: ReplicaClasses = { guaranteed: GUARANTEED, burst: GUARANTEED };

export interface StrategySetup {
  cluster: SimCluster;
  queues: SimQueues;
  classes: ReplicaClasses;
  /** GPUs added for the services (whole nodes). */
  inferenceGpus: number;
}

/** The training cluster plus whole nodes (shaped as its first node) for the static day reservation. */
export function withInferenceNodes(cluster: SimCluster, services: readonly ServiceSpec[]): SimCluster {
  const like = cluster.nodes[0];
  if (!like) throw new Error('the training cluster has no nodes');
  const per = Math.max(...cluster.nodes.map((n) => n.gpus));
  const maxReplica = Math.max(0, ...services.map((s) => s.gpusPerReplica));
  if (maxReplica > per) throw new Error(`a replica of ${maxReplica} GPUs does not fit a ${per}-GPU node`);
  const count = Math.ceil(reservedGpus(services) / per);
  const nodes = Array.from({ length: count }, (_, k) => ({ ...like, gpus: per, name: `inference-${k}` }));
  return { flavors: cluster.flavors, nodes: [...cluster.nodes, ...nodes] };
}

const gpuQuota = (flavor: string, nominal: number, lendingLimit?: number): SimQueue['quotas'] => ({
  [flavor]: { gpu: lendingLimit === undefined ? { nominal } : { nominal, lendingLimit } },
});

/**
 * The training queues (their cohort as the queues file says) plus one queue per service, and the
 * GPUs added for the services held where the strategy puts them:
 * - coordinated: a service's nominal is its day minimum; it lends what it does not use and reclaims
 *   it (FAIRWAY_DEFAULT_PREEMPTION, as every queue); replicas above the minimum borrow. The added
 *   GPUs beyond the services' nominals are the cohort's own (lent to whoever asks, nobody's to reclaim).
 * - static: a service's nominal is its day reservation; by day it lends nothing, by night the part
 *   above its night reservation; the left-over GPUs of the last node are the cohort's.
 * - independent: services outside the cohort with a nominal as large as the cluster (quota never
 *   stops them, nodes do) and no preemption: they take free GPUs first come first served, ahead of
 *   waiting training (higher class), and never give them back; all added GPUs are the cohort's.
 */
export function setupStrategy(
  strategy: StrategyName,
  training: { cluster: SimCluster; queues: SimQueues },
  services: readonly ServiceSpec[],
): StrategySetup {
  const cluster = withInferenceNodes(training.cluster, services);
  const flavor = training.cluster.nodes[0]!.flavor;
  const inferenceGpus = totalGpus(cluster) - totalGpus(training.cluster);
  const cohorts = training.queues.cohorts;
  const cohort = training.queues.queues.find((q) => q.cohort !== undefined)?.cohort;
  if (!cohort) throw new Error('the training queues have no cohort to share with the services');
  const queues: SimQueue[] = [];
  let cohortGpus = inferenceGpus;
  for (const s of services) {
    const base = { line: 0, name: s.queue, tenant: s.tenant };
    if (strategy === 'coordinated') {
      const nominal = s.dayMinimum * s.gpusPerReplica;
      cohortGpus -= nominal;
      queues.push({
        ...base,
        cohort,
        quotas: gpuQuota(flavor, nominal),
        preemption: { ...FAIRWAY_DEFAULT_PREEMPTION },
      });
    } else if (strategy === 'static') {
      const nominal = s.dayReplicas * s.gpusPerReplica;
      cohortGpus -= nominal;
      queues.push({
        ...base,
        cohort,
        quotas: gpuQuota(flavor, nominal, (s.dayReplicas - s.nightReplicas) * s.gpusPerReplica),
        timeWindows: [{ days: [0, 1, 2, 3, 4, 5, 6], ...DAY_WINDOW, quotas: gpuQuota(flavor, nominal, 0) }],
        preemption: { withinQueue: 'Never', reclaimWithinCohort: 'Any' },
      });
    } else {
      queues.push({
        ...base,
        quotas: gpuQuota(flavor, totalGpus(cluster)),
        preemption: { withinQueue: 'Never', reclaimWithinCohort: 'Never' },
      });
    }
  }
  if (cohortGpus < 0)
    throw new Error(`the services' nominals exceed the ${inferenceGpus} GPUs added for them`);
  const withSpare = cohorts.map((c) =>
    c.name === cohort && cohortGpus > 0 ? { ...c, quotas: gpuQuota(flavor, cohortGpus) } : c,
  );
  if (cohortGpus > 0 && cohorts.find((c) => c.name === cohort)?.quotas)
    throw new Error(`cohort '${cohort}' already has quotas`);
  return {
    cluster,
    queues: { ...training.queues, cohorts: withSpare, queues: [...training.queues.queues, ...queues] },
    classes: strategy === 'coordinated' ? { guaranteed: GUARANTEED, burst: BURST } : TOP,
    inferenceGpus,
  };
}

/** What a service's controller decides at an interval. */
export interface Decision {
  desired: number;
  /** Slots below this run in the guaranteed class. */
  minimum: number;
}

/** Who sets a service's desired replicas each interval. */
export interface ServiceController {
  /** The replicas asked for before the first decision (the service was already serving). */
  readonly initial: number;
  /** Slots below this run in the guaranteed class at `at`, without deciding anything. */
  minimumAt(at: number, desired: number): number;
  /** From `ready` serving replicas, `admitted` of those asked for admitted (serving or warming). */
  decide(at: number, ready: number, intervalMs: number, admitted: number): Decision;
}

/** Replicas the service needs at `at` for its SLA (what it was serving with before the run). */
const neededAt = (s: ServiceSpec, at: number) =>
  Math.max(1, replicasFor(s.latency, requestRate(s.traffic, at), s.targetP95Ms));

class Autoscaled implements ServiceController {
  private memory: AutoscalerMemory = EMPTY_MEMORY;
  private current: number;
  readonly initial: number;
  constructor(
    private readonly s: ServiceSpec,
    private readonly rules: ScalingRules,
    private readonly oneClass: boolean,
    start: number,
  ) {
    this.initial = Math.min(rules.maxReplicas, neededAt(s, start));
    this.current = this.initial;
  }
  minimumAt(at: number, desired: number): number {
    return this.oneClass ? desired : Math.min(minimumAt(this.rules, at), this.rules.maxReplicas);
  }
  decide(at: number, ready: number, intervalMs: number, admitted: number): Decision {
    const rps = requestRate(this.s.traffic, at);
    const load = serviceLoad(this.s.latency, ready, rps);
    const value = this.s.signal === 'IN_FLIGHT' ? load.inFlight : load.p95Ms;
    const requests = (rps * intervalMs) / 1000;
    // The product's rule as the leader runs it: the reading's span, and (coordinated only: an HPA
    // knows nothing of the scheduler) how many of the replicas asked for the scheduler admitted.
    const d = decideReplicas(
      this.rules,
      this.memory,
      this.current,
      ready,
      { at, value, requests, sinceMs: at - intervalMs },
      this.oneClass ? undefined : { admitted },
    );
    this.memory = d.memory;
    this.current = d.desired;
    return { desired: d.desired, minimum: this.oneClass ? d.desired : d.minimum };
  }
}

class Reserved implements ServiceController {
  readonly initial: number;
  constructor(
    private readonly s: ServiceSpec,
    start: number,
  ) {
    this.initial = isDay(start) ? s.dayReplicas : s.nightReplicas;
  }
  minimumAt(_at: number, desired: number): number {
    return desired;
  }
  decide(at: number): Decision {
    const n = isDay(at) ? this.s.dayReplicas : this.s.nightReplicas;
    return { desired: n, minimum: n };
  }
}

export function controllerFor(
  strategy: StrategyName,
  s: ServiceSpec,
  start: number,
  steps?: Steps,
): ServiceController {
  if (strategy === 'static') return new Reserved(s, start);
  if (strategy === 'coordinated') return new Autoscaled(s, coordinatedRules(s, steps), false, start);
  return new Autoscaled(s, independentRules(s), true, start);
}
