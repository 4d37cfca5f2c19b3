import { z } from 'zod';
import {
  type CoefficientRange,
  deleteIsolationPolicy,
  type EffectiveGpuLimit,
  type IDLE_ACTIONS,
  type IsolationPolicyView,
  listIsolationPolicies,
  listIsolationPolicyRules,
  type PolicyRule,
  type PREEMPTIBILITIES,
  type QueueGovernanceView,
  queueGovernance,
  setIsolationPolicy,
  setIsolationPolicyRules,
} from '../../src/services/governance/index.js';
import { builder } from '../builder.js';
import { IsolationLevelEnum, SlaClassEnum, TenantTierEnum, WorkloadTypeEnum } from '../common.js';
import { QueueRef } from '../refs.js';

// Governance: the isolation-strength policy library (platform policy: any signed-in
// caller reads it, platform admins change it) and how each queue is governed.

export const IdleActionEnum = builder.enumType('IdleAction', {
  values: {
    NOTIFY: { description: 'Flag the job and tell its owner.' },
    RECLAIM_IF_BORROWING: {
      description: "Reclaim the job's GPUs while its queue holds more than its nominal; otherwise notify.",
    },
    RECLAIM: { description: "Reclaim the job's GPUs." },
  } satisfies Record<(typeof IDLE_ACTIONS)[number], unknown>,
});
const PreemptibilityEnum = builder.enumType('Preemptibility', {
  values: {
    NEVER: { description: 'Never preempted by other queues.' },
    RECLAIM_ONLY: { description: 'Only by a queue taking back the nominal it lent.' },
    ANY: { description: 'By reclaim and by fair sharing, as the queue rules allow.' },
  } satisfies Record<(typeof PREEMPTIBILITIES)[number], unknown>,
});
const ChoiceEnum = builder.enumType('IsolationPolicyChoice', {
  values: {
    QUEUE: { description: 'Named on the queue.' },
    RULE: {
      description: "Chosen by a rule from the tenant's tier, the queue's workload type and SLA class.",
    },
  } as const,
});
const LimitsSourceEnum = builder.enumType('LimitsSource', {
  values: {
    STATIC: { description: "The policy's base coefficients." },
    CONTROLLER: { description: "Set by the governance controller, within the policy's bounds." },
  } as const,
});

const seconds = (ms: number) => Math.round(ms / 1000);

const CoefficientRangeRef = builder.objectRef<CoefficientRange>('CoefficientRange').implement({
  description:
    'A coefficient the controller may move: it starts at base (the static setting) and stays within [min, max].',
  fields: (t) => ({ min: t.exposeFloat('min'), base: t.exposeFloat('base'), max: t.exposeFloat('max') }),
});

const IdlePolicyRef = builder.objectRef<IsolationPolicyView['idle']>('IdlePolicy').implement({
  description: 'When a job of a queue under this policy is flagged, and what then happens.',
  fields: (t) => ({
    utilizationBelow: t.float({
      description: 'A running job whose mean GPU utilization (0..1) stays below this …',
      resolve: (i) => i.utilizationBelow,
    }),
    idleForSeconds: t.int({
      description: '… for this long is flagged IDLE.',
      resolve: (i) => seconds(i.idleForMs),
    }),
    notRunningForSeconds: t.int({
      description: 'An admitted job not running after this long is flagged NOT_RUNNING.',
      resolve: (i) => seconds(i.notRunningForMs),
    }),
    action: t.field({ type: IdleActionEnum, resolve: (i) => i.action }),
  }),
});

export const IsolationPolicyRef = builder.objectRef<IsolationPolicyView>('IsolationPolicy').implement({
  description:
    "A named isolation strength. A governed queue's floor is its nominal quota: never lowered, always reachable (at once for what is never lent, by reclaim for what is).",
  fields: (t) => ({
    name: t.exposeString('name'),
    description: t.exposeString('description'),
    level: t.field({
      type: IsolationLevelEnum,
      description: "The core's isolation knob the limits start from.",
      resolve: (p) => p.level,
    }),
    lend: t.field({
      type: CoefficientRangeRef,
      description:
        "Share of the queue's unused nominal the cohort may borrow: lendingLimit = nominal × lend.",
      resolve: (p) => p.lend,
    }),
    borrow: t.field({
      type: CoefficientRangeRef,
      nullable: true,
      description: 'Borrowing limit as a multiple of nominal; null: unlimited.',
      resolve: (p) => p.borrow,
    }),
    minRunBeforeReclaimSeconds: t.int({
      description: 'A job on borrowed capacity is not reclaimed before it has run this long.',
      resolve: (p) => seconds(p.minRunBeforeReclaimMs),
    }),
    reclaimGraceSeconds: t.int({
      description: 'A preempted job gets this long to checkpoint and stop.',
      resolve: (p) => seconds(p.reclaimGraceMs),
    }),
    preemptible: t.field({ type: PreemptibilityEnum, resolve: (p) => p.preemptible }),
    idle: t.field({ type: IdlePolicyRef, resolve: (p) => p.idle }),
    builtIn: t.exposeBoolean('builtIn', {
      description:
        'One of the four built-ins (dedicated, guaranteed, elastic, best-effort): it can be overridden and reset, never removed.',
    }),
    overridden: t.exposeBoolean('overridden', {
      description:
        'A built-in whose coefficients a platform admin changed (deleteIsolationPolicy resets it).',
    }),
  }),
});

const IsolationPolicyRuleRef = builder.objectRef<PolicyRule>('IsolationPolicyRule').implement({
  description:
    'Chooses a policy for the queues it matches (null fields match anything); the most specific matching rule wins, then the earliest.',
  fields: (t) => ({
    tier: t.field({ type: TenantTierEnum, nullable: true, resolve: (r) => (r.tier as never) ?? null }),
    workloadType: t.field({ type: WorkloadTypeEnum, nullable: true, resolve: (r) => r.workloadType }),
    slaClass: t.field({ type: SlaClassEnum, nullable: true, resolve: (r) => r.slaClass }),
    policy: t.exposeString('policy', { description: "The policy's name." }),
  }),
});

const LimitsInForceRef = builder.objectRef<QueueGovernanceView['limitsInForce']>('LimitsInForce').implement({
  fields: (t) => ({
    lend: t.exposeFloat('lend', { description: 'Share of unused nominal lent (0..1).' }),
    borrow: t.float({
      nullable: true,
      description: 'Borrowing limit as a multiple of nominal; null: unlimited.',
      resolve: (l) => l.borrow,
    }),
    source: t.field({ type: LimitsSourceEnum, resolve: (l) => l.source }),
  }),
});

const EffectiveGpuLimitRef = builder.objectRef<EffectiveGpuLimit>('EffectiveGpuLimit').implement({
  description:
    "One flavor's GPU limits the scheduler applies to the queue under its policy (time windows may change them while open).",
  fields: (t) => ({
    flavor: t.exposeString('flavor'),
    nominal: t.exposeFloat('nominal'),
    lendingLimit: t.float({
      nullable: true,
      description: 'Null: all unused nominal may be lent.',
      resolve: (l) => l.lendingLimit,
    }),
    borrowingLimit: t.float({
      nullable: true,
      description: 'Null: unlimited.',
      resolve: (l) => l.borrowingLimit,
    }),
  }),
});

const QueueGovernanceRef = builder.objectRef<QueueGovernanceView>('QueueGovernance').implement({
  description: "How a governed queue's limits come from the policy library.",
  fields: (t) => ({
    policy: t.field({ type: IsolationPolicyRef, resolve: (g) => g.policy }),
    chosenBy: t.field({ type: ChoiceEnum, resolve: (g) => g.chosenBy }),
    rule: t.field({
      type: IsolationPolicyRuleRef,
      nullable: true,
      description: 'The rule that chose it (RULE).',
      resolve: (g) => g.rule,
    }),
    limitsInForce: t.field({ type: LimitsInForceRef, resolve: (g) => g.limitsInForce }),
    effective: t.field({ type: [EffectiveGpuLimitRef], resolve: (g) => g.effective }),
  }),
});

builder.objectFields(QueueRef, (t) => ({
  workloadType: t.field({
    type: WorkloadTypeEnum,
    nullable: true,
    resolve: (q) => (q.workloadType as never) ?? null,
  }),
  slaClass: t.field({ type: SlaClassEnum, nullable: true, resolve: (q) => (q.slaClass as never) ?? null }),
  isolationPolicy: t.string({
    nullable: true,
    description: 'The isolation policy named on the queue (over the rules); null: the rules choose.',
    resolve: (q) => q.isolationPolicy ?? null,
  }),
  governance: t.field({
    type: QueueGovernanceRef,
    nullable: true,
    description:
      'Null for a queue outside governance (no isolation policy, workload type nor SLA class): its limits are as configured.',
    resolve: (q, _a, ctx) => queueGovernance(ctx, q),
  }),
}));

builder.queryFields((t) => ({
  isolationPolicies: t.field({
    type: [IsolationPolicyRef],
    description:
      'The isolation-policy library (platform policy; any signed-in caller): built-ins first, then those platform admins added.',
    authScopes: { authenticated: true },
    resolve: (_r, _a, ctx) => listIsolationPolicies(ctx),
  }),
  isolationPolicyRules: t.field({
    type: [IsolationPolicyRuleRef],
    description:
      'The rules that choose a policy by tenant tier × workload type × SLA class, in order (the defaults until platform admins set a list).',
    authScopes: { authenticated: true },
    resolve: async (_r, _a, ctx) => (await listIsolationPolicyRules(ctx)).rules,
  }),
}));

const RangeInput = builder.inputType('CoefficientRangeInput', {
  fields: (t) => ({
    min: t.float({ required: true }),
    base: t.float({ required: true }),
    max: t.float({ required: true }),
  }),
});
const toRange = (r: { min: number; base: number; max: number }): CoefficientRange => ({
  min: r.min,
  base: r.base,
  max: r.max,
});

const IdlePolicyInput = builder.inputType('IdlePolicyInput', {
  fields: (t) => ({
    utilizationBelow: t.float({ required: true, description: '0..1' }),
    idleForSeconds: t.int({ required: true }),
    notRunningForSeconds: t.int({ required: true }),
    action: t.field({ type: IdleActionEnum, required: true }),
  }),
});

const SetIsolationPolicyInput = builder.inputType('SetIsolationPolicyInput', {
  fields: (t) => ({
    name: t.string({
      required: true,
      description:
        "A built-in's name overrides its coefficients (its level stays); a new name adds a policy.",
    }),
    description: t.string({ description: 'Left out: unchanged (a new policy: empty).' }),
    level: t.field({
      type: IsolationLevelEnum,
      description: "Required for a new policy; a built-in's must be its own.",
    }),
    lend: t.field({ type: RangeInput, required: true, description: 'Share of unused nominal lent, 0..1.' }),
    borrow: t.field({
      type: RangeInput,
      description: 'Multiple of nominal, 0..100; null or left out: unlimited.',
    }),
    minRunBeforeReclaimSeconds: t.int({ required: true }),
    reclaimGraceSeconds: t.int({ required: true }),
    preemptible: t.field({ type: PreemptibilityEnum, required: true }),
    idle: t.field({ type: IdlePolicyInput, required: true }),
  }),
});

const IsolationPolicyRuleInput = builder.inputType('IsolationPolicyRuleInput', {
  fields: (t) => ({
    tier: t.field({ type: TenantTierEnum }),
    workloadType: t.field({ type: WorkloadTypeEnum }),
    slaClass: t.field({ type: SlaClassEnum }),
    policy: t.string({ required: true }),
  }),
});

const DeleteIsolationPolicyPayload = builder
  .objectRef<{ name: string; reset: boolean }>('DeleteIsolationPolicyPayload')
  .implement({
    fields: (t) => ({
      name: t.exposeString('name'),
      reset: t.exposeBoolean('reset', {
        description: 'True for a built-in: it is back to its own coefficients.',
      }),
    }),
  });

// The service checks the caller (platform admins) inside the audited transaction, so refusals are audited
// too.
builder.mutationFields((t) => ({
  setIsolationPolicy: t.field({
    type: IsolationPolicyRef,
    description:
      'Platform admins. Adds a policy or changes one; audited. Queues it governs get their new limits at once.',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: SetIsolationPolicyInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      setIsolationPolicy(ctx, {
        name: input.name,
        description: input.description,
        level: input.level,
        lend: toRange(input.lend),
        borrow: input.borrow ? toRange(input.borrow) : null,
        minRunBeforeReclaimMs: input.minRunBeforeReclaimSeconds * 1000,
        reclaimGraceMs: input.reclaimGraceSeconds * 1000,
        preemptible: input.preemptible,
        idle: {
          utilizationBelow: input.idle.utilizationBelow,
          idleForMs: input.idle.idleForSeconds * 1000,
          notRunningForMs: input.idle.notRunningForSeconds * 1000,
          action: input.idle.action,
        },
      }),
  }),
  deleteIsolationPolicy: t.field({
    type: DeleteIsolationPolicyPayload,
    description:
      'Platform admins. Removes a policy they added (CONFLICT while a queue or rule names it) or resets a built-in; audited.',
    authScopes: { authenticated: true },
    args: { name: t.arg.string({ required: true, validate: z.string().max(63) }) },
    resolve: (_r, { name }, ctx) => deleteIsolationPolicy(ctx, name),
  }),
  setIsolationPolicyRules: t.field({
    type: [IsolationPolicyRuleRef],
    description:
      'Platform admins. Replaces the rules (each must name an existing policy); an empty list restores the defaults. Audited.',
    authScopes: { authenticated: true },
    args: { rules: t.arg({ type: [IsolationPolicyRuleInput], required: true }) },
    resolve: async (_r, { rules }, ctx) => (await setIsolationPolicyRules(ctx, rules)).rules,
  }),
}));
