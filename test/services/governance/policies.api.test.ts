import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { Queue } from '../../../src/persistence/cluster/entities.js';
import { IsolationPolicyRow, IsolationPolicyRule } from '../../../src/persistence/governance/entities.js';
import { describeEachDialect } from '../../helpers/database.js';
import { codesOf, startTestApp, type TestApp } from '../../helpers/harness.js';
import { liveSubscription, wsClient } from '../../helpers/live-subscription.js';

/**
 * The isolation-policy library: who reads and changes it, what each change writes to the
 * audit log, that refused and invalid changes change nothing, and that a change reaches the core's
 * limits of the queues it governs (and their tenants' streams) — a built-in overridden, then reset.
 */
const POLICY = `name description level builtIn overridden lend { min base max } borrow { min base max } minRunBeforeReclaimSeconds reclaimGraceSeconds preemptible idle { utilizationBelow idleForSeconds notRunningForSeconds action }`;
const LIST = `{ isolationPolicies { ${POLICY} } isolationPolicyRules { tier workloadType slaClass policy } }`;
const SET = `mutation($in: SetIsolationPolicyInput!) { setIsolationPolicy(input: $in) { ${POLICY} } }`;
const DELETE = `mutation($n: String!) { deleteIsolationPolicy(name: $n) { name reset } }`;
const RULES = `mutation($r: [IsolationPolicyRuleInput!]!) { setIsolationPolicyRules(rules: $r) { tier workloadType slaClass policy } }`;
const GOVERNANCE = `query($id: ID!) { node(id: $id) { ... on Queue { governance { policy { name } chosenBy rule { slaClass } limitsInForce { lend borrow source } effective { flavor nominal lendingLimit borrowingLimit } } } } }`;

const idle = { utilizationBelow: 0.05, idleForSeconds: 3600, notRunningForSeconds: 1200, action: 'NOTIFY' };
const guaranteedWith = (base: number) => ({
  name: 'guaranteed',
  lend: { min: 0, base, max: 1 },
  borrow: { min: 0, base: 0, max: 0 },
  minRunBeforeReclaimSeconds: 0,
  reclaimGraceSeconds: 120,
  preemptible: 'RECLAIM_ONLY',
  idle,
});
const custom = (name: string, over: Record<string, unknown> = {}) => ({
  name,
  level: 'ELASTIC',
  description: 'Lends a quarter, borrows up to twice its nominal.',
  lend: { min: 0, base: 0.25, max: 1 },
  borrow: { min: 0, base: 1, max: 2 },
  minRunBeforeReclaimSeconds: 600,
  reclaimGraceSeconds: 60,
  preemptible: 'ANY',
  idle,
  ...over,
});

describeEachDialect('isolation-policy library', (dialect) => {
  let t: TestApp;
  let admin: string;
  let ids: Record<string, string>;
  const tenantRoles = () =>
    ['TENANT_ADMIN', 'MEMBER', 'VIEWER', 'AUDITOR']
      .map((role) => t.token('aurora-research', role as never))
      .concat(t.token('borealis-inference', 'TENANT_ADMIN'));

  beforeAll(async () => {
    t = await startTestApp({ dialect });
    admin = t.token(null, 'PLATFORM_ADMIN');
    ids = await t.idsOf('aurora-research');
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  /** The library and every queue's governance columns, as stored. */
  async function stored(): Promise<string> {
    const em = t.app.orm.em.fork({ clear: true });
    const [rows, rules, queues] = await Promise.all([
      em.find(IsolationPolicyRow, {}, { orderBy: { name: 'asc' } }),
      em.find(IsolationPolicyRule, {}, { orderBy: { position: 'asc' } }),
      em.find(Queue, {}, { orderBy: { name: 'asc' }, filters: false }),
    ]);
    return JSON.stringify({
      rows: rows.map((r) => [r.name, r.level, r.description, r.coefficients]),
      rules: rules.map((r) => [r.tier, r.workloadType, r.slaClass, r.policy]),
      queues: queues.map((q) => [q.name, q.workloadType, q.slaClass, q.isolationPolicy, q.controllerSetting]),
    });
  }
  const audits = async (action: string) =>
    (
      await t.app.orm.em
        .fork({ clear: true })
        .find(AuditEvent, { action }, { filters: false, orderBy: { id: 'asc' } })
    ).map((a) => `${a.outcome}${a.errorCode ? `:${a.errorCode}` : ''}${a.tenant ? ':tenant' : ''}`);
  const gpu = (queue: string) =>
    t.app.scheduler
      .queueStatus(queue)
      ?.resources.find((r) => r.flavor === 'h100-80g' && r.resource === 'gpu');
  async function until(check: () => boolean | Promise<boolean>, what: string) {
    const deadline = Date.now() + 30_000;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`not reached: ${what}`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  async function ok(bearer: string, query: string, variables: Record<string, unknown> = {}) {
    const res = await t.gql(bearer, query, variables);
    expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
    return res.body.data as Record<string, any>;
  }
  /** A change that must be refused with `code`: the library and the queues are as before. */
  async function refused(
    bearer: string | null,
    query: string,
    variables: Record<string, unknown>,
    code: string,
  ) {
    const before = await stored();
    const res = await t.gql(bearer, query, variables);
    expect(codesOf(res), JSON.stringify(res.body)).toEqual([code]);
    expect(res.body.data ?? null).toBeNull();
    expect(await stored()).toEqual(before);
    return res;
  }

  it('any signed-in caller reads the library (built-ins first, the demo override of guaranteed, the default rules); it names no tenant', async () => {
    for (const bearer of [admin, ...tenantRoles()]) {
      const data = await ok(bearer, LIST);
      expect(data.isolationPolicies.map((p: any) => [p.name, p.level, p.builtIn, p.overridden])).toEqual([
        ['dedicated', 'DEDICATED', true, false],
        ['guaranteed', 'GUARANTEED', true, true],
        ['elastic', 'ELASTIC', true, false],
        ['best-effort', 'BEST_EFFORT', true, false],
      ]);
      expect(data.isolationPolicies[1].lend).toEqual({ min: 0, base: 1, max: 1 });
      expect(data.isolationPolicies[2]).toMatchObject({
        borrow: null,
        reclaimGraceSeconds: 60,
        preemptible: 'ANY',
        idle: {
          utilizationBelow: 0.1,
          idleForSeconds: 1800,
          notRunningForSeconds: 900,
          action: 'RECLAIM_IF_BORROWING',
        },
      });
      expect(data.isolationPolicyRules).toEqual([
        { tier: null, workloadType: null, slaClass: 'BEST_EFFORT', policy: 'best-effort' },
        { tier: null, workloadType: null, slaClass: 'CRITICAL', policy: 'guaranteed' },
        { tier: null, workloadType: 'ONLINE_INFERENCE', slaClass: null, policy: 'guaranteed' },
        { tier: 'ENTERPRISE', workloadType: 'TRAINING', slaClass: null, policy: 'guaranteed' },
        { tier: null, workloadType: null, slaClass: null, policy: 'elastic' },
      ]);
      const text = JSON.stringify(data).toLowerCase();
      for (const secret of ['aurora', 'borealis', ...Object.values(ids)])
        expect(text.includes(secret.toLowerCase())).toBe(false);
    }
    expect(new Set(codesOf(await t.gql(null, LIST)))).toEqual(new Set(['UNAUTHENTICATED']));
  });

  it('tenant roles may not change the library: FORBIDDEN, nothing changes, each refusal audited as DENIED; anonymous UNAUTHENTICATED', async () => {
    const [before, beforeDelete, beforeRules] = await Promise.all([
      audits('isolationPolicy.set'),
      audits('isolationPolicy.delete'),
      audits('isolationPolicyRules.set'),
    ]);
    for (const bearer of tenantRoles()) {
      await refused(bearer, SET, { in: guaranteedWith(0) }, 'FORBIDDEN');
      await refused(bearer, DELETE, { n: 'guaranteed' }, 'FORBIDDEN');
      await refused(bearer, RULES, { r: [{ policy: 'dedicated' }] }, 'FORBIDDEN');
    }
    for (const [query, variables] of [
      [SET, { in: guaranteedWith(0) }],
      [DELETE, { n: 'guaranteed' }],
      [RULES, { r: [] }],
    ] as const)
      await refused(null, query, variables, 'UNAUTHENTICATED');
    // The platform admin reads them; none is filed under a tenant (the library is platform data).
    const denied = Array(5).fill('DENIED:FORBIDDEN');
    expect(await audits('isolationPolicy.set')).toEqual([...before, ...denied]);
    expect(await audits('isolationPolicy.delete')).toEqual([...beforeDelete, ...denied]);
    expect(await audits('isolationPolicyRules.set')).toEqual([...beforeRules, ...denied]);
  });

  it('invalid policies and rules: BAD_USER_INPUT with the problem, nothing changes, audited as FAILED', async () => {
    const before = (await audits('isolationPolicy.set')).length;
    const cases: [Record<string, unknown>, RegExp][] = [
      [custom('lopsided', { lend: { min: 0.5, base: 0.25, max: 1 } }), /min ≤ base ≤ max/],
      [custom('too-much', { lend: { min: 0, base: 1, max: 1.5 } }), /lend must be within 0\.\.1/],
      [custom('Bad Name'), /name: lower-case/],
      [custom('no-level', { level: null }), /needs a level/],
      [custom('guaranteed-borrower', { level: 'GUARANTEED' }), /never borrows/],
      [custom('negative', { reclaimGraceSeconds: -1 }), /reclaimGraceMs: must not be negative/],
      [
        custom('idle-ratio', { idle: { ...idle, utilizationBelow: 2 } }),
        /utilizationBelow must be within 0\.\.1/,
      ],
      [{ ...guaranteedWith(0.5), level: 'ELASTIC' }, /keeps its level GUARANTEED/],
      [{ ...guaranteedWith(0.5), description: 'x'.repeat(401) }, /at most 400 characters/],
    ];
    for (const [input, message] of cases)
      expect((await refused(admin, SET, { in: input }, 'BAD_USER_INPUT')).body.errors![0]!.message).toMatch(
        message,
      );
    expect(
      (
        await refused(
          admin,
          RULES,
          { r: [{ slaClass: 'CRITICAL', policy: 'no-such-policy' }] },
          'BAD_USER_INPUT',
        )
      ).body.errors![0]!.message,
    ).toMatch(/Rule 1: unknown isolation policy "no-such-policy"/);
    await refused(admin, RULES, { r: Array(101).fill({ policy: 'elastic' }) }, 'BAD_USER_INPUT');
    await refused(admin, DELETE, { n: 'no-such-policy' }, 'NOT_FOUND');
    expect((await audits('isolationPolicy.set')).slice(before)).toEqual(
      Array(cases.length).fill('FAILED:BAD_USER_INPUT'),
    );
  });

  it("a built-in overridden then reset: the governed queue's core limits follow, its tenant hears QUOTA_CHANGED, the other tenant nothing", async () => {
    const auroraQueue = ids.Queue!;
    const borealis = await t.idsOf('borealis-inference');
    const query = `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind queueId at } }`;
    const auroraSide = liveSubscription(
      wsClient(t.url, t.token('aurora-research', 'TENANT_ADMIN')),
      query,
      { t: ids.Tenant },
      (d) => d.tenantEvents,
    );
    const borealisSide = liveSubscription(
      wsClient(t.url, t.token('borealis-inference', 'TENANT_ADMIN')),
      query,
      { t: borealis.Tenant },
      (d) => d.tenantEvents,
    );
    try {
      // Both streams live before the first change (a loaded machine may take a while): primed by hand, then
      // forgotten.
      const raw = (id: string) => Buffer.from(id, 'base64').toString().split(':')[1]!;
      await until(() => {
        t.app.events.publish('tenant-event', raw(ids.Tenant!), {
          kind: 'QUOTA_CHANGED',
          queueId: raw(auroraQueue),
          at: 0,
        });
        t.app.events.publish('tenant-event', raw(borealis.Tenant!), {
          kind: 'QUOTA_CHANGED',
          queueId: raw(borealis.Queue!),
          at: 0,
        });
        return auroraSide.values.length > 0 && borealisSide.values.length > 0;
      }, 'both tenantEvents subscriptions live');
      await new Promise((r) => setTimeout(r, 200));
      auroraSide.values.length = 0;
      borealisSide.values.length = 0;
      // The demo lends all of aurora's idle share (its override of guaranteed): no lending limit.
      expect(gpu('aurora-training')).toMatchObject({ nominal: 16, borrowingLimit: 0 });
      expect(gpu('aurora-training')!.lendingLimit).toBeUndefined();
      const before = (await audits('isolationPolicy.set')).length;
      const set = await ok(admin, SET, { in: guaranteedWith(0.25) });
      expect(set.setIsolationPolicy).toMatchObject({
        name: 'guaranteed',
        level: 'GUARANTEED',
        builtIn: true,
        overridden: true,
        lend: { min: 0, base: 0.25, max: 1 },
      });
      await until(() => gpu('aurora-training')?.lendingLimit === 4, 'aurora lends a quarter of 16');
      // Borealis is elastic: untouched.
      expect(gpu('borealis-serving')!.lendingLimit).toBeUndefined();
      const view = await ok(t.token('aurora-research', 'VIEWER'), GOVERNANCE, { id: auroraQueue });
      view.node.governance.effective.sort((a: any, b: any) => b.flavor.localeCompare(a.flavor));
      expect(view.node.governance).toEqual({
        policy: { name: 'guaranteed' },
        chosenBy: 'RULE',
        rule: { slaClass: 'CRITICAL' },
        limitsInForce: { lend: 0.25, borrow: 0, source: 'STATIC' },
        effective: [
          { flavor: 'h100-80g', nominal: 16, lendingLimit: 4, borrowingLimit: 0 },
          { flavor: 'a100-1g.10gb', nominal: 56, lendingLimit: 14, borrowingLimit: 0 },
        ],
      });
      expect((await audits('isolationPolicy.set')).slice(before)).toEqual(['SUCCESS']);

      // Reset: the built-in's own coefficients (half lent).
      expect((await ok(admin, DELETE, { n: 'guaranteed' })).deleteIsolationPolicy).toEqual({
        name: 'guaranteed',
        reset: true,
      });
      await until(() => gpu('aurora-training')?.lendingLimit === 8, 'aurora lends half of 16');
      const library = await ok(admin, LIST);
      expect(library.isolationPolicies.find((p: any) => p.name === 'guaranteed')).toMatchObject({
        overridden: false,
        lend: { min: 0, base: 0.5, max: 1 },
      });
      expect((await audits('isolationPolicy.delete')).at(-1)).toBe('SUCCESS');
      // A second reset changes no queue: no event (but still an audited call).
      await ok(admin, DELETE, { n: 'guaranteed' });

      // The priming events (at 0) that were still on their way are not changes.
      const changed = (values: any[]) =>
        values.filter(
          (e) =>
            e.kind === 'QUOTA_CHANGED' && e.queueId === auroraQueue && e.at !== new Date(0).toISOString(),
        ).length;
      await auroraSide.until((values) => changed(values) >= 2);
      await new Promise((r) => setTimeout(r, 300));
      expect(changed(auroraSide.values)).toBe(2);
      expect(
        borealisSide.values.filter(
          (e: any) => e.kind === 'QUOTA_CHANGED' && e.at !== new Date(0).toISOString(),
        ),
      ).toEqual([]);
      expect([...auroraSide.errors, ...borealisSide.errors]).toEqual([]);
    } finally {
      auroraSide.dispose();
      borealisSide.dispose();
    }
  });

  it('a policy platform admins add: named by a queue or a rule it cannot be deleted (CONFLICT); unused, it goes', async () => {
    const added = await ok(admin, SET, { in: custom('quarter-lender') });
    expect(added.setIsolationPolicy).toMatchObject({
      name: 'quarter-lender',
      builtIn: false,
      overridden: false,
      minRunBeforeReclaimSeconds: 600,
      borrow: { min: 0, base: 1, max: 2 },
    });
    // Changed in place under the same name.
    expect(
      (
        await ok(admin, SET, {
          in: custom('quarter-lender', { description: 'Changed.', lend: { min: 0, base: 0.5, max: 1 } }),
        })
      ).setIsolationPolicy,
    ).toMatchObject({ description: 'Changed.', lend: { base: 0.5 } });
    expect((await ok(admin, LIST)).isolationPolicies.map((p: any) => p.name)).toEqual([
      'dedicated',
      'guaranteed',
      'elastic',
      'best-effort',
      'quarter-lender',
    ]);

    // A rule names it: CONFLICT.
    const rules = await ok(admin, RULES, {
      r: [
        { tier: 'PREMIUM', workloadType: 'TRAINING', policy: 'quarter-lender' },
        { slaClass: 'CRITICAL', policy: 'guaranteed' },
        { policy: 'elastic' },
      ],
    });
    expect(rules.setIsolationPolicyRules).toHaveLength(3);
    expect(
      (await refused(admin, DELETE, { n: 'quarter-lender' }, 'CONFLICT')).body.errors![0]!.message,
    ).toMatch(/0 queue\(s\), 1 rule\(s\)/);
    // An empty list restores the default rules.
    expect((await ok(admin, RULES, { r: [] })).setIsolationPolicyRules).toHaveLength(5);

    // A queue names it: CONFLICT.
    await ok(admin, `mutation($in: UpdateQueueInput!) { updateQueue(input: $in) { id } }`, {
      in: { id: ids.Queue, isolationPolicy: 'quarter-lender' },
    });
    await until(
      () =>
        gpu('aurora-training')?.lendingLimit === 8 &&
        t.app.scheduler.queueStatus('aurora-training')?.isolation === 'ELASTIC',
      'aurora under quarter-lender (elastic, half lent)',
    );
    expect(
      (await refused(admin, DELETE, { n: 'quarter-lender' }, 'CONFLICT')).body.errors![0]!.message,
    ).toMatch(/1 queue\(s\), 0 rule\(s\)/);
    // Back to the rules (null clears the name), then the policy may go.
    await ok(admin, `mutation($in: UpdateQueueInput!) { updateQueue(input: $in) { id } }`, {
      in: { id: ids.Queue, isolationPolicy: null },
    });
    expect((await ok(admin, DELETE, { n: 'quarter-lender' })).deleteIsolationPolicy).toEqual({
      name: 'quarter-lender',
      reset: false,
    });
    await refused(admin, DELETE, { n: 'quarter-lender' }, 'NOT_FOUND');
    await until(
      () => t.app.scheduler.queueStatus('aurora-training')?.isolation === 'GUARANTEED',
      'aurora guaranteed again',
    );

    expect(await audits('isolationPolicyRules.set')).toEqual([
      ...Array(5).fill('DENIED:FORBIDDEN'),
      'FAILED:BAD_USER_INPUT',
      'FAILED:BAD_USER_INPUT',
      'SUCCESS',
      'SUCCESS',
    ]);
    expect((await audits('isolationPolicy.delete')).filter((a) => a !== 'DENIED:FORBIDDEN')).toEqual([
      'DENIED:NOT_FOUND',
      'SUCCESS',
      'SUCCESS',
      'FAILED:CONFLICT',
      'FAILED:CONFLICT',
      'SUCCESS',
      'DENIED:NOT_FOUND',
    ]);
  });
});
