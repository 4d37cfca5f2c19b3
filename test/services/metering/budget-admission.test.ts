import { type Client, createClient } from 'graphql-ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { BudgetAlert } from '../../../src/persistence/metering/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../../helpers/database.js';
import { startTestApp, type TestApp } from '../../helpers/harness.js';

/**
 * Budgets close the loop on admission: a hard budget that the ledger shows spent makes new
 * jobs of non-exempt classes wait with BudgetExhausted and its numbers, an exempt class still
 * runs, thresholds alert once per period over tenantEvents, and raising the budget lets the
 * waiting jobs run.
 */

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const SET_BUDGET = `mutation($in: SetBudgetInput!) { setBudget(input: $in) { id monthlyAmount hard exhausted spent alertsFired } }`;
const JOB = `query($id: ID!) { node(id: $id) { ... on Job { state pendingReason { code message budgetSpent budgetLimit budgetCurrency budgetPeriod budgetScope } } } }`;
const HOUR = 3_600_000;

describeEachDialect('a hard budget gates admission', (dialect) => {
  let t: TestApp;
  let borealis: Record<string, string>;
  const clients: Client[] = [];

  beforeAll(async () => {
    t = await startTestApp({ dialect });
    borealis = await t.idsOf('borealis-inference');
  });
  afterAll(async () => {
    for (const c of clients) await c.dispose();
    await t?.close();
  });

  async function until<T>(
    what: string,
    check: () => Promise<T | null | false | undefined>,
    timeoutMs = 10_000,
  ): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await check();
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`${what}: not reached in time`);
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  const stateOf = async (token: string, id: string) => (await t.gql(token, JOB, { id })).body.data!.node;

  it('blocks non-exempt jobs once spent, lets the exempt class run, alerts once, and lifts when raised', async () => {
    const admin = t.token('borealis-inference', 'TENANT_ADMIN');
    const member = t.token('borealis-inference', 'MEMBER');
    const alerts: any[] = [];
    const client = createClient({
      url: t.url.replace('http', 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${admin}` },
      retryAttempts: 0,
    });
    clients.push(client);
    client.subscribe(
      {
        query: `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind threshold spent limit currency period } }`,
        variables: { t: borealis.Tenant },
      },
      {
        next: (m: any) => m.data?.tenantEvents?.kind === 'BUDGET_ALERT' && alerts.push(m.data.tenantEvents),
        error: () => undefined,
        complete: () => undefined,
      },
    );

    const set = await t.gql(admin, SET_BUDGET, {
      in: {
        tenantId: borealis.Tenant,
        monthlyAmount: 100,
        hard: true,
        thresholds: [50, 100],
        exemptPriorityClasses: ['inference-critical'],
      },
    });
    expect(set.body.errors, JSON.stringify(set.body.errors)).toBeUndefined();
    const budgetId = Buffer.from(set.body.data!.setBudget.id, 'base64').toString().split(':')[1]!;

    const first = await t.gql(member, SUBMIT, {
      in: {
        queueId: borealis.Queue,
        name: 'spender',
        priorityClass: 'experiment',
        podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 5e6,
      },
    });
    expect(first.body.errors).toBeUndefined();
    const spender = first.body.data!.submitJob.id;
    await until('the spender runs', async () => (await stateOf(member, spender)).state === 'RUNNING');

    // One test-clock hour is 1,000 declared hours at the test time scale: far beyond 100 USD.
    t.now.value += HOUR;
    await t.app.scheduler.checkpointUsage();
    const spent = await until('the budget shows exhausted', async () => {
      const b = (
        await t.gql(
          admin,
          `query($t: ID!) { node(id: $t) { ... on Tenant { budgets { exhausted spent alertsFired } } } }`,
          { t: borealis.Tenant },
        )
      ).body.data!.node.budgets[0];
      return b?.exhausted ? b : null;
    });
    expect(spent.alertsFired).toEqual([50, 100]);

    const blocked = (
      await t.gql(member, SUBMIT, {
        in: {
          queueId: borealis.Queue,
          name: 'blocked',
          priorityClass: 'experiment',
          podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
          expectedDurationSeconds: 100,
        },
      })
    ).body.data!.submitJob.id;
    const exempt = (
      await t.gql(member, SUBMIT, {
        in: {
          queueId: borealis.Queue,
          name: 'serving',
          priorityClass: 'inference-critical',
          podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
          expectedDurationSeconds: 5e6,
        },
      })
    ).body.data!.submitJob.id;
    await until('the exempt job runs', async () => (await stateOf(member, exempt)).state === 'RUNNING');
    const waiting = await until('the blocked job says why', async () => {
      const node = await stateOf(member, blocked);
      return node.pendingReason?.code === 'BudgetExhausted' ? node : null;
    });
    expect(waiting.state).toBe('PENDING');
    // Amounts are money: the member learns why, not how much.
    expect(waiting.pendingReason).toMatchObject({
      budgetSpent: null,
      budgetLimit: null,
      budgetCurrency: 'USD',
      budgetScope: 'tenant',
    });
    expect(waiting.pendingReason.message).toMatch(/budget is exhausted/i);
    expect(waiting.pendingReason.message).not.toMatch(/\d/);
    const seenByAdmin = (await stateOf(admin, blocked)).pendingReason;
    expect(seenByAdmin).toMatchObject({ budgetLimit: 100, budgetCurrency: 'USD' });
    expect(seenByAdmin.budgetSpent).toBeGreaterThanOrEqual(100);
    expect(seenByAdmin.message).toMatch(/of 100\.00 USD spent/);

    // More charging in the same month fires nothing again.
    t.now.value += 60_000;
    await t.app.scheduler.checkpointUsage();
    await until('two alerts over the subscription', async () => alerts.length >= 2);
    await new Promise((r) => setTimeout(r, 300));
    expect(alerts.map((a) => a.threshold).sort()).toEqual([100, 50]);
    expect(alerts[0]).toMatchObject({ currency: 'USD', limit: 100 });
    expect(await systemEntityManager(t.app.orm).count(BudgetAlert, { budget: budgetId })).toBe(2);
    expect((await stateOf(member, blocked)).state).toBe('PENDING');

    // Raised far above the spend: the waiting job runs.
    const raised = await t.gql(admin, SET_BUDGET, { in: { tenantId: borealis.Tenant, monthlyAmount: 1e12 } });
    expect(raised.body.errors).toBeUndefined();
    await until('the blocked job is admitted once the budget is raised', async () =>
      ['ADMITTED', 'RUNNING', 'SUCCEEDED'].includes((await stateOf(member, blocked)).state),
    );
  });
});
