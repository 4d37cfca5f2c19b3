// The isolation-policy library as the services see it: the built-in policies overlaid with the rows
// platform admins edited or added, the selection rules, and the policy a queue gets.
import type { EntityManager, FilterQuery } from '@mikro-orm/core';
import { BUILT_IN_POLICIES, baseSetting, chooseRule, clampSetting, DEFAULT_POLICY_RULES } from '../../core/governance/policies.js';
import type { IsolationPolicy, LimitSetting, PolicyRule, SlaClass, WorkloadType } from '../../core/governance/types.js';
import type { IsolationLevel } from '../../core/scheduling/types.js';
import { IsolationPolicyRow, IsolationPolicyRule } from '../../persistence/governance/entities.js';
import type { Queue } from '../../persistence/cluster/entities.js';

export interface PolicyLibrary {
  /** By name: built-ins (possibly overridden by a row) and platform-defined policies. */
  policies: Map<string, IsolationPolicy>;
  /** In order; the built-in defaults while no rule is stored. */
  rules: PolicyRule[];
  /** Whether the rules are the built-in defaults. */
  defaultRules: boolean;
}

export function policyFromRow(row: IsolationPolicyRow): IsolationPolicy {
  return { name: row.name, description: row.description, level: row.level as IsolationLevel, ...row.coefficients };
}

export async function loadPolicyLibrary(em: EntityManager): Promise<PolicyLibrary> {
  const [rows, ruleRows] = await Promise.all([em.find(IsolationPolicyRow, {}, { orderBy: { name: 'asc' } }), em.find(IsolationPolicyRule, {}, { orderBy: { position: 'asc' } })]);
  const policies = new Map<string, IsolationPolicy>(BUILT_IN_POLICIES.map((p) => [p.name, structuredClone(p)]));
  for (const row of rows) policies.set(row.name, policyFromRow(row));
  const rules: PolicyRule[] = ruleRows.map((r) => ({ tier: r.tier ?? null, workloadType: (r.workloadType ?? null) as WorkloadType | null, slaClass: (r.slaClass ?? null) as SlaClass | null, policy: r.policy }));
  return { policies, rules: rules.length ? rules : [...DEFAULT_POLICY_RULES], defaultRules: rules.length === 0 };
}

/** How a queue came by its policy: named on the queue, or chosen by a rule from its tenant's tier, workload type and SLA class. */
export type PolicyChoice = { policy: IsolationPolicy; chosenBy: 'QUEUE' | 'RULE'; rule: PolicyRule | null };

/**
 * The policy governing a queue, or null for a queue outside governance (it names no policy, workload
 * type nor SLA class: its limits are exactly as configured, its isolation level applies as before).
 * `tier` is the queue's tenant's tier. A named policy missing from the library governs nothing (null).
 */
export function policyForQueue(library: PolicyLibrary, queue: Pick<Queue, 'isolationPolicy' | 'workloadType' | 'slaClass'>, tier: string): PolicyChoice | null {
  if (queue.isolationPolicy) {
    const policy = library.policies.get(queue.isolationPolicy);
    return policy ? { policy, chosenBy: 'QUEUE', rule: null } : null;
  }
  if (!queue.workloadType && !queue.slaClass) return null;
  const rule = chooseRule(library.rules, tier, (queue.workloadType ?? null) as WorkloadType | null, (queue.slaClass ?? null) as SlaClass | null);
  const policy = rule ? library.policies.get(rule.policy) : undefined;
  return policy && rule ? { policy, chosenBy: 'RULE', rule } : null;
}

/** The coefficients in force for a governed queue: the controller's (kept inside the policy's bounds) or the policy's base. */
export function settingInForce(policy: IsolationPolicy, queue: Pick<Queue, 'controllerSetting'>): { setting: LimitSetting; source: 'STATIC' | 'CONTROLLER' } {
  const c = queue.controllerSetting;
  return c ? { setting: clampSetting(policy, { lend: c.lend, borrow: c.borrow }), source: 'CONTROLLER' } : { setting: baseSetting(policy), source: 'STATIC' };
}

/** What governs a queue now: its policy (and how it was chosen) and the coefficients in force; null outside governance. */
export type GovernanceInForce = PolicyChoice & { setting: LimitSetting; source: 'STATIC' | 'CONTROLLER' };

/** policyForQueue and settingInForce together: what queueSpec (scheduling/specs.ts) needs to build a governed queue's core spec. */
export function governanceInForce(library: PolicyLibrary, queue: Pick<Queue, 'isolationPolicy' | 'workloadType' | 'slaClass' | 'controllerSetting'>, tier: string): GovernanceInForce | null {
  const choice = policyForQueue(library, queue, tier);
  return choice ? { ...choice, ...settingInForce(choice.policy, queue) } : null;
}

/** isGoverned as a query filter: the queues that name a policy, a workload type or an SLA class. */
export const GOVERNED_QUEUES: FilterQuery<Queue> = { $or: [{ isolationPolicy: { $ne: null } }, { workloadType: { $ne: null } }, { slaClass: { $ne: null } }] };

/** Whether a queue is inside governance at all (it names a policy, a workload type or an SLA class). */
export const isGoverned = (queue: Pick<Queue, 'isolationPolicy' | 'workloadType' | 'slaClass'>): boolean => Boolean(queue.isolationPolicy || queue.workloadType || queue.slaClass);
