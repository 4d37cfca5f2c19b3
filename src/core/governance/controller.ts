// The upper level of the two-level controller: every window it reads each queue's load,
// waits, SLA and probes and moves the queue's lending and borrowing coefficients within the bounds
// its policy allows. The lower level (the scheduler) keeps every floor. Pure: the same inputs give
// the same adjustments, so an audited adjustment can be recomputed from the inputs it records.
import { baseSetting, clampSetting } from './policies.js';
import type {
  AdjustmentReason,
  ControllerAdjustment,
  ControllerQueueInput,
  ControllerSettings,
  ControllerWindow,
  IsolationPolicy,
  LimitSetting,
} from './types.js';

/** Coefficients are kept to 6 decimals so repeated steps give the same numbers everywhere (0.1 + 0.2 …). */
const round6 = (x: number): number => Math.round(x * 1e6) / 1e6;

/** SLA attainment in the window; a window without eligible jobs met it. */
export function slaAttainment(input: ControllerQueueInput): number {
  return input.slaEligible > 0 ? input.slaMet / input.slaEligible : 1;
}

/** Whether the queue's own jobs wait for its nominal (the TIGHTEN_LENDING condition). */
function waitsForNominal(q: ControllerQueueInput, settings: ControllerSettings): boolean {
  return (
    q.pendingGpus > 0 &&
    q.usedGpus < q.nominalGpus &&
    (q.oldestWaitMs > settings.waitLimitMs || slaAttainment(q) < settings.slaTarget)
  );
}

/**
 * One window's decisions, one adjustment per queue whose setting changes (sorted by queue name,
 * plain string order). `current` holds the settings in force (a queue missing from it is at its
 * policy's base); each is first clamped into its policy's bounds (`from` is that clamped setting,
 * as applyPolicy would have used it). Inputs of queues whose policy is not in `policies` are
 * ignored; a queue named twice counts once (its first input).
 *
 * Rules (per queue, after the policy's bounds; SLA attainment = slaMet/slaEligible, 1 with none eligible):
 * - TIGHTEN_LENDING: its own jobs wait for their nominal — pendingGpus > 0 and usedGpus < nominalGpus
 *   and (oldestWaitMs > waitLimitMs or slaMet/slaEligible < slaTarget) — lend −= step.
 * - LEND_IDLE: otherwise, when it has idle nominal (usedGpus < nominalGpus), no pending jobs and met
 *   its SLA in the window — lend += step.
 * - TIGHTEN_BORROWING: a queue with a borrow range that borrows (borrowedGpus > 0) while some
 *   lender in the input (lentGpus > 0) is tightening its lending this window — borrow −= step.
 * - RELAX_BORROWING: otherwise, with a borrow range, when it has pending jobs and nobody tightens
 *   (no queue's TIGHTEN_LENDING condition holds this window) — borrow += step.
 * A rule "holds" by its condition even when the bound stops the move (a lender already at its
 * minimum still tightens its borrowers). `reasons` lists only the rules that moved a coefficient;
 * new values are rounded to 6 decimals, then clamped. Nominal is never an output: the floor is not
 * the controller's to move. Each adjustment records `window` (anyTightens, lenderTightens) so that
 * replayAdjustment recomputes it from the adjustment alone.
 */
export function controllerStep(
  inputs: readonly ControllerQueueInput[],
  current: ReadonlyMap<string, LimitSetting>,
  policies: ReadonlyMap<string, IsolationPolicy>,
  settings: ControllerSettings,
): ControllerAdjustment[] {
  const seen = new Set<string>();
  const governed: { input: ControllerQueueInput; policy: IsolationPolicy }[] = [];
  for (const input of inputs) {
    const policy = policies.get(input.policy);
    if (!policy || seen.has(input.queue)) continue;
    seen.add(input.queue);
    governed.push({ input, policy });
  }
  const tightening = governed.filter((g) => waitsForNominal(g.input, settings));
  const window: ControllerWindow = {
    anyTightens: tightening.length > 0,
    lenderTightens: tightening.some((g) => g.input.lentGpus > 0),
  };

  const out: ControllerAdjustment[] = [];
  for (const { input, policy } of governed) {
    const from = clampSetting(policy, current.get(input.queue) ?? baseSetting(policy));
    const { to, reasons } = replayAdjustment({ input, from, window }, policy, settings);
    if (reasons.length === 0) continue;
    out.push({
      queue: input.queue,
      tenant: input.tenant,
      policy: input.policy,
      from,
      to,
      reasons,
      input: { ...input },
      window: { ...window },
    });
  }
  return out.sort((a, b) => (a.queue < b.queue ? -1 : a.queue > b.queue ? 1 : 0));
}

/**
 * One queue's rules (controllerStep's list) from what an adjustment records: its input, the setting
 * it started from and the window-wide facts. Recomputes an audited adjustment's `to` and `reasons`
 * exactly (given the policy and the settings in force then); reasons is empty when nothing moves.
 */
export function replayAdjustment(
  recorded: { input: ControllerQueueInput; from: LimitSetting; window: ControllerWindow },
  policy: IsolationPolicy,
  settings: ControllerSettings,
): { to: LimitSetting; reasons: AdjustmentReason[] } {
  const { input, window } = recorded;
  const from = clampSetting(policy, recorded.from);
  const reasons: AdjustmentReason[] = [];
  let lend = from.lend;
  if (waitsForNominal(input, settings)) {
    lend = clampSetting(policy, { lend: round6(lend - settings.step), borrow: from.borrow }).lend;
    if (lend !== from.lend) reasons.push('TIGHTEN_LENDING');
  } else if (
    input.usedGpus < input.nominalGpus &&
    input.pendingGpus === 0 &&
    slaAttainment(input) >= settings.slaTarget
  ) {
    lend = clampSetting(policy, { lend: round6(lend + settings.step), borrow: from.borrow }).lend;
    if (lend !== from.lend) reasons.push('LEND_IDLE');
  }
  let borrow = from.borrow;
  if (policy.borrow && from.borrow !== null) {
    if (input.borrowedGpus > 0 && window.lenderTightens) {
      borrow = clampSetting(policy, { lend, borrow: round6(from.borrow - settings.step) }).borrow;
      if (borrow !== from.borrow) reasons.push('TIGHTEN_BORROWING');
    } else if (input.pendingGpus > 0 && !window.anyTightens) {
      borrow = clampSetting(policy, { lend, borrow: round6(from.borrow + settings.step) }).borrow;
      if (borrow !== from.borrow) reasons.push('RELAX_BORROWING');
    }
  }
  return { to: { lend, borrow }, reasons };
}
