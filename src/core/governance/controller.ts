// The upper level of the two-level controller (issue 16): every window it reads each queue's load,
// waits, SLA and probes and moves the queue's lending and borrowing coefficients within the bounds
// its policy allows. The lower level (the scheduler) keeps every floor. Pure: the same inputs give
// the same adjustments, so an audited adjustment can be recomputed from the inputs it records.
import type { ControllerAdjustment, ControllerQueueInput, ControllerSettings, IsolationPolicy, LimitSetting } from './types.js';

/**
 * One window's decisions, one adjustment per queue whose setting changes (sorted by queue name).
 * `current` holds the settings in force (a queue missing from it is at its policy's base);
 * inputs of queues whose policy is not in `policies` are ignored.
 *
 * Rules (per queue, after the policy's bounds):
 * - TIGHTEN_LENDING: its own jobs wait for their nominal — pendingGpus > 0 and usedGpus < nominalGpus
 *   and (oldestWaitMs > waitLimitMs or slaMet/slaEligible < slaTarget) — lend −= step.
 * - LEND_IDLE: otherwise, when it has idle nominal (usedGpus < nominalGpus), no pending jobs and met
 *   its SLA in the window — lend += step.
 * - TIGHTEN_BORROWING: a queue with a borrow range that borrows (borrowedGpus > 0) while some
 *   lender in the input (lentGpus > 0) is tightening its lending this window — borrow −= step.
 * - RELAX_BORROWING: otherwise, with a borrow range, when it has pending jobs and nobody tightens —
 *   borrow += step.
 * Nominal is never an output: the floor is not the controller's to move.
 */
export function controllerStep(
  inputs: readonly ControllerQueueInput[],
  current: ReadonlyMap<string, LimitSetting>,
  policies: ReadonlyMap<string, IsolationPolicy>,
  settings: ControllerSettings,
): ControllerAdjustment[] {
  void inputs; void current; void policies; void settings;
  throw new Error('controllerStep: not implemented yet');
}
