// The queues file as the simulator holds it once validated (queues-parse.ts): queues, cohorts, quotas.
import type { SlaClass, WorkloadType } from '../core/governance/index.js';
import type {
  PreemptionSpec,
  QuotaLimits,
  QuotaSpec,
  ResourceName,
  TimeWindowSpec,
} from '../core/scheduling/index.js';

export type Resource = ResourceName;
export const RESOURCES: readonly Resource[] = ['gpu', 'cpu', 'memory'];
export type ResourceQuota = QuotaLimits;
/** flavor → resource → quota, as the core takes it. */
export type SimQuotas = QuotaSpec;
export type SimPreemption = PreemptionSpec;

export interface SimQueue {
  line: number;
  name: string;
  tenant: string;
  cohort?: string;
  quotas: SimQuotas;
  weight?: number;
  queueingStrategy?: 'StrictFIFO' | 'BestEffortFIFO';
  preemption?: SimPreemption;
  isolation?: 'DEDICATED' | 'GUARANTEED' | 'ELASTIC' | 'BEST_EFFORT';
  /** Jobs of this queue run only on nodes of this pool. */
  dedicatedPool?: string;
  /** Time-window quotas, as the core's QueueSpec.timeWindows (the first open window's quotas lie over `quotas`). */
  timeWindows?: SimTimeWindow[];
  /** Governance (used by the governed and controller policies): a queue naming any of these three is
   * governed.
   */
  isolationPolicy?: string;
  workloadType?: WorkloadType;
  slaClass?: SlaClass;
  /** The tenant's tier the policy rules read (default STANDARD). */
  tier?: string;
}

export type SimTimeWindow = TimeWindowSpec;

export interface SimCohort {
  line: number;
  name: string;
  parent?: string;
  quotas?: SimQuotas;
}

export interface SimQueues {
  file: string;
  cohorts: SimCohort[];
  queues: SimQueue[];
  /** Fair-sharing options for the `fairway` policy. */
  fairSharing?: { usageHalfLifeMs?: number; entryPenalty?: number };
}
