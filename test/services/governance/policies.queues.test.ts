import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUILT_IN_POLICIES, baseSetting } from '../../../src/core/governance/policies.js';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { Queue } from '../../../src/persistence/cluster/entities.js';
import { queueSpec } from '../../../src/services/scheduling/specs.js';
import { describeEachDialect } from '../../helpers/database.js';
import { codesOf, startTestApp, type TestApp } from '../../helpers/harness.js';

/**
 * Governed queues: the policy a queue gets by its tenant's tier × workload type × SLA
 * class (or by name), the limits the scheduler core then applies, the controller's coefficients read
 * within the policy's bounds, validation of the queue fields, and that another tenant's queue
 * governance is NOT_FOUND.
 */
const CREATE = `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id workloadType slaClass isolationPolicy } }`;
const UPDATE = `mutation($in: UpdateQueueInput!) { updateQueue(input: $in) { id workloadType slaClass isolationPolicy } }`;
const GOVERNANCE = `governance { policy { name level } chosenBy rule { tier workloadType slaClass policy } limitsInForce { lend borrow source } effective { flavor nominal lendingLimit borrowingLimit } }`;
const READ = `query($id: ID!) { node(id: $id) { ... on Queue { name workloadType slaClass ${GOVERNANCE} } } }`;

describe('queueSpec under a policy', () => {
  const row = {
    name: 'q',
    tenant: { id: 't' },
    quotas: { f: { gpu: { nominal: 8 } } },
    weight: 1,
    queueingStrategy: 'BestEffortFIFO',
    preemption: { withinQueue: 'LowerPriority' },
    isolationLevel: null,
    timeWindows: [],
    dedicatedPool: null,
  } as unknown as Queue;

  it("a policy's durations are declared time, scaled to the backend's clock like the queue's own; without a policy the spec is the row", () => {
    const policy = {
      ...BUILT_IN_POLICIES.find((p) => p.name === 'elastic')!,
      minRunBeforeReclaimMs: 600_000,
    };
    expect(queueSpec(row, null, 60, { policy, setting: baseSetting(policy) })).toMatchObject({
      isolation: 'ELASTIC',
      preemption: { withinQueue: 'LowerPriority', reclaimWithinCohort: 'Any', minRunBeforeReclaimMs: 10_000 },
    });
    expect(queueSpec(row, 'c', 60)).toEqual({
      name: 'q',
      tenant: 't',
      cohort: 'c',
      quotas: row.quotas,
      weight: 1,
      queueingStrategy: 'BestEffortFIFO',
      preemption: { withinQueue: 'LowerPriority' },
      isolation: undefined,
      timeWindows: undefined,
      dedicatedPool: undefined,
    });
  });
});

describeEachDialect('governed queues', (dialect) => {
  let t: TestApp;
  let admin: string;
  const tenants: Record<string, string> = {};

  beforeAll(async () => {
    t = await startTestApp({ dialect });
    admin = t.token(null, 'PLATFORM_ADMIN');
    for (const tier of ['STANDARD', 'PREMIUM', 'ENTERPRISE']) {
      tenants[tier] = (
        await ok(admin, `mutation($in: CreateTenantInput!) { createTenant(input: $in) { id } }`, {
          in: { slug: `gov-${tier.toLowerCase()}`, name: `Governed ${tier}`, tier },
        })
      ).createTenant.id;
    }
    // The built-in guaranteed policy as shipped (the demo overrides it to lend everything).
    await ok(admin, `mutation { deleteIsolationPolicy(name: "guaranteed") { reset } }`);
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  async function ok(bearer: string, query: string, variables: Record<string, unknown> = {}) {
    const res = await t.gql(bearer, query, variables);
    expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
    return res.body.data as Record<string, any>;
  }
  const core = (queue: string) => {
    const status = t.app.scheduler.queueStatus(queue);
    const gpu = status?.resources.find((r) => r.flavor === 'h100-80g' && r.resource === 'gpu');
    return status && gpu
      ? {
          isolation: status.isolation,
          nominal: gpu.nominal,
          lendingLimit: gpu.lendingLimit ?? null,
          borrowingLimit: gpu.borrowingLimit ?? null,
        }
      : null;
  };
  async function until(check: () => boolean, what: string) {
    const deadline = Date.now() + 30_000;
    while (!check()) {
      if (Date.now() > deadline) throw new Error(`not reached: ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  let serial = 0;
  async function queue(tier: string, fields: Record<string, unknown>, quota: Record<string, unknown> = {}) {
    const name = `gov-q-${++serial}`;
    const created = (
      await ok(admin, CREATE, {
        in: {
          name,
          tenantId: tenants[tier],
          quotas: [{ flavor: 'h100-80g', nominal: 8, ...quota }],
          ...fields,
        },
      })
    ).createQueue;
    await until(() => core(name) !== null, `${name} in the core`);
    return { name, id: created.id as string, created };
  }

  it('the rules choose by tier × workload type × SLA class (or the queue names a policy); the core applies the limits', async () => {
    const cases: [
      string,
      Record<string, unknown>,
      string,
      'QUEUE' | 'RULE',
      { isolation: string; nominal: number; lendingLimit: number | null; borrowingLimit: number | null },
    ][] = [
      [
        'ENTERPRISE',
        { workloadType: 'TRAINING', slaClass: 'STANDARD' },
        'guaranteed',
        'RULE',
        { isolation: 'GUARANTEED', nominal: 8, lendingLimit: 4, borrowingLimit: 0 },
      ],
      [
        'STANDARD',
        { workloadType: 'TRAINING', slaClass: 'CRITICAL' },
        'guaranteed',
        'RULE',
        { isolation: 'GUARANTEED', nominal: 8, lendingLimit: 4, borrowingLimit: 0 },
      ],
      [
        'PREMIUM',
        { workloadType: 'ONLINE_INFERENCE' },
        'guaranteed',
        'RULE',
        { isolation: 'GUARANTEED', nominal: 8, lendingLimit: 4, borrowingLimit: 0 },
      ],
      [
        'ENTERPRISE',
        { workloadType: 'FINE_TUNING', slaClass: 'BEST_EFFORT' },
        'best-effort',
        'RULE',
        { isolation: 'BEST_EFFORT', nominal: 0, lendingLimit: null, borrowingLimit: null },
      ],
      [
        'STANDARD',
        { workloadType: 'TRAINING', slaClass: 'STANDARD' },
        'elastic',
        'RULE',
        { isolation: 'ELASTIC', nominal: 8, lendingLimit: null, borrowingLimit: null },
      ],
      [
        'STANDARD',
        { slaClass: 'CRITICAL', isolationPolicy: 'elastic' },
        'elastic',
        'QUEUE',
        { isolation: 'ELASTIC', nominal: 8, lendingLimit: null, borrowingLimit: null },
      ],
    ];
    for (const [tier, fields, policy, chosenBy, limits] of cases) {
      const q = await queue(tier, fields);
      expect(q.created).toMatchObject({
        workloadType: fields.workloadType ?? null,
        slaClass: fields.slaClass ?? null,
        isolationPolicy: fields.isolationPolicy ?? null,
      });
      expect(core(q.name), `${tier} ${JSON.stringify(fields)}`).toEqual(limits);
      const { governance } = (await ok(admin, READ, { id: q.id })).node;
      const { isolation: _isolation, ...gpu } = limits;
      expect(governance).toMatchObject({
        policy: { name: policy },
        chosenBy,
        limitsInForce: { source: 'STATIC' },
        effective: [{ flavor: 'h100-80g', ...gpu }],
      });
      expect(governance.rule === null).toBe(chosenBy === 'QUEUE');
    }
    // A queue outside governance is exactly as configured: no governance, its own limits, its isolation
    // level.
    const plain = await queue('STANDARD', { isolationLevel: 'GUARANTEED' }, { lendingLimit: 3 });
    expect((await ok(admin, READ, { id: plain.id })).node).toMatchObject({
      workloadType: null,
      slaClass: null,
      governance: null,
    });
    expect(core(plain.name)).toEqual({
      isolation: 'GUARANTEED',
      nominal: 8,
      lendingLimit: 3,
      borrowingLimit: 0,
    });
  });

  it("a tenant's tier and the rules are inputs: changing either moves the queue's policy and its core limits", async () => {
    const q = await queue('STANDARD', { workloadType: 'TRAINING', slaClass: 'STANDARD' });
    expect(core(q.name)?.isolation).toBe('ELASTIC');
    await ok(admin, `mutation($in: UpdateTenantInput!) { updateTenant(input: $in) { id } }`, {
      in: { id: tenants.STANDARD, tier: 'ENTERPRISE' },
    });
    await until(() => core(q.name)?.isolation === 'GUARANTEED', 'enterprise training → guaranteed');
    expect((await ok(admin, READ, { id: q.id })).node.governance.rule).toEqual({
      tier: 'ENTERPRISE',
      workloadType: 'TRAINING',
      slaClass: null,
      policy: 'guaranteed',
    });
    await ok(admin, `mutation($in: UpdateTenantInput!) { updateTenant(input: $in) { id } }`, {
      in: { id: tenants.STANDARD, tier: 'STANDARD' },
    });
    await until(() => core(q.name)?.isolation === 'ELASTIC', 'back to elastic');

    // A PREMIUM-only rule ahead of the defaults: premium's batch inference becomes best-effort.
    const premium = await queue('PREMIUM', { workloadType: 'BATCH_INFERENCE' });
    expect(core(premium.name)?.isolation).toBe('ELASTIC');
    const defaults = (await ok(admin, `{ isolationPolicyRules { tier workloadType slaClass policy } }`))
      .isolationPolicyRules;
    await ok(
      admin,
      `mutation($r: [IsolationPolicyRuleInput!]!) { setIsolationPolicyRules(rules: $r) { policy } }`,
      { r: [{ tier: 'PREMIUM', workloadType: 'BATCH_INFERENCE', policy: 'best-effort' }, ...defaults] },
    );
    await until(
      () => core(premium.name)?.isolation === 'BEST_EFFORT',
      'premium batch inference → best-effort',
    );
    expect((await ok(admin, READ, { id: premium.id })).node.governance).toMatchObject({
      policy: { name: 'best-effort' },
      rule: { tier: 'PREMIUM', workloadType: 'BATCH_INFERENCE', slaClass: null },
    });
    // Other tiers keep the defaults' choice.
    expect(core(q.name)?.isolation).toBe('ELASTIC');
    await ok(admin, `mutation { setIsolationPolicyRules(rules: []) { policy } }`);
    await until(() => core(premium.name)?.isolation === 'ELASTIC', 'default rules again');
  });

  it("the controller's coefficients (Queue.controllerSetting) are read within the policy's bounds; clearing them restores the static base", async () => {
    const q = await queue('STANDARD', { slaClass: 'CRITICAL' });
    const setController = async (value: { lend: number; borrow: number | null; at: number } | null) => {
      const em = t.app.orm.em.fork({ clear: true });
      const row = await em.findOneOrFail(
        Queue,
        { id: Buffer.from(q.id, 'base64').toString().split(':')[1]! },
        { filters: false },
      );
      row.controllerSetting = value;
      await em.flush();
      await t.app.scheduler.rebuild();
    };
    await setController({ lend: 0.25, borrow: 0, at: 1 });
    await until(() => core(q.name)?.lendingLimit === 2, 'lends a quarter of 8');
    expect((await ok(admin, READ, { id: q.id })).node.governance.limitsInForce).toEqual({
      lend: 0.25,
      borrow: 0,
      source: 'CONTROLLER',
    });
    // Out of bounds (guaranteed never borrows, lends at most all): clamped.
    await setController({ lend: 7, borrow: 3, at: 2 });
    await until(() => core(q.name)?.lendingLimit === null, 'lends all (clamped to 1)');
    expect(core(q.name)?.borrowingLimit).toBe(0);
    expect((await ok(admin, READ, { id: q.id })).node.governance.limitsInForce).toEqual({
      lend: 1,
      borrow: 0,
      source: 'CONTROLLER',
    });
    await setController(null);
    await until(() => core(q.name)?.lendingLimit === 4, 'static base: half of 8');
    // A change of the queue's governance fields drops the controller's setting (the new policy starts from
    // its base).
    await setController({ lend: 0.25, borrow: 0, at: 3 });
    await ok(admin, UPDATE, { in: { id: q.id, workloadType: 'ONLINE_INFERENCE' } });
    expect((await ok(admin, READ, { id: q.id })).node.governance.limitsInForce.source).toBe('STATIC');
  });

  it('queue fields: an unknown policy is BAD_USER_INPUT and changes nothing (audited FAILED); tenant roles may not set them', async () => {
    const audits = async () =>
      (
        await t.app.orm.em
          .fork({ clear: true })
          .find(
            AuditEvent,
            { action: { $in: ['queue.create', 'queue.update'] } },
            { filters: false, orderBy: { id: 'asc' } },
          )
      ).map((a) => `${a.action}:${a.outcome}:${a.errorCode ?? ''}`);
    const aurora = await t.idsOf('aurora-research');
    const before = await audits();
    const counts = await t.rowCounts({ ignoreAudit: true });
    const create = await t.gql(admin, CREATE, {
      in: {
        name: 'gov-bad',
        tenantId: tenants.STANDARD,
        quotas: [{ flavor: 'h100-80g', nominal: 8 }],
        isolationPolicy: 'no-such-policy',
      },
    });
    expect(codesOf(create)).toEqual(['BAD_USER_INPUT']);
    expect(create.body.errors![0]!.message).toMatch(/Unknown isolation policy "no-such-policy"/);
    const update = await t.gql(admin, UPDATE, {
      in: { id: aurora.Queue, isolationPolicy: 'no-such-policy', slaClass: 'BEST_EFFORT' },
    });
    expect(codesOf(update)).toEqual(['BAD_USER_INPUT']);
    const forbidden = await t.gql(t.token('aurora-research', 'TENANT_ADMIN'), UPDATE, {
      in: { id: aurora.Queue, slaClass: 'BEST_EFFORT' },
    });
    expect(codesOf(forbidden)).toEqual(['FORBIDDEN']);
    expect(await t.rowCounts({ ignoreAudit: true })).toEqual(counts);
    expect((await ok(admin, READ, { id: aurora.Queue })).node).toMatchObject({
      slaClass: 'CRITICAL',
      governance: { policy: { name: 'guaranteed' } },
    });
    expect((await audits()).slice(before.length)).toEqual([
      'queue.create:FAILED:BAD_USER_INPUT',
      'queue.update:FAILED:BAD_USER_INPUT',
    ]);
  });

  it("another tenant's queue governance is NOT_FOUND; each tenant sees its own", async () => {
    const aurora = await t.idsOf('aurora-research');
    const borealis = await t.idsOf('borealis-inference');
    for (const bearer of [
      t.token('borealis-inference', 'TENANT_ADMIN'),
      t.token('borealis-inference', 'MEMBER'),
      await t.jwt('bea@borealis.example'),
    ]) {
      const res = await t.gql(bearer, READ, { id: aurora.Queue });
      expect(codesOf(res)).toEqual(['NOT_FOUND']);
      expect(res.body.data?.node ?? null).toBeNull();
      expect(JSON.stringify(res.body)).not.toMatch(/aurora|guaranteed|CRITICAL/i);
      const own = await ok(bearer, `{ queues { name ${GOVERNANCE} } }`);
      expect(own.queues.map((q: any) => [q.name, q.governance.policy.name, q.governance.chosenBy])).toEqual([
        ['borealis-serving', 'elastic', 'RULE'],
      ]);
    }
    for (const role of ['VIEWER', 'AUDITOR', 'MEMBER'] as const) {
      expect(
        (await ok(t.token('aurora-research', role), READ, { id: aurora.Queue })).node.governance.policy.name,
      ).toBe('guaranteed');
    }
    expect(
      (await ok(t.token('borealis-inference', 'MEMBER'), READ, { id: borealis.Queue })).node.governance
        .effective,
    ).toContainEqual({ flavor: 'h100-80g', nominal: 16, lendingLimit: null, borrowingLimit: null });
  });
});
