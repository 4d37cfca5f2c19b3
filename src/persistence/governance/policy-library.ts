// Loads the isolation-policy library: the built-in policies overlaid with the rows platform admins
// edited or added, and the stored selection rules (the built-in defaults while none is stored).
import type { EntityManager, FilterQuery } from '@mikro-orm/core';
import type {
  IsolationPolicy,
  PolicyLibrary,
  PolicyRule,
  SlaClass,
  WorkloadType,
} from '../../core/governance/index.js';
import { BUILT_IN_POLICIES, DEFAULT_POLICY_RULES } from '../../core/governance/index.js';
import type { IsolationLevel } from '../../core/scheduling/index.js';
import type { Queue } from '../cluster/index.js';
import { findPlain } from '../plain-rows.js';
import { IsolationPolicyRow, IsolationPolicyRule } from './entities.js';

export function policyFromRow(row: IsolationPolicyRow): IsolationPolicy {
  return {
    name: row.name,
    description: row.description,
    level: row.level as IsolationLevel,
    ...row.coefficients,
  };
}

export async function loadPolicyLibrary(em: EntityManager): Promise<PolicyLibrary> {
  // One after the other: inside a transaction both share one connection.
  const rows = await findPlain(em, IsolationPolicyRow, {}, { orderBy: 'name' });
  const ruleRows = await findPlain(em, IsolationPolicyRule, {}, { orderBy: 'position' });
  const policies = new Map<string, IsolationPolicy>(
    BUILT_IN_POLICIES.map((p) => [p.name, structuredClone(p)]),
  );
  for (const row of rows) policies.set(row.name, policyFromRow(row));
  const rules: PolicyRule[] = ruleRows.map((r) => ({
    tier: r.tier ?? null,
    workloadType: (r.workloadType ?? null) as WorkloadType | null,
    slaClass: (r.slaClass ?? null) as SlaClass | null,
    policy: r.policy,
  }));
  return {
    policies,
    rules: rules.length ? rules : [...DEFAULT_POLICY_RULES],
    defaultRules: rules.length === 0,
  };
}

/** isGoverned as a query filter: the queues that name a policy, a workload type or an SLA class. */
export const GOVERNED_QUEUES: FilterQuery<Queue> = {
  $or: [{ isolationPolicy: { $ne: null } }, { workloadType: { $ne: null } }, { slaClass: { $ne: null } }],
};
