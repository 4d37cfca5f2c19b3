// What an assignment produces: a plan (pod sets on flavors and nodes, usage, victims, mode) or a
// failure with its pending reason.
import { neverPreempted } from '../guaranteed.js';
import type { PodAlloc } from '../nodes.js';
import { overNominal } from '../queue-usage.js';
import { RESOURCE_COUNT } from '../quota.js';
import type { JobState, PodSetState } from '../state.js';
import type {
  AdmissionMode,
  NodeFit,
  PendingReasonCode,
  PreemptionReason,
  QuotaShortfall,
} from '../types.js';

export interface PodSetPlan {
  ps: PodSetState;
  flavor: string;
  count: number;
  allocs: PodAlloc[];
}

export interface Plan {
  ok: true;
  parts: PodSetPlan[];
  usage: Map<string, number[]>;
  victims: { job: JobState; reason: PreemptionReason }[];
  mode: AdmissionMode;
  borrowed: boolean;
}

export interface Fail {
  ok: false;
  reason: PendingReasonCode;
  message: string;
  shortfall?: QuotaShortfall;
  nodeFit?: NodeFit[];
  waitFlavors: string[];
  /**
   * A node reason, while another flavor failed on quota that may yet be released there: the
   * job must also wake on quota releases, not only on node changes.
   */
  quotaWaitToo?: boolean;
  /** Only nodes reserved for a longer-waiting job kept it out (reservation.ts): it waits, it does not
   * preempt around them.
   */
  reservedOff?: { nodes: number; start: number };
}

export function planFrom(
  job: JobState,
  parts: PodSetPlan[],
  usage: Map<string, number[]>,
  victims: Plan['victims'],
): Plan {
  // A job that is never preempted is within its queue's nominal by the guaranteed usage
  // (quota-mode.ts): what its queue uses above the nominal is its preemptible jobs'.
  let borrowed = false;
  if (!neverPreempted(job))
    for (const f of usage.keys())
      for (let r = 0; r < RESOURCE_COUNT; r++) if (overNominal(job.queue, f, r)) borrowed = true;
  const mode: AdmissionMode =
    victims.length > 0 ? (borrowed ? 'preempt-borrow' : 'preempt') : borrowed ? 'borrow' : 'fit';
  return { ok: true, parts, usage, victims, mode, borrowed };
}
