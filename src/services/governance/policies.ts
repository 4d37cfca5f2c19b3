// The isolation-policy library as platform admins edit it: list it, add or override a
// policy, delete one (a built-in goes back to its coefficients), replace the selection rules; and the
// governance fields of a queue. Every change is audited; the queues whose limits it moves hear of it.
import type { EntityManager } from '@mikro-orm/core';
import { z } from 'zod';
import {
  BUILT_IN_POLICIES,
  type GovernanceInForce,
  governanceInForce,
  IDLE_ACTIONS,
  type IsolationPolicy,
  isGoverned,
  type LimitSetting,
  type PolicyLibrary,
  type PolicyRule,
  PREEMPTIBILITIES,
  policyProblems,
  SLA_CLASSES,
  type SlaClass,
  WORKLOAD_TYPES,
  type WorkloadType,
} from '../../core/governance/index.js';
import type { IsolationLevel } from '../../core/scheduling/index.js';
import { Queue } from '../../persistence/cluster/index.js';
import {
  GOVERNED_QUEUES,
  IsolationPolicyRow,
  IsolationPolicyRule,
  loadPolicyLibrary,
} from '../../persistence/governance/index.js';
import { ISOLATION_LEVELS, TENANT_TIERS } from '../../persistence/tenancy/index.js';
import { badInput, conflict, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import {
  requireCapability,
  requirePlatformAdmin,
  requirePrincipal,
  type ServiceContext,
} from '../context.js';
import { queueSpec } from '../scheduling/index.js';

export type {
  CoefficientRange,
  ControllerQueueInput,
  LimitSetting,
  PolicyRule,
  ProbeSample,
} from '../../core/governance/index.js';
// The schema names the governance vocabulary through this service, never through src/core
// (dependency-direction test).
export { IDLE_ACTIONS, PREEMPTIBILITIES, SLA_CLASSES, WORKLOAD_TYPES } from '../../core/governance/index.js';

const DAY = 86_400_000;
const BUILT_IN_NAMES = new Set(BUILT_IN_POLICIES.map((p) => p.name));
const MAX_RULES = 100;

/** A policy as the graph shows it: built-ins say so, and whether a platform admin changed their
 * coefficients.
 */
export type IsolationPolicyView = IsolationPolicy & { builtIn: boolean; overridden: boolean };

const range = z.object({ min: z.number(), base: z.number(), max: z.number() });
const duration = (most: number, what: string) =>
  z.number().int('whole milliseconds').min(0, 'must not be negative').max(most, `at most ${what}`);
const policyInput = z.object({
  name: z.string(),
  description: z.string().max(400, 'at most 400 characters').nullish(),
  level: z.enum(ISOLATION_LEVELS).nullish(),
  lend: range,
  borrow: range.nullable(),
  minRunBeforeReclaimMs: duration(7 * DAY, '7 days'),
  reclaimGraceMs: duration(DAY, '1 day'),
  preemptible: z.enum(PREEMPTIBILITIES),
  idle: z.object({
    utilizationBelow: z.number(),
    idleForMs: duration(30 * DAY, '30 days'),
    notRunningForMs: duration(30 * DAY, '30 days'),
    action: z.enum(IDLE_ACTIONS),
  }),
});
export type SetIsolationPolicyInput = z.input<typeof policyInput>;

const ruleInput = z.object({
  tier: z.enum(TENANT_TIERS).nullish(),
  workloadType: z.enum(WORKLOAD_TYPES).nullish(),
  slaClass: z.enum(SLA_CLASSES).nullish(),
  policy: z.string(),
});
export type PolicyRuleInput = z.input<typeof ruleInput>;

function parsed<T>(schema: z.ZodType<T>, value: unknown, what: string): T {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  throw badInput(
    `${what}: ${result.error.issues.map((i) => `${i.path.join('.') || 'value'}: ${i.message}`).join('; ')}`,
  );
}

const view = (overridden: Set<string>, p: IsolationPolicy): IsolationPolicyView => ({
  ...p,
  builtIn: BUILT_IN_NAMES.has(p.name),
  overridden: BUILT_IN_NAMES.has(p.name) && overridden.has(p.name),
});

/**
 * Any signed-in caller may read the library: it is platform policy (names, coefficients, rules by
 * tier, workload type and SLA class), like the flavors and priority classes, and names no tenant,
 * queue or person — tenants see what their queues are held to and why.
 */
export async function listIsolationPolicies(ctx: ServiceContext): Promise<IsolationPolicyView[]> {
  requirePrincipal(ctx);
  const [library, rows] = await Promise.all([loadPolicyLibrary(ctx.em), ctx.em.find(IsolationPolicyRow, {})]);
  const overridden = new Set(rows.map((r) => r.name));
  const order = (p: IsolationPolicy) =>
    BUILT_IN_NAMES.has(p.name)
      ? BUILT_IN_POLICIES.findIndex((b) => b.name === p.name)
      : BUILT_IN_POLICIES.length;
  return [...library.policies.values()]
    .sort((a, b) => order(a) - order(b) || a.name.localeCompare(b.name))
    .map((p) => view(overridden, p));
}

/** The selection rules in order, and whether they are the built-in defaults (no list stored). Readable like
 * the policies.
 */
export async function listIsolationPolicyRules(
  ctx: ServiceContext,
): Promise<{ rules: PolicyRule[]; defaultRules: boolean }> {
  requirePrincipal(ctx);
  const library = await loadPolicyLibrary(ctx.em);
  return { rules: library.rules, defaultRules: library.defaultRules };
}

/** Platform admins: adds a policy, or changes one (a built-in's name overrides its coefficients; its level
 * stays).
 */
export async function setIsolationPolicy(
  ctx: ServiceContext,
  input: SetIsolationPolicyInput,
): Promise<IsolationPolicyView> {
  return changeLibrary(ctx, { action: 'isolationPolicy.set', input: { ...input } }, async (em) => {
    const valid = parsed(policyInput, input, 'Invalid isolation policy');
    const builtIn = BUILT_IN_POLICIES.find((p) => p.name === valid.name);
    const level = (valid.level ?? builtIn?.level) as IsolationLevel | undefined;
    if (!level) throw badInput('A new isolation policy needs a level.');
    if (builtIn && level !== builtIn.level)
      throw badInput(
        `The built-in policy "${builtIn.name}" keeps its level ${builtIn.level}; add a policy under another name for another level.`,
      );
    const existing = await em.findOne(IsolationPolicyRow, { name: valid.name });
    const policy: IsolationPolicy = {
      name: valid.name,
      description: valid.description ?? existing?.description ?? builtIn?.description ?? '',
      level,
      lend: valid.lend,
      borrow: valid.borrow,
      minRunBeforeReclaimMs: valid.minRunBeforeReclaimMs,
      reclaimGraceMs: valid.reclaimGraceMs,
      preemptible: valid.preemptible,
      idle: valid.idle,
    };
    const problems = policyProblems(policy);
    if (problems.length) throw badInput(`Invalid isolation policy: ${problems.join('; ')}.`, { problems });
    const { name, description, level: _level, ...coefficients } = policy;
    const row =
      existing ??
      em.create(IsolationPolicyRow, { name, description, level, coefficients, builtIn: Boolean(builtIn) });
    Object.assign(row, { description, level, coefficients });
    await em.flush();
    return {
      result: { ...policy, builtIn: Boolean(builtIn), overridden: Boolean(builtIn) },
      targetId: row.id,
    };
  });
}

/**
 * Platform admins: removes a policy they added (CONFLICT while a queue or a rule names it), or resets
 * a built-in to its own coefficients (built-ins are never removed). Returns whether it was a reset.
 */
export async function deleteIsolationPolicy(
  ctx: ServiceContext,
  name: string,
): Promise<{ name: string; reset: boolean }> {
  return changeLibrary(ctx, { action: 'isolationPolicy.delete', input: { name } }, async (em) => {
    const builtIn = BUILT_IN_NAMES.has(name);
    const row = await em.findOne(IsolationPolicyRow, { name });
    if (!builtIn && !row) throw notFound('IsolationPolicy');
    if (!builtIn) {
      const [queues, rules] = await Promise.all([
        em.count(Queue, { isolationPolicy: name }, { filters: false }),
        em.count(IsolationPolicyRule, { policy: name }),
      ]);
      if (queues || rules)
        throw conflict(
          `The isolation policy "${name}" is in use (${queues} queue(s), ${rules} rule(s) name it); change them first.`,
        );
    }
    if (row) em.remove(row);
    await em.flush();
    return { result: { name, reset: builtIn }, targetId: row?.id ?? null };
  });
}

/** Platform admins: replaces the selection rules (in order; the most specific match wins). An empty list
 * restores the defaults.
 */
export async function setIsolationPolicyRules(
  ctx: ServiceContext,
  input: PolicyRuleInput[],
): Promise<{ rules: PolicyRule[]; defaultRules: boolean }> {
  return changeLibrary(
    ctx,
    { action: 'isolationPolicyRules.set', input: { rules: input } },
    async (em, before) => {
      const rules = parsed(
        z.array(ruleInput).max(MAX_RULES, `at most ${MAX_RULES} rules`),
        input,
        'Invalid isolation policy rules',
      );
      rules.forEach((r, i) => {
        if (!before.policies.has(r.policy))
          throw badInput(`Rule ${i + 1}: unknown isolation policy "${r.policy}".`);
      });
      for (const old of await em.find(IsolationPolicyRule, {})) em.remove(old);
      // The old rows go first: positions are unique per list, not across the two.
      await em.flush();
      rules.forEach((r, position) =>
        em.create(IsolationPolicyRule, {
          position,
          tier: r.tier ?? null,
          workloadType: r.workloadType ?? null,
          slaClass: r.slaClass ?? null,
          policy: r.policy,
        }),
      );
      await em.flush();
      const after = await loadPolicyLibrary(em);
      return { result: { rules: after.rules, defaultRules: after.defaultRules }, targetId: null };
    },
  );
}

/**
 * One library change: platform admins only, audited in its transaction. The governed queues whose
 * core spec differs afterwards are told (QUOTA_CHANGED, queue-updated) once it is committed, and the
 * scheduler reloads the configuration (every spec) and the governance tasks their library.
 */
async function changeLibrary<T>(
  ctx: ServiceContext,
  meta: { action: string; input: Record<string, unknown> },
  work: (em: EntityManager, before: PolicyLibrary) => Promise<{ result: T; targetId: string | null }>,
): Promise<T> {
  let moved: { queueId: string; tenantId: string }[] = [];
  const result = await auditedMutation(ctx, meta, async (em) => {
    requirePlatformAdmin(ctx);
    const before = await loadPolicyLibrary(em);
    const { result, targetId } = await work(em, before);
    moved = await queuesMoved(em, before, await loadPolicyLibrary(em));
    return { result, tenantId: null, targetType: 'IsolationPolicy', targetId: targetId as string };
  });
  ctx.scheduler.announce({ kind: 'config' });
  ctx.scheduler.announce({ kind: 'governance' });
  const at = ctx.now().getTime();
  for (const { queueId, tenantId } of moved) {
    ctx.events.publish('tenant-event', tenantId, { kind: 'QUOTA_CHANGED', queueId, at });
    ctx.events.publish('queue-updated', queueId, { queueId, at });
  }
  return result;
}

/** The governed queues whose core spec differs between two libraries (platform-wide: every tenant's). */
async function queuesMoved(
  em: EntityManager,
  before: PolicyLibrary,
  after: PolicyLibrary,
): Promise<{ queueId: string; tenantId: string }[]> {
  const queues = (await em.find(Queue, GOVERNED_QUEUES, { filters: false, populate: ['tenant'] })).filter(
    isGoverned,
  );
  const spec = (library: PolicyLibrary, q: Queue) =>
    JSON.stringify(queueSpec(q, null, 1, governanceInForce(library, q, q.tenant.tier)));
  return queues
    .filter((q) => spec(before, q) !== spec(after, q))
    .map((q) => ({ queueId: q.id, tenantId: q.tenant.id }));
}

// ─── queue fields ───

type GovernanceFields = {
  workloadType?: WorkloadType | null;
  slaClass?: SlaClass | null;
  isolationPolicy?: string | null;
};

/** Sets the governance fields a queue input names (null clears one); a change drops the controller's setting
 * (the new policy starts from its base).
 */
export function assignGovernanceFields(queue: Queue, input: GovernanceFields): void {
  const before = [queue.workloadType, queue.slaClass, queue.isolationPolicy].join('|');
  if (input.workloadType !== undefined)
    queue.workloadType = parsed(z.enum(WORKLOAD_TYPES).nullable(), input.workloadType, 'workloadType');
  if (input.slaClass !== undefined)
    queue.slaClass = parsed(z.enum(SLA_CLASSES).nullable(), input.slaClass, 'slaClass');
  if (input.isolationPolicy !== undefined) queue.isolationPolicy = input.isolationPolicy || null;
  if ([queue.workloadType, queue.slaClass, queue.isolationPolicy].join('|') !== before)
    queue.controllerSetting = null;
}

/** A queue being written: what governs it (null outside governance); a named policy must exist
 * (BAD_USER_INPUT).
 */
export async function governanceForQueueWrite(
  em: EntityManager,
  queue: Queue,
  tier: string,
): Promise<GovernanceInForce | null> {
  if (!isGoverned(queue)) return null;
  const library = await loadPolicyLibrary(em);
  if (queue.isolationPolicy && !library.policies.has(queue.isolationPolicy))
    throw badInput(`Unknown isolation policy "${queue.isolationPolicy}".`);
  return governanceInForce(library, queue, tier);
}

/** The limits a governed queue's core uses for one flavor's GPUs (after the policy and its level's knob). */
export interface EffectiveGpuLimit {
  flavor: string;
  nominal: number;
  lendingLimit: number | null;
  borrowingLimit: number | null;
}

export interface QueueGovernanceView {
  policy: IsolationPolicyView;
  chosenBy: 'QUEUE' | 'RULE';
  rule: PolicyRule | null;
  limitsInForce: LimitSetting & { source: 'STATIC' | 'CONTROLLER' };
  effective: EffectiveGpuLimit[];
}

/** One library per request, however many queues ask. */
const requestLibraries = new WeakMap<object, Promise<[PolicyLibrary, Set<string>]>>();

/**
 * How a queue is governed, for whoever may see the queue and its configured quotas (tenant:read):
 * it is derived from that configuration and the platform's library. Null outside governance.
 */
export async function queueGovernance(
  ctx: ServiceContext,
  queue: Queue,
): Promise<QueueGovernanceView | null> {
  requireCapability(ctx, queue.tenant.id, 'tenant:read', 'Queue');
  if (!isGoverned(queue)) return null;
  let loading = requestLibraries.get(ctx.loaders);
  if (!loading)
    requestLibraries.set(
      ctx.loaders,
      (loading = Promise.all([
        loadPolicyLibrary(ctx.em),
        ctx.em.find(IsolationPolicyRow, {}).then((rows) => new Set(rows.map((r) => r.name))),
      ])),
    );
  const [[library, overridden], tenant] = await Promise.all([
    loading,
    ctx.loaders.tenant.load(queue.tenant.id),
  ]);
  const governance = governanceInForce(library, queue, tenant?.tier ?? 'STANDARD');
  if (!governance) return null;
  const spec = queueSpec(queue, null, 1, governance);
  const level = governance.policy.level;
  const effective = Object.entries(spec.quotas).flatMap(([flavor, perResource]) => {
    const gpu = perResource?.gpu;
    if (!gpu) return [];
    // The core's isolation knob over the limits (core/quota-config.ts), so these are the numbers it
    // schedules by.
    if (level === 'DEDICATED') return [{ flavor, nominal: gpu.nominal, lendingLimit: 0, borrowingLimit: 0 }];
    if (level === 'BEST_EFFORT')
      return [{ flavor, nominal: 0, lendingLimit: null, borrowingLimit: gpu.borrowingLimit ?? null }];
    return [
      {
        flavor,
        nominal: gpu.nominal,
        lendingLimit: gpu.lendingLimit ?? null,
        borrowingLimit: level === 'GUARANTEED' ? 0 : (gpu.borrowingLimit ?? null),
      },
    ];
  });
  return {
    policy: view(overridden, governance.policy),
    chosenBy: governance.chosenBy,
    rule: governance.rule,
    limitsInForce: { ...governance.setting, source: governance.source },
    effective,
  };
}
