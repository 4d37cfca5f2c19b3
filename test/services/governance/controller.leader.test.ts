// The controller across a leader change: two apps on one PostgreSQL database (one event
// bus). The first leader closes a window and adjusts; its lock's session is killed; the second app
// takes over, starts an empty window and continues from the committed setting — no adjustment is
// applied twice, the chain of audited adjustments is unbroken and recomputes, followers' cores follow.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exportSPKI, generateKeyPair } from 'jose';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { buildApp, type FairwayApp } from '../../../src/server/app.js';
import {
  CONTROLLER_TEST_GOVERNANCE,
  controllerEvents,
  controllerSettingOf,
  coreLimits,
  enc,
  expectReproducibleAuditLog,
  type Fixture,
  setUpControllerQueues,
  WINDOW_MS,
} from '../../helpers/controller-fixture.js';
import { describeNeeding } from '../../helpers/database.js';
import { startTestApp, type TestApp, testConfig } from '../../helpers/harness.js';
import {
  eventually,
  type LiveSubscription,
  liveSubscription,
  wsClient,
} from '../../helpers/live-subscription.js';
import { schedulerLockHolders } from '../../helpers/scheduler-lock.js';

describeNeeding(['postgresql'], 'governance controller across a leader change', () => {
  let t: TestApp;
  let f: Fixture;
  let b: FairwayApp;
  let sql: pg.Client;
  let heard: LiveSubscription<{ kind: string; queueId: string; lend: number | null }>;
  let client: ReturnType<typeof wsClient>;
  const bErrors: unknown[] = [];
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-ctl-b-'));
  const adjustments = async () =>
    (await controllerEvents(systemEntityManager(t.app.orm).fork({ clear: true }))).filter(
      (e) => e.action === 'governance.controller.adjust',
    );

  beforeAll(async () => {
    // The first app's leader session ends when its lock's session is killed; it logs that.
    t = await startTestApp({
      dialect: 'postgresql',
      governance: CONTROLLER_TEST_GOVERNANCE,
      expectedServerErrors: /terminat|connection|Connection|lock/,
    });
    f = await setUpControllerQueues(t.app);
    await t.app.scheduler.rebuild();
    const { publicKey } = await generateKeyPair('RS256');
    const config = testConfig({
      dataDir,
      database: t.app.config.database,
      oidc: { publicKeyPem: await exportSPKI(publicKey) },
    });
    b = await buildApp({
      config,
      now: () => t.now.value,
      events: t.app.events,
      logError: (e) => bErrors.push(e),
      reauthCacheMs: 0,
      scheduler: { leaderRetryMs: 100 },
      governance: CONTROLLER_TEST_GOVERNANCE,
    });
    sql = new pg.Client({ connectionString: (t.app.config.database as { url: string }).url });
    await sql.connect();
    client = wsClient(t.url, t.token('aurora-research', 'MEMBER'));
    heard = liveSubscription(
      client,
      `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind queueId lend } }`,
      { t: enc('Tenant', f.aurora.tenantId) },
      (d) => d.tenantEvents,
    );
    await new Promise((r) => setTimeout(r, 200));
  }, 60_000);
  afterAll(async () => {
    heard?.dispose();
    await client?.dispose();
    await b?.close();
    await sql?.end().catch(() => undefined);
    await t?.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('the new leader continues from the committed setting; nothing is applied twice', async () => {
    expect(t.app.scheduler.isLeader).toBe(true);
    expect(b.scheduler.isLeader).toBe(false);
    t.now.value += WINDOW_MS + 1000;
    await eventually(async () => (await adjustments()).length === 1);
    expect(await controllerSettingOf(t.app, f.aurora.queueId)).toMatchObject({ lend: 0.75 });

    // Kill the first leader's lock session: it demotes itself, the second app takes over.
    const [holder] = await schedulerLockHolders(sql);
    await sql.query('select pg_terminate_backend($1)', [holder!.pid]);
    await eventually(async () => b.scheduler.isLeader && !t.app.scheduler.isLeader, 10_000);
    // The new leader's core has the committed limits (12 of 16 lent), and it starts an empty window.
    await eventually(async () => coreLimits(b, 'aurora-training').lendingLimit === 12);
    await new Promise((r) => setTimeout(r, 200));
    expect(await adjustments()).toHaveLength(1);

    t.now.value += WINDOW_MS + 1000;
    await eventually(async () => (await adjustments()).length === 2);
    expect(await controllerSettingOf(t.app, f.aurora.queueId)).toMatchObject({ lend: 1 });
    await eventually(async () => coreLimits(b, 'aurora-training').lendingLimit === null);
    // The demoted app's read model follows too.
    await eventually(async () => coreLimits(t.app, 'aurora-training').lendingLimit === null);

    // At the policy's maximum, more idle windows change nothing: still exactly two adjustments.
    t.now.value += WINDOW_MS + 1000;
    await new Promise((r) => setTimeout(r, 300));
    const [first, second] = await adjustments();
    expect(await adjustments()).toHaveLength(2);
    expect(first!.requestId).not.toBe(second!.requestId);
    expect((second!.input as { windowStart: number }).windowStart).toBeGreaterThanOrEqual(
      (first!.input as { windowEnd: number }).windowEnd,
    );
    await expectReproducibleAuditLog(t.app, { [f.aurora.queueId]: { lend: 0.5, borrow: 0 } });
    await heard.until((v) => v.filter((e) => e.kind === 'LIMITS_ADJUSTED').length === 2, 5000);
    expect(heard.values.filter((e) => e.kind === 'LIMITS_ADJUSTED').map((e) => [e.queueId, e.lend])).toEqual([
      [enc('Queue', f.aurora.queueId), 0.75],
      [enc('Queue', f.aurora.queueId), 1],
    ]);
    expect(bErrors).toEqual([]);
  });
});
