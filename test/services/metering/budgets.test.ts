// Budgets: set and removed by tenant admins (audited, before and after), read by those
// who may see money, alerts once per budget, month and threshold (an alert row, an audit entry and
// an outbox row that becomes a BUDGET_ALERT tenant event with the amounts only for money readers),
// the month-end forecast from the burn rate, and admission holds from spent hard budgets.

import type { EntityManager } from '@mikro-orm/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { Budget, BudgetAlert, UsageHourly } from '../../../src/persistence/metering/entities.js';
import { OutboxEntry } from '../../../src/persistence/scheduling/entities.js';
import { Project, Tenant } from '../../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { budgetStatus, computeHolds, evaluateBudgets } from '../../../src/services/metering/budgets.js';
import { OutboxDispatcher } from '../../../src/services/scheduling/outbox.js';
import { describeEachDialect } from '../../helpers/database.js';
import { codesOf, startTestApp, type TestApp } from '../../helpers/harness.js';
import { liveSubscription, wsClient } from '../../helpers/live-subscription.js';

const SET = `mutation($in: SetBudgetInput!) { setBudget(input: $in) { id scope project { id } monthlyAmount currency thresholds hard exemptPriorityClasses period spent percentUsed forecast exhausted alertsFired } }`;
const REMOVE = `mutation($id: ID!) { removeBudget(id: $id) { removedBudgetId } }`;
const BUDGETS = `query($slug: String!) { tenant(slug: $slug) { budgets { id scope monthlyAmount spent } } }`;
const enc = (type: string, id: string) => Buffer.from(`${type}:${id}`).toString('base64');
const H = 3_600_000;
const at = (y: number, m: number, d: number, h = 0) => Date.UTC(y, m - 1, d, h);

describeEachDialect('budgets', (dialect) => {
  let t: TestApp;
  const ids = {} as Record<'aurora' | 'borealis' | 'auroraProject' | 'borealisProject', string>;
  const admin = () => t.token('aurora-research', 'TENANT_ADMIN');
  const em = () => systemEntityManager(t.app.orm);

  beforeAll(async () => {
    t = await startTestApp({ dialect });
    for (const slug of ['aurora-research', 'borealis-inference'] as const) {
      const tenant = await em().findOneOrFail(Tenant, { slug });
      const project = await em().findOneOrFail(Project, { tenant: tenant.id });
      const key = slug === 'aurora-research' ? 'aurora' : 'borealis';
      ids[key] = tenant.id;
      ids[`${key}Project`] = project.id;
    }
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  /** Spend rows in the hourly rollup (each its own bucket), as the ledger writer leaves them. */
  async function spend(
    tenantId: string,
    projectId: string,
    rows: [hourMs: number, cost: number][],
  ): Promise<void> {
    const e = em();
    for (const [hour, cost] of rows) {
      e.create(UsageHourly, {
        hour: new Date(hour),
        tenant: tenantId,
        projectId,
        queueId: 'q',
        userId: '',
        priorityClass: 'training',
        flavor: 'h100-80g',
        gpuSeconds: 3600,
        usedGpuSeconds: 0,
        measuredGpuSeconds: 0,
        cpuSeconds: 0,
        memoryGibSeconds: 0,
        cost,
        jobs: 0,
      });
    }
    await e.flush();
  }
  async function budget(
    tenantId: string,
    projectId: string | null,
    monthlyAmount: number,
    extra: Partial<Pick<Budget, 'hard' | 'thresholds' | 'exemptPriorityClasses'>> = {},
  ): Promise<Budget> {
    const e = em();
    const row = e.create(Budget, {
      tenant: tenantId,
      project: projectId,
      scopeKey: projectId ?? 'tenant',
      monthlyAmount,
      thresholds: [50, 80, 100],
      hard: false,
      exemptPriorityClasses: ['inference-critical'],
      ...extra,
    });
    await e.flush();
    return row;
  }
  const clearBudgets = () => em().nativeDelete(Budget, {});
  const evaluate = (tenantIds: string[], nowMs: number) =>
    em().transactional((tx: EntityManager) => evaluateBudgets(tx, tenantIds, nowMs, 'EUR'));

  it('a tenant admin sets, changes and removes budgets; each change is audited with the amounts before and after', async () => {
    await clearBudgets();
    const created = await t.gql(admin(), SET, {
      in: { tenantId: enc('Tenant', ids.aurora), monthlyAmount: 1000 },
    });
    expect(created.body.errors, JSON.stringify(created.body)).toBeUndefined();
    const b = created.body.data!.setBudget;
    expect(b).toMatchObject({
      scope: 'TENANT',
      project: null,
      monthlyAmount: 1000,
      currency: 'USD',
      thresholds: [50, 80, 100],
      hard: false,
      exemptPriorityClasses: ['inference-critical'],
      spent: 0,
      exhausted: false,
      alertsFired: [],
    });
    // A second call on the same scope changes it; fields left out stay.
    const changed = await t.gql(admin(), SET, {
      in: { tenantId: enc('Tenant', ids.aurora), monthlyAmount: 2500, hard: true, thresholds: [90, 25] },
    });
    expect(changed.body.data!.setBudget).toMatchObject({
      id: b.id,
      monthlyAmount: 2500,
      hard: true,
      thresholds: [25, 90],
      exemptPriorityClasses: ['inference-critical'],
    });
    const project = await t.gql(admin(), SET, {
      in: {
        tenantId: enc('Tenant', ids.aurora),
        projectId: enc('Project', ids.auroraProject),
        monthlyAmount: 300,
        exemptPriorityClasses: ['inference-critical', 'production'],
      },
    });
    expect(project.body.data!.setBudget).toMatchObject({
      scope: 'PROJECT',
      project: { id: enc('Project', ids.auroraProject) },
      monthlyAmount: 300,
    });
    const audits = await em().find(
      AuditEvent,
      { tenant: ids.aurora, action: 'budget.set' },
      { orderBy: { id: 'asc' } },
    );
    expect(
      audits.map((a) => [
        a.outcome,
        (a.input.before as any)?.monthlyAmount ?? null,
        (a.input.after as any).monthlyAmount,
      ]),
    ).toEqual([
      ['SUCCESS', null, 1000],
      ['SUCCESS', 1000, 2500],
      ['SUCCESS', null, 300],
    ]);
    expect(audits[1]!.actor?.id).toBeDefined();
    const listed = await t.gql(admin(), BUDGETS, { slug: 'aurora-research' });
    expect(listed.body.data!.tenant.budgets.map((x: any) => [x.scope, x.monthlyAmount])).toEqual([
      ['TENANT', 2500],
      ['PROJECT', 300],
    ]);
    const projectRead = await t.gql(
      admin(),
      `query($id: ID!) { node(id: $id) { ... on Project { budget { monthlyAmount } } } }`,
      { id: enc('Project', ids.auroraProject) },
    );
    expect(projectRead.body.data!.node.budget).toEqual({ monthlyAmount: 300 });

    const removed = await t.gql(admin(), REMOVE, { id: b.id });
    expect(removed.body.data!.removeBudget).toEqual({ removedBudgetId: b.id });
    const removal = await em().findOneOrFail(AuditEvent, { tenant: ids.aurora, action: 'budget.remove' });
    expect(removal.outcome).toBe('SUCCESS');
    expect(removal.input.before).toMatchObject({ monthlyAmount: 2500, hard: true });
    expect(await em().count(Budget, { tenant: ids.aurora })).toBe(1);
  });

  it('members and viewers may not set or remove (FORBIDDEN) nor read them; auditors read and may not set', async () => {
    await clearBudgets();
    const row = await budget(ids.aurora, null, 500);
    const input = { in: { tenantId: enc('Tenant', ids.aurora), monthlyAmount: 10 } };
    for (const role of ['MEMBER', 'VIEWER', 'AUDITOR'] as const) {
      const token = t.token('aurora-research', role);
      expect(codesOf(await t.gql(token, SET, input)), role).toEqual(['FORBIDDEN']);
      expect(codesOf(await t.gql(token, REMOVE, { id: enc('Budget', row.id) })), role).toEqual(['FORBIDDEN']);
      const read = await t.gql(token, BUDGETS, { slug: 'aurora-research' });
      if (role === 'AUDITOR')
        expect(read.body.data!.tenant.budgets).toEqual([
          { id: enc('Budget', row.id), scope: 'TENANT', monthlyAmount: 500, spent: 0 },
        ]);
      else {
        expect(codesOf(read), role).toEqual(['FORBIDDEN']);
        expect(read.body.data!.tenant.budgets).toBeNull();
      }
    }
    // Platform admins see money in every tenant without a grant (they change nothing there).
    const platform = await t.gql(t.token(null, 'PLATFORM_ADMIN'), BUDGETS, { slug: 'aurora-research' });
    expect(platform.body.data!.tenant.budgets).toEqual([
      { id: enc('Budget', row.id), scope: 'TENANT', monthlyAmount: 500, spent: 0 },
    ]);
    expect(codesOf(await t.gql(t.token(null, 'PLATFORM_ADMIN'), SET, input))).toEqual(['FORBIDDEN']);
    const memberProject = await t.gql(
      t.token('aurora-research', 'MEMBER'),
      `query($id: ID!) { node(id: $id) { ... on Project { slug budget { id } } } }`,
      { id: enc('Project', ids.auroraProject) },
    );
    expect(codesOf(memberProject)).toEqual(['FORBIDDEN']);
    expect(memberProject.body.data!.node).toMatchObject({ budget: null });
    expect((await em().findOneOrFail(Budget, { id: row.id })).monthlyAmount).toBe(500);
    const refused = await em().find(AuditEvent, {
      tenant: ids.aurora,
      action: { $in: ['budget.set', 'budget.remove'] },
      outcome: 'DENIED',
    });
    // Three roles × set and remove, and the platform admin's set.
    expect(refused.length).toBe(7);
  });

  it("another tenant's ids answer NOT_FOUND exactly as unknown ones, and change nothing", async () => {
    await clearBudgets();
    const row = await budget(ids.aurora, ids.auroraProject, 500);
    const bea = t.token('borealis-inference', 'TENANT_ADMIN');
    const ghost = '0190f3c4-0000-7000-8000-000000000000';
    const pairs: [string, Record<string, unknown>, Record<string, unknown>][] = [
      [REMOVE, { id: enc('Budget', row.id) }, { id: enc('Budget', ghost) }],
      [
        SET,
        { in: { tenantId: enc('Tenant', ids.aurora), monthlyAmount: 1 } },
        { in: { tenantId: enc('Tenant', ghost), monthlyAmount: 1 } },
      ],
      [
        SET,
        {
          in: {
            tenantId: enc('Tenant', ids.borealis),
            projectId: enc('Project', ids.auroraProject),
            monthlyAmount: 1,
          },
        },
        { in: { tenantId: enc('Tenant', ids.borealis), projectId: enc('Project', ghost), monthlyAmount: 1 } },
      ],
    ];
    for (const [query, foreign, unknown] of pairs) {
      const a = await t.gql(bea, query, foreign);
      const b = await t.gql(bea, query, unknown);
      expect(codesOf(a)).toEqual(['NOT_FOUND']);
      expect(a.body).toEqual(b.body);
    }
    expect(await em().count(Budget, {})).toBe(1);
    expect((await em().findOneOrFail(Budget, { id: row.id })).monthlyAmount).toBe(500);
  });

  it('refuses bad input with BAD_USER_INPUT and writes nothing', async () => {
    await clearBudgets();
    const bad = [
      { monthlyAmount: 0 },
      { monthlyAmount: -5 },
      { monthlyAmount: 10, thresholds: [50, 50] },
      { monthlyAmount: 10, thresholds: [0] },
      { monthlyAmount: 10, thresholds: [1001] },
      { monthlyAmount: 10, exemptPriorityClasses: ['no-such-class'] },
    ];
    for (const fields of bad) {
      const res = await t.gql(admin(), SET, { in: { tenantId: enc('Tenant', ids.aurora), ...fields } });
      expect(codesOf(res), JSON.stringify(fields)).toEqual(['BAD_USER_INPUT']);
    }
    expect(await em().count(Budget, {})).toBe(0);
  });

  it('a threshold fires once per period (alert, audit entry, outbox row), again next month; the tenant event hides amounts from non-money readers', async () => {
    await clearBudgets();
    const tenantBudget = await budget(ids.aurora, null, 100);
    const projectBudget = await budget(ids.aurora, ids.auroraProject, 1000);
    await spend(ids.aurora, ids.auroraProject, [
      [at(2031, 3, 2), 30],
      [at(2031, 3, 3), 25],
    ]);
    const march = at(2031, 3, 10);
    const first = await evaluate([ids.aurora], march);
    expect(first.map((a) => [a.budgetId, a.threshold, a.spent, a.limit, a.period, a.currency])).toEqual([
      [tenantBudget.id, 50, 55, 100, '2031-03', 'EUR'],
    ]);
    expect(await evaluate([ids.aurora, ids.aurora], march + H)).toEqual([]);
    const alerts = () =>
      em().find(
        BudgetAlert,
        { budget: { $in: [tenantBudget.id, projectBudget.id] } },
        { orderBy: { period: 'asc', threshold: 'asc' } },
      );
    expect((await alerts()).map((a) => [a.period, a.threshold, a.spent, a.limitAmount])).toEqual([
      ['2031-03', 50, 55, 100],
    ]);
    const audits = async () =>
      (await em().find(AuditEvent, { tenant: ids.aurora, action: 'budget.alert' })).filter((a) =>
        String(a.input.period).startsWith('2031'),
      );
    const outbox = async () =>
      (await em().find(OutboxEntry, { kind: 'tenant.budget-alert' })).filter((o) =>
        String(o.payload.period).startsWith('2031'),
      );
    expect(
      (await audits()).map((a) => [
        a.actor,
        a.targetId,
        a.requestId,
        a.input.threshold,
        a.input.spent,
        a.input.limit,
      ]),
    ).toEqual([[null, tenantBudget.id, 'metering', 50, 55, 100]]);
    expect((await outbox()).map((o) => o.payload)).toEqual([
      {
        tenantId: ids.aurora,
        budgetId: tenantBudget.id,
        projectId: null,
        threshold: 50,
        spent: 55,
        limit: 100,
        currency: 'EUR',
        period: '2031-03',
        at: march,
        auditEventId: (await audits())[0]!.id,
      },
    ]);
    // Two thresholds crossed at once fire both; 100 % of 100 is reached exactly.
    await spend(ids.aurora, '', [[at(2031, 3, 11), 45]]);
    expect((await evaluate([ids.aurora], at(2031, 3, 12))).map((a) => a.threshold)).toEqual([80, 100]);
    expect(await evaluate([ids.aurora], at(2031, 3, 20))).toEqual([]);
    // A new month starts from nothing spent.
    expect(await evaluate([ids.aurora], at(2031, 4, 1, 1))).toEqual([]);
    await spend(ids.aurora, ids.auroraProject, [[at(2031, 4, 2), 60]]);
    expect((await evaluate([ids.aurora], at(2031, 4, 3))).map((a) => [a.period, a.threshold])).toEqual([
      ['2031-04', 50],
    ]);
    expect((await alerts()).map((a) => `${a.period}/${a.threshold}`)).toEqual([
      '2031-03/50',
      '2031-03/80',
      '2031-03/100',
      '2031-04/50',
    ]);
    expect(await audits()).toHaveLength(4);
    expect(await outbox()).toHaveLength(4);

    // The outbox row becomes a BUDGET_ALERT tenant event: amounts for the admin, null for a member.
    const query = `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind budgetId projectId threshold spent limit currency period queueId } }`;
    const adminSide = liveSubscription(
      wsClient(t.url, admin()),
      query,
      { t: enc('Tenant', ids.aurora) },
      (d) => d.tenantEvents,
    );
    const memberSide = liveSubscription(
      wsClient(t.url, t.token('aurora-research', 'MEMBER')),
      query,
      { t: enc('Tenant', ids.aurora) },
      (d) => d.tenantEvents,
    );
    await new Promise((r) => setTimeout(r, 300));
    await spend(ids.aurora, ids.auroraProject, [[at(2031, 4, 4), 30]]);
    expect((await evaluate([ids.aurora], at(2031, 4, 5))).map((a) => a.threshold)).toEqual([80]);
    const dispatcher = new OutboxDispatcher({
      orm: t.app.orm,
      backend: t.app.backend,
      events: t.app.events,
      now: () => Date.now(),
      logError: (e) => {
        throw e;
      },
      utilization: new Map(),
    });
    await dispatcher.dispatch();
    const isAlert = (e: any) => e.kind === 'BUDGET_ALERT' && e.period === '2031-04' && e.threshold === 80;
    const [heardAdmin, heardMember] = await Promise.all([
      adminSide.until((v) => v.some(isAlert)),
      memberSide.until((v) => v.some(isAlert)),
    ]);
    const common = {
      kind: 'BUDGET_ALERT',
      budgetId: enc('Budget', tenantBudget.id),
      projectId: null,
      threshold: 80,
      currency: 'EUR',
      period: '2031-04',
      queueId: null,
    };
    expect(heardAdmin.find(isAlert)).toEqual({ ...common, spent: 90, limit: 100 });
    expect(heardMember.find(isAlert)).toEqual({ ...common, spent: null, limit: null });
    adminSide.dispose();
    memberSide.dispose();
  });

  // PostgreSQL only: SQLite has one writer at a time, so two evaluations cannot overlap there.
  if (dialect === 'postgresql')
    it('two concurrent evaluations fire a threshold once; the later one skips it without failing its transaction', async () => {
      await clearBudgets();
      const row = await budget(ids.borealis, null, 10, { thresholds: [100] });
      await spend(ids.borealis, '', [[at(2034, 1, 2), 10]]);
      const now = at(2034, 1, 3);
      let release!: () => void;
      const gate = new Promise<void>((r) => (release = r));
      let firstWrote = false;
      // The first holds its transaction open after writing; the second reads before that commits.
      const first = em().transactional(async (tx: EntityManager) => {
        const fired = await evaluateBudgets(tx, [ids.borealis], now, 'EUR');
        firstWrote = true;
        await gate;
        return fired;
      });
      while (!firstWrote) await new Promise((r) => setTimeout(r, 10));
      const second = evaluate([ids.borealis], now);
      await new Promise((r) => setTimeout(r, 300));
      release();
      expect((await first).map((a) => a.threshold)).toEqual([100]);
      expect(await second).toEqual([]);
      expect(await em().count(BudgetAlert, { budget: row.id })).toBe(1);
    });

  it('status: month-to-date spend, percent, and the forecast from the last 7 days (or the month so far)', async () => {
    await clearBudgets();
    const tenantBudget = await budget(ids.borealis, null, 200);
    const projectBudget = await budget(ids.borealis, ids.borealisProject, 100);
    await spend(ids.borealis, ids.borealisProject, [
      [at(2032, 2, 28, 23), 500], // last month
      [at(2032, 3, 2), 70], // this month, before the burn window
      [at(2032, 3, 10, 5), 14], // inside the last 7 days
      [at(2032, 3, 20), 1000], // after "now": not spent yet
    ]);
    await spend(ids.borealis, '', [[at(2032, 3, 12), 6]]);
    const now = at(2032, 3, 15, 12);
    const s = await budgetStatus(em(), projectBudget, now);
    // 84 spent; 14 in the last 7 days = 2 a day; 16.5 days left: 84 + 33.
    expect(s).toMatchObject({
      period: '2032-03',
      spent: 84,
      percentUsed: 84,
      exhausted: false,
      alertsFired: [],
    });
    expect(s.forecast).toBeCloseTo(117, 9);
    const whole = await budgetStatus(em(), tenantBudget, now);
    // Tenant: 90 spent, 20 in the window (14 + 6) over 7 days, 16.5 days left.
    expect(whole.spent).toBe(90);
    expect(whole.forecast).toBeCloseTo(90 + (20 / 7) * 16.5, 9);
    // Two days into the month the window is those two days: 70 / 2 days × 29 days left.
    const early = await budgetStatus(em(), projectBudget, at(2032, 3, 3));
    expect(early).toMatchObject({ spent: 70, exhausted: false });
    expect(early.forecast).toBeCloseTo(70 + 35 * 29, 9);
    expect((await budgetStatus(em(), projectBudget, at(2032, 3, 1))).forecast).toBe(0);
    expect((await budgetStatus(em(), projectBudget, at(2032, 3, 21))).exhausted).toBe(true);
  });

  it('holds come from spent hard budgets only: tenant and project scope, with exempt classes and the numbers', async () => {
    await clearBudgets();
    await budget(ids.borealis, null, 50, { hard: true });
    await budget(ids.borealis, ids.borealisProject, 1000, { hard: true });
    await budget(ids.aurora, null, 10);
    await budget(ids.aurora, ids.auroraProject, 20, {
      hard: true,
      exemptPriorityClasses: ['inference-critical', 'production'],
    });
    await spend(ids.borealis, ids.borealisProject, [[at(2033, 5, 2), 60]]);
    await spend(ids.aurora, ids.auroraProject, [[at(2033, 5, 3), 20]]);
    await spend(ids.aurora, '', [[at(2033, 5, 3), 15]]);
    const holds = await computeHolds(em(), at(2033, 5, 10), 'EUR');
    const sorted = [...holds].sort((a, b) => a.scope.localeCompare(b.scope));
    expect(sorted).toEqual([
      {
        scope: 'project',
        id: ids.auroraProject,
        exemptPriorityClasses: ['inference-critical', 'production'],
        budget: { spent: 20, limit: 20, currency: 'EUR', period: '2033-05' },
      },
      {
        scope: 'tenant',
        id: ids.borealis,
        exemptPriorityClasses: ['inference-critical'],
        budget: { spent: 60, limit: 50, currency: 'EUR', period: '2033-05' },
      },
    ]);
    // Next month nothing is spent yet: no holds; before the spend, none either.
    expect(await computeHolds(em(), at(2033, 6, 1), 'EUR')).toEqual([]);
    expect(await computeHolds(em(), at(2033, 5, 1), 'EUR')).toEqual([]);
  });
});
