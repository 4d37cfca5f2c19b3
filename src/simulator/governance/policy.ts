// Governance in the simulator, the static part: which isolation policy governs a queue of
// the queues file, and which workload type a trace job has (the utilization model's input).
import {
  BUILT_IN_POLICIES,
  DEFAULT_POLICY_RULES,
  type IsolationPolicy,
  type PolicyLibrary,
  policyForQueue,
  type WorkloadType,
} from '../../core/governance/index.js';
import { Prng } from '../prng.js';
import type { SimQueue } from '../queues.js';
import type { TraceJob } from '../trace.js';

export const POLICY_LIBRARY: ReadonlyMap<string, IsolationPolicy> = new Map(
  BUILT_IN_POLICIES.map((p) => [p.name, p]),
);

/** The tier a queue's tenant has when the queues file names none (the services' default). */
export const DEFAULT_TIER = 'STANDARD';

const SIM_LIBRARY: PolicyLibrary = {
  policies: POLICY_LIBRARY,
  rules: [...DEFAULT_POLICY_RULES],
  defaultRules: true,
};

/**
 * The policy governing a queue, or null outside governance: the services' rule
 * (src/core/governance/library.ts policyForQueue) over the built-in library and the default rules.
 * A queue is governed iff it names `isolationPolicy`, `workloadType` or `slaClass`.
 */
export function policyOfQueue(q: SimQueue): IsolationPolicy | null {
  return policyForQueue(SIM_LIBRARY, q, q.tier ?? DEFAULT_TIER)?.policy ?? null;
}

/**
 * The workload mix drawn for trace jobs without a `workload_type` column. Philly is a research
 * training cluster: mostly training, a quarter fine-tuning, some batch inference and a little
 * online inference (our assumption; the trace records no types).
 */
export const WORKLOAD_MIX: readonly (readonly [WorkloadType, number])[] = [
  ['TRAINING', 0.55],
  ['FINE_TUNING', 0.25],
  ['BATCH_INFERENCE', 0.15],
  ['ONLINE_INFERENCE', 0.05],
];

/** 32-bit FNV-1a of the text: the per-job seed, so a job's draw does not depend on draw order. */
function fnv1a(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** The job's workload type: the trace's `workload_type`, else drawn from WORKLOAD_MIX by (seed, job id). */
export function jobWorkloadType(seed: number, job: TraceJob): WorkloadType {
  if (job.workloadType !== undefined) return job.workloadType;
  const u = new Prng(fnv1a(`${Math.trunc(seed)}:${job.id}`)).next();
  let acc = 0;
  for (const [type, share] of WORKLOAD_MIX) {
    acc += share;
    if (u < acc) return type;
  }
  return WORKLOAD_MIX[WORKLOAD_MIX.length - 1]![0];
}
