// The isolation-strength policy library: four built-in policies (the names of the core's isolation
// levels), the rule that picks one for a queue (tenant tier × workload type × SLA class), and the
// queue spec a policy and its coefficients in force come to.
import type { QueueSpec, QuotaSpec } from '../scheduling/index.js';
import {
  type CoefficientRange,
  IDLE_ACTIONS,
  type IsolationPolicy,
  type LimitSetting,
  type PolicyRule,
  PREEMPTIBILITIES,
  type SlaClass,
  type WorkloadType,
} from './types.js';

const LEVELS: readonly string[] = ['DEDICATED', 'GUARANTEED', 'ELASTIC', 'BEST_EFFORT'];

const MIN = 60_000;

export const BUILT_IN_POLICIES: readonly IsolationPolicy[] = [
  {
    name: 'dedicated',
    description: 'Hard isolation: lends and borrows nothing; its jobs are never preempted by other queues.',
    level: 'DEDICATED',
    lend: { min: 0, base: 0, max: 0 },
    borrow: { min: 0, base: 0, max: 0 },
    minRunBeforeReclaimMs: 0,
    reclaimGraceMs: 5 * MIN,
    preemptible: 'NEVER',
    idle: { utilizationBelow: 0.05, idleForMs: 120 * MIN, notRunningForMs: 30 * MIN, action: 'NOTIFY' },
  },
  {
    name: 'guaranteed',
    description:
      'Its nominal comes back at once: lends half its idle share by default (the controller moves it between none and all), never borrows.',
    level: 'GUARANTEED',
    lend: { min: 0, base: 0.5, max: 1 },
    borrow: { min: 0, base: 0, max: 0 },
    minRunBeforeReclaimMs: 0,
    reclaimGraceMs: 2 * MIN,
    preemptible: 'RECLAIM_ONLY',
    idle: { utilizationBelow: 0.05, idleForMs: 60 * MIN, notRunningForMs: 20 * MIN, action: 'NOTIFY' },
  },
  {
    name: 'elastic',
    description:
      'Lends all its idle share (the controller may keep up to half back while its own jobs wait) and borrows without limit.',
    level: 'ELASTIC',
    lend: { min: 0.5, base: 1, max: 1 },
    borrow: null,
    minRunBeforeReclaimMs: 0,
    reclaimGraceMs: 1 * MIN,
    preemptible: 'ANY',
    idle: {
      utilizationBelow: 0.1,
      idleForMs: 30 * MIN,
      notRunningForMs: 15 * MIN,
      action: 'RECLAIM_IF_BORROWING',
    },
  },
  {
    name: 'best-effort',
    description: 'No guaranteed share: runs only on what others leave, first to be preempted.',
    level: 'BEST_EFFORT',
    lend: { min: 1, base: 1, max: 1 },
    borrow: null,
    minRunBeforeReclaimMs: 0,
    reclaimGraceMs: 30_000,
    preemptible: 'ANY',
    idle: { utilizationBelow: 0.1, idleForMs: 15 * MIN, notRunningForMs: 10 * MIN, action: 'RECLAIM' },
  },
];

/** The default rules: online inference and critical SLAs are guaranteed, best-effort SLAs borrow only,
 * everything else is elastic.
 */
export const DEFAULT_POLICY_RULES: readonly PolicyRule[] = [
  { tier: null, workloadType: null, slaClass: 'BEST_EFFORT', policy: 'best-effort' },
  { tier: null, workloadType: null, slaClass: 'CRITICAL', policy: 'guaranteed' },
  { tier: null, workloadType: 'ONLINE_INFERENCE', slaClass: null, policy: 'guaranteed' },
  { tier: 'ENTERPRISE', workloadType: 'TRAINING', slaClass: null, policy: 'guaranteed' },
  { tier: null, workloadType: null, slaClass: null, policy: 'elastic' },
];

/** The policy named by the most specific matching rule (fields set), the earliest on a tie; undefined when
 * none matches.
 */
export function chooseRule(
  rules: readonly PolicyRule[],
  tier: string,
  workloadType: WorkloadType | null,
  slaClass: SlaClass | null,
): PolicyRule | undefined {
  let best: PolicyRule | undefined;
  let bestScore = -1;
  for (const r of rules) {
    if (r.tier !== null && r.tier !== tier) continue;
    if (r.workloadType !== null && r.workloadType !== workloadType) continue;
    if (r.slaClass !== null && r.slaClass !== slaClass) continue;
    const score =
      (r.tier !== null ? 1 : 0) + (r.workloadType !== null ? 1 : 0) + (r.slaClass !== null ? 1 : 0);
    if (score > bestScore) {
      best = r;
      bestScore = score;
    }
  }
  return best;
}

/** Problems with a policy's coefficients, in words; empty when it is valid. */
export function policyProblems(p: IsolationPolicy): string[] {
  const out: string[] = [];
  const range = (what: string, r: CoefficientRange, hi: number): void => {
    for (const v of [r.min, r.base, r.max])
      if (!Number.isFinite(v) || v < 0 || v > hi) out.push(`${what} must be within 0..${hi}`);
    if (!(r.min <= r.base && r.base <= r.max)) out.push(`${what}: min ≤ base ≤ max is required`);
  };
  if (typeof p.name !== 'string' || !/^[a-z][a-z0-9-]{0,62}$/.test(p.name))
    out.push('name: lower-case letters, digits and dashes, starting with a letter');
  if (!LEVELS.includes(p.level)) out.push(`level must be one of ${LEVELS.join(', ')}`);
  if (!(PREEMPTIBILITIES as readonly string[]).includes(p.preemptible))
    out.push(`preemptible must be one of ${PREEMPTIBILITIES.join(', ')}`);
  if (!(IDLE_ACTIONS as readonly string[]).includes(p.idle.action))
    out.push(`idle.action must be one of ${IDLE_ACTIONS.join(', ')}`);
  range('lend', p.lend, 1);
  if (p.borrow) range('borrow', p.borrow, 100);
  if (p.level === 'DEDICATED' && (p.lend.max > 0 || (p.borrow?.max ?? 1) > 0))
    out.push('a DEDICATED policy lends and borrows nothing (lend and borrow 0)');
  if (p.level === 'GUARANTEED' && (p.borrow?.max ?? 1) > 0)
    out.push('a GUARANTEED policy never borrows (borrow 0)');
  for (const [what, v] of [
    ['minRunBeforeReclaimMs', p.minRunBeforeReclaimMs],
    ['reclaimGraceMs', p.reclaimGraceMs],
    ['idle.idleForMs', p.idle.idleForMs],
    ['idle.notRunningForMs', p.idle.notRunningForMs],
  ] as const) {
    if (!Number.isFinite(v) || v < 0) out.push(`${what} must be ≥ 0`);
  }
  if (!(p.idle.utilizationBelow >= 0 && p.idle.utilizationBelow <= 1))
    out.push('idle.utilizationBelow must be within 0..1');
  return out;
}

export function baseSetting(p: IsolationPolicy): LimitSetting {
  return { lend: p.lend.base, borrow: p.borrow ? p.borrow.base : null };
}

/** A setting moved back inside the policy's bounds; a coefficient that is not a number (NaN, or null from
 * stored JSON) is the policy's base.
 */
export function clampSetting(p: IsolationPolicy, s: LimitSetting): LimitSetting {
  const clamp = (v: number, r: CoefficientRange): number =>
    typeof v === 'number' && !Number.isNaN(v) ? Math.min(r.max, Math.max(r.min, v)) : r.base;
  return { lend: clamp(s.lend, p.lend), borrow: p.borrow ? clamp(s.borrow ?? p.borrow.max, p.borrow) : null };
}

const floor3 = (x: number): number => Math.floor(x * 1000 + 1e-9) / 1000;

/**
 * The queue spec under a policy with `setting` in force: the policy's isolation level; per declared
 * flavor and resource lendingLimit = nominal × lend (never above one the spec sets itself; all of it
 * leaves the limit unset) and borrowingLimit = nominal × borrow (likewise; null leaves the spec's).
 * Nominal is never changed: it is the queue's floor. A queue whose policy may lend reclaims (Kueue's
 * reclaimWithinCohort Any, whatever the spec says: a lender with Never or LowerPriority could not take
 * its floor back from equal- or higher-priority borrowers), so what it lent comes back. The policy's
 * minRunBeforeReclaimMs applies unless the spec sets its own; preemptible NEVER: withinQueue Never;
 * RECLAIM_ONLY: fairShareMaxLostRunMs 0 unless the spec sets it (fair share takes only jobs that lose
 * nothing).
 */
export function applyPolicy(spec: QueueSpec, policy: IsolationPolicy, setting: LimitSetting): QueueSpec {
  const s = clampSetting(policy, setting);
  const limitQuotas = (quotas: QuotaSpec): QuotaSpec => {
    const out: QuotaSpec = {};
    for (const [flavor, perRes] of Object.entries(quotas)) {
      const fq: QuotaSpec[string] = {};
      for (const [r, lim] of Object.entries(perRes ?? {})) {
        if (!lim) continue;
        const n = lim.nominal;
        const next: NonNullable<QuotaSpec[string][keyof QuotaSpec[string]]> = { nominal: n };
        const lend = s.lend >= 1 ? undefined : floor3(n * s.lend);
        const lending = lend === undefined ? lim.lendingLimit : Math.min(lend, lim.lendingLimit ?? lend);
        if (lending !== undefined) next.lendingLimit = lending;
        const borrow = s.borrow === null ? undefined : floor3(n * s.borrow);
        const borrowing =
          borrow === undefined ? lim.borrowingLimit : Math.min(borrow, lim.borrowingLimit ?? borrow);
        if (borrowing !== undefined) next.borrowingLimit = borrowing;
        fq[r as keyof QuotaSpec[string]] = next;
      }
      out[flavor] = fq;
    }
    return out;
  };
  const preemption = { ...(spec.preemption ?? {}) };
  if (policy.lend.max > 0) preemption.reclaimWithinCohort = 'Any';
  if (policy.minRunBeforeReclaimMs > 0 && preemption.minRunBeforeReclaimMs === undefined)
    preemption.minRunBeforeReclaimMs = policy.minRunBeforeReclaimMs;
  if (policy.preemptible === 'NEVER') preemption.withinQueue = 'Never';
  // RECLAIM_ONLY: another queue's fair-share preemption may take its jobs only when they lose no work
  // (resumable or just checkpointed); a lender reclaiming what it lent still may.
  if (policy.preemptible === 'RECLAIM_ONLY' && preemption.fairShareMaxLostRunMs === undefined)
    preemption.fairShareMaxLostRunMs = 0;
  const out: QueueSpec = { ...spec, isolation: policy.level, quotas: limitQuotas(spec.quotas), preemption };
  if (spec.timeWindows)
    out.timeWindows = spec.timeWindows.map((w) => ({ ...w, quotas: limitQuotas(w.quotas) }));
  return out;
}
