// The isolation-policy library and the rule that gives a queue its policy: the built-in policies
// overlaid with the ones platform admins edited or added, the selection rules, and the coefficients
// in force. Pure: the services load the library (persistence/governance/policy-library.ts).
import { baseSetting, chooseRule, clampSetting } from './policies.js';
import type { IsolationPolicy, LimitSetting, PolicyRule, SlaClass, WorkloadType } from './types.js';

export interface PolicyLibrary {
  /** By name: built-ins (possibly overridden by a row) and platform-defined policies. */
  policies: ReadonlyMap<string, IsolationPolicy>;
  /** In order; the built-in defaults while no rule is stored. */
  rules: PolicyRule[];
  /** Whether the rules are the built-in defaults. */
  defaultRules: boolean;
}

/** What of a queue decides its governance (the stored queue's columns). */
export interface GovernedQueueFields {
  isolationPolicy?: string | null;
  workloadType?: string | null;
  slaClass?: string | null;
  controllerSetting?: { lend: number; borrow: number | null } | null;
}

/** How a queue came by its policy: named on the queue, or chosen by a rule from its tenant's tier, workload
 * type and SLA class.
 */
export type PolicyChoice = { policy: IsolationPolicy; chosenBy: 'QUEUE' | 'RULE'; rule: PolicyRule | null };

/**
 * The policy governing a queue, or null for a queue outside governance (it names no policy, workload
 * type nor SLA class: its limits are exactly as configured, its isolation level applies as before).
 * `tier` is the queue's tenant's tier. A named policy missing from the library governs nothing (null).
 */
export function policyForQueue(
  library: PolicyLibrary,
  queue: GovernedQueueFields,
  tier: string,
): PolicyChoice | null {
  if (queue.isolationPolicy) {
    const policy = library.policies.get(queue.isolationPolicy);
    return policy ? { policy, chosenBy: 'QUEUE', rule: null } : null;
  }
  if (!queue.workloadType && !queue.slaClass) return null;
  const rule = chooseRule(
    library.rules,
    tier,
    (queue.workloadType ?? null) as WorkloadType | null,
    (queue.slaClass ?? null) as SlaClass | null,
  );
  const policy = rule ? library.policies.get(rule.policy) : undefined;
  return policy && rule ? { policy, chosenBy: 'RULE', rule } : null;
}

/** The coefficients in force for a governed queue: the controller's (kept inside the policy's bounds) or the
 * policy's base.
 */
export function settingInForce(
  policy: IsolationPolicy,
  queue: GovernedQueueFields,
): { setting: LimitSetting; source: 'STATIC' | 'CONTROLLER' } {
  const c = queue.controllerSetting;
  return c
    ? { setting: clampSetting(policy, { lend: c.lend, borrow: c.borrow }), source: 'CONTROLLER' }
    : { setting: baseSetting(policy), source: 'STATIC' };
}

/** What governs a queue now: its policy (and how it was chosen) and the coefficients in force; null outside
 * governance.
 */
export type GovernanceInForce = PolicyChoice & { setting: LimitSetting; source: 'STATIC' | 'CONTROLLER' };

/** policyForQueue and settingInForce together: what queueSpec (scheduling/specs.ts) needs to build a
 * governed queue's core spec.
 */
export function governanceInForce(
  library: PolicyLibrary,
  queue: GovernedQueueFields,
  tier: string,
): GovernanceInForce | null {
  const choice = policyForQueue(library, queue, tier);
  return choice ? { ...choice, ...settingInForce(choice.policy, queue) } : null;
}

/** Whether a queue is inside governance at all (it names a policy, a workload type or an SLA class). */
export const isGoverned = (queue: GovernedQueueFields): boolean =>
  Boolean(queue.isolationPolicy || queue.workloadType || queue.slaClass);
