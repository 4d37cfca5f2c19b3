// The second-level controller end to end on a one-minute window and the test clock: an
// idle lender lends more and a waiting borrower may borrow more (within their policies' bounds),
// the core's limits follow (Queue.usage), switching off restores the static settings exactly, a
// lender whose own jobs wait is tightened and so is its borrower, the lender's floor is reached by
// reclaim whatever the controller set, and every adjustment recomputes from the audit log. Events
// and Queue.limitAdjustments never reach another tenant.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { GovernanceSetting } from '../../../src/persistence/governance/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import {
  CONTROLLER_TEST_GOVERNANCE,
  controllerEvents,
  controllerSettingOf,
  coreLimits,
  enc,
  expectReproducibleAuditLog,
  type Fixture,
  jobState,
  setUpControllerQueues,
  WINDOW_MS,
} from '../../helpers/controller-fixture.js';
import { describeEachDialect } from '../../helpers/database.js';
import { codesOf, expectOk, startTestApp, type TestApp } from '../../helpers/harness.js';
import {
  eventually,
  type LiveSubscription,
  liveSubscription,
  wsClient,
} from '../../helpers/live-subscription.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const EVENTS = `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind queueId lend borrow borrowUnlimited adjustmentReasons } }`;
const STATUS = `query { governanceController { enabled windowSeconds lastRunAt lastAdjustments { queue { name } from { lend borrow } to { lend borrow } reasons } } }`;
const SWITCH = `mutation($on: Boolean!, $w: Int) { setGovernanceController(enabled: $on, windowSeconds: $w) { enabled windowSeconds } }`;
const ADJUSTMENTS = `query($id: ID!) { node(id: $id) { ... on Queue { name limitAdjustments(first: 50) { at policy reasons from { lend borrow } to { lend borrow } input { nominalGpus usedGpus lentGpus borrowedGpus pendingGpus oldestWaitSeconds slaEligible slaMet utilization windowStart windowEnd } auditEventId } } } }`;
const USAGE = `query($id: ID!) { node(id: $id) { ... on Queue { usage { flavor resource lendingLimit borrowingLimit } } } }`;

interface Heard {
  kind: string;
  queueId: string | null;
  lend: number | null;
  borrow: number | null;
  borrowUnlimited: boolean | null;
  adjustmentReasons: string[] | null;
}

describeEachDialect('governance controller', (dialect) => {
  let t: TestApp;
  let f: Fixture;
  const heard: Record<'aurora' | 'borealis', LiveSubscription<Heard>> = {} as never;
  const clients: ReturnType<typeof wsClient>[] = [];
  const platform = () => t.token(null, 'PLATFORM_ADMIN');
  const adjustedFor = (who: 'aurora' | 'borealis') =>
    heard[who].values.filter((e) => e.kind === 'LIMITS_ADJUSTED');

  async function submit(
    tenant: 'aurora' | 'borealis',
    name: string,
    gpus: number,
    count = 1,
  ): Promise<string> {
    const slug = tenant === 'aurora' ? 'aurora-research' : 'borealis-inference';
    const data = await expectOk(t, t.token(slug, 'MEMBER'), SUBMIT, {
      in: {
        queueId: enc('Queue', f[tenant].queueId),
        name,
        podSets: [{ count, gpusPerPod: gpus, flavors: ['h100-80g'] }],
      },
    });
    return data.submitJob.id;
  }
  const admitted = async (id: string) => ['ADMITTED', 'RUNNING'].includes(await jobState(t.app, id));
  /** Moves the leader's clock past the window and waits for the run that closes it. */
  async function closeWindow(byMs = WINDOW_MS + 1000): Promise<void> {
    const before = (await controllerState())?.lastRunAt ?? null;
    t.now.value += byMs;
    await eventually(async () => ((await controllerState())?.lastRunAt ?? null) !== before);
  }
  const controllerState = async () =>
    (
      await systemEntityManager(t.app.orm)
        .fork({ clear: true })
        .findOne(GovernanceSetting, { key: 'controller.state' })
    )?.value as { lastRunAt: number } | undefined;

  beforeAll(async () => {
    t = await startTestApp({ dialect, governance: CONTROLLER_TEST_GOVERNANCE });
    f = await setUpControllerQueues(t.app);
    await t.app.scheduler.rebuild();
    for (const [who, slug] of [
      ['aurora', 'aurora-research'],
      ['borealis', 'borealis-inference'],
    ] as const) {
      const client = wsClient(t.url, t.token(slug, 'MEMBER'));
      clients.push(client);
      heard[who] = liveSubscription<Heard>(
        client,
        EVENTS,
        { t: enc('Tenant', f[who].tenantId) },
        (d) => d.tenantEvents,
      );
    }
    await new Promise((r) => setTimeout(r, 200));
  }, 60_000);
  afterAll(async () => {
    for (const h of Object.values(heard)) h?.dispose();
    for (const c of clients) await c.dispose();
    await t?.close();
  });

  it('an idle lender lends more and a waiting borrower may borrow more, within bounds; the core follows', async () => {
    // Static: aurora lends half its 16 (8), borealis may borrow half its 16 (8).
    expect(coreLimits(t.app, 'aurora-training')).toMatchObject({ lendingLimit: 8 });
    expect(coreLimits(t.app, 'borealis-serving')).toMatchObject({ borrowingLimit: 8 });
    // One call: the three 8-GPU jobs fill borealis's 16 and borrow 8; the 4-GPU one would borrow 12.
    const jobs = [8, 8, 8, 4].map((gpus, i) => ({
      queueId: enc('Queue', f.borealis.queueId),
      name: `b${i + 1}`,
      podSets: [{ gpusPerPod: gpus, flavors: ['h100-80g'] }],
    }));
    const ids: string[] = (
      await expectOk(
        t,
        t.token('borealis-inference', 'MEMBER'),
        `mutation($j: [SubmitJobInput!]!) { submitJobs(jobs: $j) { id } }`,
        { j: jobs },
      )
    ).submitJobs.map((j: { id: string }) => j.id);
    const big = ids.slice(0, 3);
    const small = ids[3]!;
    for (const id of big) await eventually(() => admitted(id));
    await new Promise((r) => setTimeout(r, 100));
    expect(await admitted(small), 'the borrowing limit (8) holds the fourth job back').toBe(false);

    await closeWindow();
    expect(await controllerSettingOf(t.app, f.aurora.queueId)).toMatchObject({ lend: 0.75, borrow: 0 });
    expect(await controllerSettingOf(t.app, f.borealis.queueId)).toMatchObject({ lend: 1, borrow: 0.75 });
    await eventually(
      async () =>
        coreLimits(t.app, 'aurora-training').lendingLimit === 12 &&
        coreLimits(t.app, 'borealis-serving').borrowingLimit === 12,
    );
    // The graph shows the effective limits; the fourth job now fits (12 borrowed).
    const usage = await expectOk(t, t.token('aurora-research', 'TENANT_ADMIN'), USAGE, {
      id: enc('Queue', f.aurora.queueId),
    });
    expect(usage.node.usage).toEqual([
      { flavor: 'h100-80g', resource: 'GPU', lendingLimit: 12, borrowingLimit: 0 },
    ]);
    await eventually(() => admitted(small));

    await heard.aurora.until((v) => v.some((e) => e.kind === 'LIMITS_ADJUSTED'), 5000);
    await heard.borealis.until((v) => v.some((e) => e.kind === 'LIMITS_ADJUSTED'), 5000);
    expect(adjustedFor('aurora')).toEqual([
      {
        kind: 'LIMITS_ADJUSTED',
        queueId: enc('Queue', f.aurora.queueId),
        lend: 0.75,
        borrow: 0,
        borrowUnlimited: false,
        adjustmentReasons: ['LEND_IDLE'],
      },
    ]);
    expect(adjustedFor('borealis')).toEqual([
      {
        kind: 'LIMITS_ADJUSTED',
        queueId: enc('Queue', f.borealis.queueId),
        lend: 1,
        borrow: 0.75,
        borrowUnlimited: false,
        adjustmentReasons: ['RELAX_BORROWING'],
      },
    ]);

    const status = (await expectOk(t, platform(), STATUS)).governanceController;
    expect(status).toMatchObject({ enabled: true, windowSeconds: 60 });
    expect(status.lastAdjustments.map((a: any) => [a.queue.name, a.reasons, a.to])).toEqual(
      [
        ['aurora-training', ['LEND_IDLE'], { lend: 0.75, borrow: 0 }],
        ['borealis-serving', ['RELAX_BORROWING'], { lend: 1, borrow: 0.75 }],
      ].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
    );
  });

  it("Queue.limitAdjustments: the queue's audited figures for its tenant's auditors and admins and platform admins; another tenant's queue is NOT_FOUND", async () => {
    for (const role of ['TENANT_ADMIN', 'AUDITOR'] as const) {
      const list = (
        await expectOk(t, t.token('aurora-research', role), ADJUSTMENTS, {
          id: enc('Queue', f.aurora.queueId),
        })
      ).node.limitAdjustments;
      expect(list).toHaveLength(1);
      expect(list[0]).toMatchObject({
        policy: 'ctl-lender',
        reasons: ['LEND_IDLE'],
        from: { lend: 0.5, borrow: 0 },
        to: { lend: 0.75, borrow: 0 },
        input: {
          nominalGpus: 16,
          usedGpus: 0,
          lentGpus: 8,
          borrowedGpus: 0,
          pendingGpus: 0,
          slaEligible: 0,
          slaMet: 0,
          utilization: null,
        },
      });
    }
    const member = await t.gql(t.token('aurora-research', 'MEMBER'), ADJUSTMENTS, {
      id: enc('Queue', f.aurora.queueId),
    });
    expect(codesOf(member)).toEqual(['FORBIDDEN']);
    expect((member.body.data as any).node).toEqual({ name: 'aurora-training', limitAdjustments: null });
    const foreign = await t.gql(t.token('aurora-research', 'TENANT_ADMIN'), ADJUSTMENTS, {
      id: enc('Queue', f.borealis.queueId),
    });
    expect(codesOf(foreign)).toEqual(['NOT_FOUND']);
    expect(JSON.stringify(foreign.body)).not.toContain('borealis');
    const asPlatform = (await expectOk(t, platform(), ADJUSTMENTS, { id: enc('Queue', f.borealis.queueId) }))
      .node.limitAdjustments;
    expect(asPlatform.map((a: any) => a.reasons)).toEqual([['RELAX_BORROWING']]);
    // The controller's query and switch are the platform's.
    expect(codesOf(await t.gql(t.token('aurora-research', 'TENANT_ADMIN'), STATUS))).toEqual(['FORBIDDEN']);
    expect(codesOf(await t.gql(t.token('aurora-research', 'TENANT_ADMIN'), SWITCH, { on: false }))).toEqual([
      'FORBIDDEN',
    ]);
    expect(codesOf(await t.gql(platform(), SWITCH, { on: true, w: 5 }))).toEqual(['BAD_USER_INPUT']);
    expect((await expectOk(t, platform(), STATUS)).governanceController.enabled).toBe(true);
  });

  it('switching off restores the static settings exactly, audited per queue; no window adjusts while off', async () => {
    const off = (await expectOk(t, platform(), SWITCH, { on: false })).setGovernanceController;
    expect(off).toEqual({ enabled: false, windowSeconds: 60 });
    expect(await controllerSettingOf(t.app, f.aurora.queueId)).toBeNull();
    expect(await controllerSettingOf(t.app, f.borealis.queueId)).toBeNull();
    await eventually(
      async () =>
        coreLimits(t.app, 'aurora-training').lendingLimit === 8 &&
        coreLimits(t.app, 'borealis-serving').borrowingLimit === 8,
    );
    await heard.aurora.until((v) => v.filter((e) => e.kind === 'LIMITS_ADJUSTED').length === 2, 5000);
    await heard.borealis.until((v) => v.filter((e) => e.kind === 'LIMITS_ADJUSTED').length === 2, 5000);
    expect(adjustedFor('aurora')[1]).toMatchObject({
      queueId: enc('Queue', f.aurora.queueId),
      lend: 0.5,
      borrow: 0,
      adjustmentReasons: ['CONTROLLER_OFF'],
    });
    expect(adjustedFor('borealis')[1]).toMatchObject({
      queueId: enc('Queue', f.borealis.queueId),
      lend: 1,
      borrow: 0.5,
      adjustmentReasons: ['CONTROLLER_OFF'],
    });
    const em = systemEntityManager(t.app.orm).fork({ clear: true });
    const restores = (await controllerEvents(em)).filter((e) => e.action === 'governance.controller.restore');
    expect(restores.map((e) => [e.tenant?.id, e.actor, e.input.reasons])).toEqual(
      expect.arrayContaining([
        [f.aurora.tenantId, null, ['CONTROLLER_OFF']],
        [f.borealis.tenantId, null, ['CONTROLLER_OFF']],
      ]),
    );

    const count = (await controllerEvents(em)).length;
    t.now.value += 3 * WINDOW_MS;
    await new Promise((r) => setTimeout(r, 300));
    expect((await controllerEvents(systemEntityManager(t.app.orm).fork({ clear: true }))).length).toBe(count);
    expect((await expectOk(t, platform(), SWITCH, { on: true })).setGovernanceController.enabled).toBe(true);
  });

  it('a lender whose own jobs wait is tightened, and so is its borrower; its floor still comes back by reclaim', async () => {
    // Borealis holds 16 + 12 (4 of them above its static limit, admitted before the restore); aurora's
    // whole nominal job waits: the borrowing jobs are a week from reclaim.
    await new Promise((r) => setTimeout(r, 300)); // the task sees the switch on and opens a window
    const lender = await submit('aurora', 'a1', 8, 2);
    await new Promise((r) => setTimeout(r, 150));
    expect(await admitted(lender)).toBe(false);
    await closeWindow();
    expect(await controllerSettingOf(t.app, f.aurora.queueId)).toMatchObject({ lend: 0.25, borrow: 0 });
    expect(await controllerSettingOf(t.app, f.borealis.queueId)).toMatchObject({ borrow: 0.25 });
    await eventually(
      async () =>
        coreLimits(t.app, 'aurora-training').lendingLimit === 4 &&
        coreLimits(t.app, 'borealis-serving').borrowingLimit === 4,
    );
    await heard.aurora.until((v) => v.some((e) => e.adjustmentReasons?.includes('TIGHTEN_LENDING')), 5000);
    await heard.borealis.until(
      (v) => v.some((e) => e.adjustmentReasons?.includes('TIGHTEN_BORROWING')),
      5000,
    );
    const [tightened] = (
      await expectOk(t, t.token('aurora-research', 'AUDITOR'), ADJUSTMENTS, {
        id: enc('Queue', f.aurora.queueId),
      })
    ).node.limitAdjustments;
    expect(tightened).toMatchObject({
      reasons: ['TIGHTEN_LENDING'],
      input: { pendingGpus: 16, usedGpus: 0, slaEligible: 1, slaMet: 0 },
    });
    expect(tightened.input.oldestWaitSeconds).toBeGreaterThan(60);

    // A week (declared) later the borrowed GPUs are reclaimable: the lender's nominal comes back.
    t.now.value += 606_000;
    t.app.scheduler.wake();
    await eventually(() => admitted(lender));
    expect(coreLimits(t.app, 'aurora-training').used).toBe(16);
    // Each tenant heard only of its own queue.
    for (const who of ['aurora', 'borealis'] as const) {
      const own = enc('Queue', f[who].queueId);
      expect(adjustedFor(who).every((e) => e.queueId === own)).toBe(true);
    }
  });

  it('every adjustment recomputes from its audit event to what was applied and what the queue holds', async () => {
    const events = await expectReproducibleAuditLog(t.app, {
      [f.aurora.queueId]: { lend: 0.5, borrow: 0 },
      [f.borealis.queueId]: { lend: 1, borrow: 0.5 },
    });
    expect(events.filter((e) => e.action === 'governance.controller.adjust').length).toBeGreaterThanOrEqual(
      4,
    );
    for (const e of events)
      expect(e.tenant?.id).toBe(e.targetId === f.aurora.queueId ? f.aurora.tenantId : f.borealis.tenantId);
  });
});
