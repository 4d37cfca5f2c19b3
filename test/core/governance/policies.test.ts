// The policy library: rule choice (specificity, ties), validation, bounds, and the queue
// spec a policy and its coefficients come to (limits, rounding, time windows, preemption defaults).
import { describe, expect, it } from 'vitest';
import {
  applyPolicy,
  BUILT_IN_POLICIES,
  baseSetting,
  chooseRule,
  clampSetting,
  DEFAULT_POLICY_RULES,
  type IsolationPolicy,
  type PolicyRule,
  policyProblems,
} from '../../../src/core/governance/index.js';
import type { QueueSpec } from '../../../src/core/scheduling/index.js';
import { makeCluster, makeJob, makeQueue, nodes } from '../builders.js';

const P = (name: string): IsolationPolicy => BUILT_IN_POLICIES.find((p) => p.name === name)!;
const rule = (
  tier: string | null,
  workloadType: PolicyRule['workloadType'],
  slaClass: PolicyRule['slaClass'],
  policy: string,
): PolicyRule => ({ tier, workloadType, slaClass, policy });

describe('chooseRule', () => {
  it('the default rules: critical and online inference guaranteed, best-effort SLA best-effort, enterprise training guaranteed, else elastic', () => {
    const pick = (tier: string, w: PolicyRule['workloadType'], s: PolicyRule['slaClass']) =>
      chooseRule(DEFAULT_POLICY_RULES, tier, w, s)?.policy;
    expect(pick('STANDARD', 'TRAINING', 'STANDARD')).toBe('elastic');
    expect(pick('STANDARD', null, null)).toBe('elastic');
    expect(pick('STANDARD', 'TRAINING', 'CRITICAL')).toBe('guaranteed');
    expect(pick('ENTERPRISE', 'TRAINING', 'CRITICAL')).toBe('guaranteed');
    expect(pick('ENTERPRISE', 'TRAINING', 'STANDARD')).toBe('guaranteed');
    // dedicated needs the tenant's own pool: only a queue that names it gets it
    expect(DEFAULT_POLICY_RULES.some((r) => r.policy === 'dedicated')).toBe(false);
    expect(pick('ENTERPRISE', 'FINE_TUNING', 'CRITICAL')).toBe('guaranteed');
    expect(pick('STANDARD', 'ONLINE_INFERENCE', 'STANDARD')).toBe('guaranteed');
    expect(pick('STANDARD', 'BATCH_INFERENCE', 'BEST_EFFORT')).toBe('best-effort');
    // Two rules of one field each match online inference with a best-effort SLA: the earlier wins.
    expect(pick('STANDARD', 'ONLINE_INFERENCE', 'BEST_EFFORT')).toBe('best-effort');
  });

  it('more fields set beats fewer whatever the order; the earliest wins a tie; null fields match anything, set fields must match', () => {
    const rules = [
      rule(null, null, null, 'any'),
      rule('GOLD', null, null, 'gold'),
      rule(null, 'TRAINING', null, 'training'),
      rule('GOLD', 'TRAINING', null, 'gold-training'),
    ];
    expect(chooseRule(rules, 'GOLD', 'TRAINING', 'STANDARD')?.policy).toBe('gold-training');
    expect(chooseRule(rules, 'GOLD', 'FINE_TUNING', null)?.policy).toBe('gold');
    expect(chooseRule(rules, 'SILVER', 'TRAINING', null)?.policy).toBe('training');
    expect(chooseRule(rules, 'SILVER', null, null)?.policy).toBe('any');
    expect(
      chooseRule(
        [rule(null, 'TRAINING', null, 'first'), rule('GOLD', null, null, 'second')],
        'GOLD',
        'TRAINING',
        null,
      )?.policy,
    ).toBe('first');
    expect(chooseRule([rule('GOLD', null, null, 'g')], 'SILVER', null, null)).toBeUndefined();
    expect(chooseRule([rule(null, 'TRAINING', null, 't')], 'GOLD', null, null)).toBeUndefined();
    expect(chooseRule([], 'GOLD', 'TRAINING', 'CRITICAL')).toBeUndefined();
  });
});

describe('policyProblems', () => {
  it('the built-ins are valid', () => {
    for (const p of BUILT_IN_POLICIES) expect(policyProblems(p)).toEqual([]);
  });

  it('names each problem', () => {
    const e = P('elastic');
    expect(policyProblems({ ...e, name: 'Bad Name' })).toEqual([
      'name: lower-case letters, digits and dashes, starting with a letter',
    ]);
    expect(policyProblems({ ...e, lend: { min: 0, base: 1.5, max: 2 } })).toContain(
      'lend must be within 0..1',
    );
    expect(policyProblems({ ...e, lend: { min: 0.8, base: 0.5, max: 1 } })).toEqual([
      'lend: min ≤ base ≤ max is required',
    ]);
    expect(policyProblems({ ...e, lend: { min: 0, base: Number.NaN, max: 1 } })).toEqual([
      'lend must be within 0..1',
      'lend: min ≤ base ≤ max is required',
    ]);
    expect(policyProblems({ ...e, borrow: { min: 0, base: 1, max: 101 } })).toEqual([
      'borrow must be within 0..100',
    ]);
    expect(policyProblems({ ...e, borrow: { min: -1, base: 1, max: 2 } })).toEqual([
      'borrow must be within 0..100',
    ]);
    expect(policyProblems({ ...P('dedicated'), lend: { min: 0, base: 0, max: 0.5 } })).toEqual([
      'a DEDICATED policy lends and borrows nothing (lend and borrow 0)',
    ]);
    expect(policyProblems({ ...P('dedicated'), borrow: null })).toEqual([
      'a DEDICATED policy lends and borrows nothing (lend and borrow 0)',
    ]);
    expect(policyProblems({ ...P('guaranteed'), borrow: null })).toEqual([
      'a GUARANTEED policy never borrows (borrow 0)',
    ]);
    expect(policyProblems({ ...P('guaranteed'), borrow: { min: 0, base: 0, max: 1 } })).toEqual([
      'a GUARANTEED policy never borrows (borrow 0)',
    ]);
    expect(
      policyProblems({ ...e, minRunBeforeReclaimMs: -1, reclaimGraceMs: Number.POSITIVE_INFINITY }),
    ).toEqual(['minRunBeforeReclaimMs must be ≥ 0', 'reclaimGraceMs must be ≥ 0']);
    expect(policyProblems({ ...e, idle: { ...e.idle, idleForMs: -5, notRunningForMs: Number.NaN } })).toEqual(
      ['idle.idleForMs must be ≥ 0', 'idle.notRunningForMs must be ≥ 0'],
    );
    expect(policyProblems({ ...e, idle: { ...e.idle, utilizationBelow: 1.5 } })).toEqual([
      'idle.utilizationBelow must be within 0..1',
    ]);
    // Enumerations (a stored or hand-written policy is not type-checked).
    expect(policyProblems({ ...e, level: 'SHARED' as never })).toEqual([
      'level must be one of DEDICATED, GUARANTEED, ELASTIC, BEST_EFFORT',
    ]);
    expect(policyProblems({ ...e, preemptible: 'SOMETIMES' as never })).toEqual([
      'preemptible must be one of NEVER, RECLAIM_ONLY, ANY',
    ]);
    expect(policyProblems({ ...e, idle: { ...e.idle, action: 'KILL' as never } })).toEqual([
      'idle.action must be one of NOTIFY, RECLAIM_IF_BORROWING, RECLAIM',
    ]);
  });
});

describe('baseSetting and clampSetting', () => {
  it('start at base and stay within [min, max]; a missing or non-number coefficient is the base; unlimited borrowing stays null', () => {
    expect(baseSetting(P('guaranteed'))).toEqual({ lend: 0.5, borrow: 0 });
    expect(baseSetting(P('elastic'))).toEqual({ lend: 1, borrow: null });
    const capped: IsolationPolicy = {
      ...P('elastic'),
      lend: { min: 0.2, base: 0.5, max: 0.8 },
      borrow: { min: 0.5, base: 1, max: 2 },
    };
    expect(clampSetting(capped, { lend: 0, borrow: 5 })).toEqual({ lend: 0.2, borrow: 2 });
    expect(clampSetting(capped, { lend: 0.9, borrow: 0 })).toEqual({ lend: 0.8, borrow: 0.5 });
    expect(clampSetting(capped, { lend: 0.3, borrow: 1.5 })).toEqual({ lend: 0.3, borrow: 1.5 });
    expect(clampSetting(capped, { lend: 0.3, borrow: null })).toEqual({ lend: 0.3, borrow: 2 });
    expect(clampSetting(capped, { lend: Number.NaN, borrow: Number.NaN })).toEqual({ lend: 0.5, borrow: 1 });
    expect(clampSetting(capped, JSON.parse('{"lend":null,"borrow":1}'))).toEqual({ lend: 0.5, borrow: 1 });
    expect(clampSetting(P('elastic'), { lend: 0.7, borrow: 3 })).toEqual({ lend: 0.7, borrow: null });
  });
});

describe('applyPolicy', () => {
  const spec: QueueSpec = {
    name: 'q',
    tenant: 't',
    cohort: 'c',
    quotas: {
      h100: { gpu: { nominal: 10 }, cpu: { nominal: 96_000 } },
      a100: { gpu: { nominal: 3, lendingLimit: 1, borrowingLimit: 2 } },
    },
  };

  it('lendingLimit = nominal × lend and borrowingLimit = nominal × borrow, rounded down to 1/1000, never above the spec’s own; nominal unchanged', () => {
    const capped: IsolationPolicy = {
      ...P('elastic'),
      lend: { min: 0, base: 0.5, max: 1 },
      borrow: { min: 0, base: 1, max: 3 },
    };
    const out = applyPolicy(spec, capped, { lend: 1 / 3, borrow: 0.5 });
    expect(out.quotas).toEqual({
      h100: {
        gpu: { nominal: 10, lendingLimit: 3.333, borrowingLimit: 5 },
        cpu: { nominal: 96_000, lendingLimit: 32_000, borrowingLimit: 48_000 },
      },
      a100: { gpu: { nominal: 3, lendingLimit: 1, borrowingLimit: 1.5 } },
    });
    expect(out.isolation).toBe('ELASTIC');
    // Lend everything: no lending limit (the spec's own kept); unlimited borrowing: the spec's own kept.
    expect(applyPolicy(spec, P('elastic'), { lend: 1, borrow: null }).quotas).toEqual({
      h100: { gpu: { nominal: 10 }, cpu: { nominal: 96_000 } },
      a100: { gpu: { nominal: 3, lendingLimit: 1, borrowingLimit: 2 } },
    });
    // Out-of-bounds settings are clamped first (guaranteed: lend ≤ 1, borrow 0).
    expect(applyPolicy(spec, P('guaranteed'), { lend: 7, borrow: 4 }).quotas.h100!.gpu).toEqual({
      nominal: 10,
      borrowingLimit: 0,
    });
    // The input spec is not modified.
    expect(spec.quotas.h100!.gpu).toEqual({ nominal: 10 });
  });

  it('applies the limits to every time window’s quotas too', () => {
    const windowed: QueueSpec = {
      ...spec,
      timeWindows: [
        {
          days: [0, 6],
          start: '00:00',
          end: '00:00',
          timeZone: 'UTC',
          quotas: { h100: { gpu: { nominal: 4 } } },
        },
      ],
    };
    const out = applyPolicy(windowed, P('guaranteed'), { lend: 0.25, borrow: 0 });
    expect(out.timeWindows![0]!.quotas).toEqual({
      h100: { gpu: { nominal: 4, lendingLimit: 1, borrowingLimit: 0 } },
    });
    expect(out.timeWindows![0]).toMatchObject({
      days: [0, 6],
      start: '00:00',
      end: '00:00',
      timeZone: 'UTC',
    });
  });

  it('preemption: a policy that may lend reclaims (Any, whatever the spec says); minimum run and NEVER as the policy says', () => {
    expect(applyPolicy(spec, P('elastic'), baseSetting(P('elastic'))).preemption).toEqual({
      reclaimWithinCohort: 'Any',
    });
    expect(
      applyPolicy(
        { ...spec, preemption: { reclaimWithinCohort: 'Never', withinQueue: 'LowerPriority' } },
        P('guaranteed'),
        baseSetting(P('guaranteed')),
      ).preemption,
    ).toEqual({
      reclaimWithinCohort: 'Any',
      withinQueue: 'LowerPriority',
      // RECLAIM_ONLY: fair share takes only jobs that would lose nothing
      fairShareMaxLostRunMs: 0,
    });
    expect(
      applyPolicy(
        { ...spec, preemption: { fairShareMaxLostRunMs: 60_000 } },
        P('guaranteed'),
        baseSetting(P('guaranteed')),
      ).preemption?.fairShareMaxLostRunMs,
    ).toBe(60_000);
    expect(
      applyPolicy(
        { ...spec, preemption: { reclaimWithinCohort: 'LowerPriority' } },
        P('elastic'),
        baseSetting(P('elastic')),
      ).preemption?.reclaimWithinCohort,
    ).toBe('Any');
    // Dedicated lends nothing: the spec's choice stands; its jobs never preempt each other.
    expect(
      applyPolicy(
        { ...spec, preemption: { reclaimWithinCohort: 'Never', withinQueue: 'LowerPriority' } },
        P('dedicated'),
        baseSetting(P('dedicated')),
      ).preemption,
    ).toEqual({
      reclaimWithinCohort: 'Never',
      withinQueue: 'Never',
    });
    const slowReclaim: IsolationPolicy = { ...P('elastic'), minRunBeforeReclaimMs: 600_000 };
    expect(applyPolicy(spec, slowReclaim, baseSetting(slowReclaim)).preemption?.minRunBeforeReclaimMs).toBe(
      600_000,
    );
    expect(
      applyPolicy(
        { ...spec, preemption: { minRunBeforeReclaimMs: 5 } },
        slowReclaim,
        baseSetting(slowReclaim),
      ).preemption?.minRunBeforeReclaimMs,
    ).toBe(5);
  });

  it('a lender whose spec said reclaim Never still gets its floor back from a higher-priority borrower', () => {
    const lenderSpec: QueueSpec = {
      name: 'lender',
      tenant: 't-lender',
      cohort: 'c',
      quotas: { h100: { gpu: { nominal: 8 } } },
      preemption: { reclaimWithinCohort: 'Never' },
    };
    const { s } = makeCluster({
      nodes: nodes(2),
      queues: [
        applyPolicy(lenderSpec, P('elastic'), baseSetting(P('elastic'))),
        makeQueue('borrower').cohort('c').nominal('h100', 8).build(),
      ],
    });
    s.submit(makeJob('big').queue('borrower').gpus(8).pods(2).priority('production').build());
    s.cycle();
    expect(s.jobState('big')).toBe('admitted');
    s.submit(makeJob('mine').queue('lender').gpus(4).priority('experiment').build());
    const r = s.cycle();
    expect(r.preempted.map((p) => [p.victimId, p.reason])).toEqual([['big', 'reclaim']]);
    expect(s.jobState('mine')).toBe('admitted');
  });
});
