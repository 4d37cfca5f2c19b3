// Quota requests end to end: an approval applies at once (queue nominal, previousNominal,
// audit, the leader's core) and a temporary one expires by itself when the clock passes expiresAt
// (back by the granted difference); a future startsAt activates on the leader; two concurrent
// approvals apply once; requests and decisions stream as events — never to another tenant.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuditEvent } from '../../../src/persistence/audit/entities.js';
import { Queue } from '../../../src/persistence/cluster/entities.js';
import { QuotaRequest } from '../../../src/persistence/governance/entities.js';
import { Tenant } from '../../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { runQuotaRequests } from '../../../src/services/governance/quota-expiry.js';
import type { LeaderTaskContext } from '../../../src/services/scheduling/leader-session.js';
import { describeEachDialect } from '../../helpers/database.js';
import { codesOf, expectOk, startTestApp, type TestApp } from '../../helpers/harness.js';
import { eventually, liveSubscription, wsClient } from '../../helpers/live-subscription.js';

const enc = (type: string, id: string) => Buffer.from(`${type}:${id}`).toString('base64');
const raw = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1]!;
const H = 3_600_000;
const FIELDS = 'id status nominal previousNominal';
const REQUEST = `mutation($in: RequestQuotaChangeInput!) { requestQuotaChange(input: $in) { ${FIELDS} } }`;
const APPROVE = `mutation($id: ID!, $note: String) { approveQuotaRequest(id: $id, note: $note) { ${FIELDS} decisionNote decidedByName appliedAt } }`;
const REJECT = `mutation($id: ID!, $note: String!) { rejectQuotaRequest(id: $id, note: $note) { id status decisionNote } }`;
const CANCEL = `mutation($id: ID!) { cancelQuotaRequest(id: $id) { id status endedAt } }`;
const TENANT_EVENTS = `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind queueId requestId requestStatus } }`;
const PLATFORM_UPDATES = `subscription { quotaRequestUpdates { id status nominal queue { name } tenant { slug } } }`;

describeEachDialect('quota requests: apply, expire, activate, events', (dialect) => {
  let t: TestApp;
  let queueId: string;
  let auroraId: string;
  let borealisId: string;
  const admin = () => t.token('aurora-research', 'TENANT_ADMIN');
  const platform = () => t.token(null, 'PLATFORM_ADMIN');
  const em = () => systemEntityManager(t.app.orm).fork({ clear: true });
  const nominal = async () =>
    (await em().findOneOrFail(Queue, { id: queueId })).quotas['h100-80g']!.gpu!.nominal;
  const coreNominal = () =>
    t.app.scheduler
      .queueStatus('aurora-training')
      ?.resources.find((r) => r.flavor === 'h100-80g' && r.resource === 'gpu')?.nominal;
  const statusOf = async (id: string) => (await em().findOneOrFail(QuotaRequest, { id: raw(id) })).status;
  const iso = (ms: number) => new Date(ms).toISOString();

  async function request(fields: Record<string, unknown>): Promise<string> {
    const data = await expectOk(t, admin(), REQUEST, {
      in: {
        queueId: enc('Queue', queueId),
        flavor: 'h100-80g',
        justification: 'end-of-quarter training push',
        ...fields,
      },
    });
    return data.requestQuotaChange.id;
  }
  async function setNominal(value: number): Promise<void> {
    await expectOk(
      t,
      platform(),
      `mutation($q: ID!, $n: Float!) { setQuota(queueId: $q, quota: { flavor: "h100-80g", nominal: $n }) { id } }`,
      { q: enc('Queue', queueId), n: value },
    );
  }

  beforeAll(async () => {
    t = await startTestApp({ dialect, governance: { quotaRequestIntervalMs: 40 } });
    const aurora = await em().findOneOrFail(Tenant, { slug: 'aurora-research' });
    auroraId = aurora.id;
    borealisId = (await em().findOneOrFail(Tenant, { slug: 'borealis-inference' })).id;
    queueId = (await em().findOneOrFail(Queue, { tenant: aurora.id })).id;
  }, 60_000);
  afterAll(async () => {
    await t?.close();
  });

  it('an approval applies at once, atomically audited; the temporary grant expires by itself, back by the granted difference', async () => {
    await setNominal(16);
    const id = await request({ nominal: 24, expiresAt: iso(t.now.value + 2 * H) });
    const approved = (await expectOk(t, platform(), APPROVE, { id, note: 'ok for two hours' }))
      .approveQuotaRequest;
    expect(approved).toMatchObject({
      status: 'ACTIVE',
      nominal: 24,
      previousNominal: 16,
      decisionNote: 'ok for two hours',
      decidedByName: 'Platform Admin',
    });
    expect(approved.appliedAt).not.toBeNull();
    expect(await nominal()).toBe(24);
    await eventually(async () => coreNominal() === 24);
    const approval = await em().findOneOrFail(
      AuditEvent,
      { action: 'quotaRequest.approve', targetId: raw(id) },
      { populate: ['tenant'] },
    );
    expect(approval).toMatchObject({ outcome: 'SUCCESS', targetType: 'QuotaRequest' });
    expect(approval.tenant?.id).toBe(auroraId);
    expect(approval.input.nominal).toEqual({ flavor: 'h100-80g', resource: 'gpu', from: 16, to: 24 });

    // A platform admin raises the quota meanwhile: the expiry takes back only what the request granted (8).
    await setNominal(30);
    t.now.value += H;
    await new Promise((r) => setTimeout(r, 200));
    expect(await statusOf(id)).toBe('ACTIVE');
    t.now.value += 2 * H;
    await eventually(async () => (await statusOf(id)) === 'EXPIRED');
    expect(await nominal()).toBe(22);
    await eventually(async () => coreNominal() === 22);
    const expiry = await em().findOneOrFail(
      AuditEvent,
      { action: 'quotaRequest.expire', targetId: raw(id) },
      { populate: ['tenant'] },
    );
    expect(expiry).toMatchObject({ outcome: 'SUCCESS', actor: null, requestId: 'governance.quota-requests' });
    expect(expiry.tenant?.id).toBe(auroraId);
    expect(expiry.input).toMatchObject({ applied: true, granted: 24, previousNominal: 16, from: 30, to: 22 });
    // Exactly once: later runs find nothing to do.
    t.now.value += H;
    await new Promise((r) => setTimeout(r, 200));
    expect(await em().count(AuditEvent, { action: 'quotaRequest.expire', targetId: raw(id) })).toBe(1);
    expect(await nominal()).toBe(22);
  });

  it('a future startsAt waits APPROVED, activates on the leader, then expires; cancel and reject before that change nothing', async () => {
    await setNominal(16);
    const id = await request({
      nominal: 40,
      startsAt: iso(t.now.value + H),
      expiresAt: iso(t.now.value + 3 * H),
    });
    expect((await expectOk(t, platform(), APPROVE, { id })).approveQuotaRequest).toMatchObject({
      status: 'APPROVED',
      previousNominal: null,
      appliedAt: null,
    });
    expect(await nominal()).toBe(16);
    t.now.value += 1.5 * H;
    await eventually(async () => (await statusOf(id)) === 'ACTIVE');
    expect(await nominal()).toBe(40);
    expect(
      await em().count(AuditEvent, { action: 'quotaRequest.activate', targetId: raw(id), actor: null }),
    ).toBe(1);
    expect(codesOf(await t.gql(admin(), CANCEL, { id }))).toEqual(['CONFLICT']);
    t.now.value += 2 * H;
    await eventually(async () => (await statusOf(id)) === 'EXPIRED');
    expect(await nominal()).toBe(16);

    // APPROVED and not started: the tenant's admins may still cancel; it never applies.
    const later = await request({ nominal: 48, startsAt: iso(t.now.value + H) });
    await expectOk(t, platform(), APPROVE, { id: later });
    expect((await expectOk(t, admin(), CANCEL, { id: later })).cancelQuotaRequest.status).toBe('CANCELLED');
    const rejected = await request({ nominal: 64 });
    expect(
      (await expectOk(t, platform(), REJECT, { id: rejected, note: 'the pool is full' })).rejectQuotaRequest,
    ).toMatchObject({ status: 'REJECTED', decisionNote: 'the pool is full' });
    t.now.value += 2 * H;
    await new Promise((r) => setTimeout(r, 200));
    expect(await statusOf(later)).toBe('CANCELLED');
    expect(await nominal()).toBe(16);
  });

  it('two concurrent approvals of one request apply it once: one succeeds, the other is CONFLICT', async () => {
    await setNominal(16);
    const id = await request({ nominal: 20 });
    const [a, b] = await Promise.all([
      t.gql(platform(), APPROVE, { id }),
      t.gql(platform(), APPROVE, { id }),
    ]);
    expect([codesOf(a), codesOf(b)].sort()).toEqual([[], ['CONFLICT']]);
    const row = await em().findOneOrFail(QuotaRequest, { id: raw(id) });
    expect(row).toMatchObject({ status: 'ACTIVE', previousNominal: 16 });
    expect(await nominal()).toBe(20);
    const audits = await em().find(AuditEvent, { action: 'quotaRequest.approve', targetId: raw(id) });
    expect(audits.map((e) => e.outcome)).toEqual(['SUCCESS']);
    expect(
      await em().count(AuditEvent, {
        action: 'quotaRequest.approve',
        outcome: 'FAILED',
        errorCode: 'CONFLICT',
        createdAt: { $gte: row.decidedAt! },
      }),
    ).toBeGreaterThanOrEqual(1);
  });

  it('two leaders that both saw a request due expire it once: the status change is the guard', async () => {
    await setNominal(16);
    const id = await request({ nominal: 26, expiresAt: iso(t.now.value + H) });
    await expectOk(t, platform(), APPROVE, { id });
    expect(await nominal()).toBe(26);
    // Two task runs on a later clock than the app's own leader (which therefore leaves the request alone).
    const leader = (): LeaderTaskContext => ({
      now: t.now.value + 2 * H,
      core: undefined as never,
      queueStatus: () => null,
      queueIds: new Map(),
      events: t.app.events,
      timeScale: 1,
      em: () => systemEntityManager(t.app.orm).fork({ clear: true }),
      write: (work) => systemEntityManager(t.app.orm).fork({ clear: true }).transactional(work),
      wake: () => undefined,
      reloadConfig: async () => undefined,
      ended: () => false,
    });
    await Promise.all([runQuotaRequests(leader()), runQuotaRequests(leader())]);
    expect(await statusOf(id)).toBe('EXPIRED');
    expect(await nominal()).toBe(16);
    expect(await em().count(AuditEvent, { action: 'quotaRequest.expire', targetId: raw(id) })).toBe(1);
  });

  it("requests and decisions stream: the tenant's tenantEvents and the platform's quotaRequestUpdates; another tenant hears nothing", async () => {
    await setNominal(16);
    const member = liveSubscription(
      wsClient(t.url, t.token('aurora-research', 'MEMBER')),
      TENANT_EVENTS,
      { t: enc('Tenant', auroraId) },
      (d) => d.tenantEvents,
    );
    const outsider = liveSubscription(
      wsClient(t.url, t.token('borealis-inference', 'TENANT_ADMIN')),
      TENANT_EVENTS,
      { t: enc('Tenant', borealisId) },
      (d) => d.tenantEvents,
    );
    const operators = liveSubscription(
      wsClient(t.url, platform()),
      PLATFORM_UPDATES,
      {},
      (d) => d.quotaRequestUpdates,
    );
    const refused = liveSubscription(
      wsClient(t.url, t.token('borealis-inference', 'TENANT_ADMIN')),
      PLATFORM_UPDATES,
      {},
      (d) => d.quotaRequestUpdates,
    );
    const spying = liveSubscription(
      wsClient(t.url, t.token('borealis-inference', 'TENANT_ADMIN')),
      TENANT_EVENTS,
      { t: enc('Tenant', auroraId) },
      (d) => d.tenantEvents,
    );
    await new Promise((r) => setTimeout(r, 300));
    const id = await request({ nominal: 18, expiresAt: iso(t.now.value + H) });
    await expectOk(t, platform(), APPROVE, { id });
    t.now.value += 2 * H;
    await eventually(async () => (await statusOf(id)) === 'EXPIRED');
    const mine = (v: any[]) => v.filter((e) => e.requestId === id || e.kind === 'QUOTA_CHANGED');
    const heard = await member.until((v) => mine(v).filter((e) => e.kind === 'QUOTA_REQUEST').length >= 3);
    expect(mine(heard).map((e) => `${e.kind}:${e.requestStatus ?? ''}`)).toEqual([
      'QUOTA_REQUEST:PENDING',
      'QUOTA_CHANGED:',
      'QUOTA_REQUEST:ACTIVE',
      'QUOTA_CHANGED:',
      'QUOTA_REQUEST:EXPIRED',
    ]);
    expect(mine(heard).every((e) => e.queueId === enc('Queue', queueId))).toBe(true);
    const platformHeard = await operators.until((v) => v.filter((e) => e.id === id).length >= 3);
    expect(platformHeard.filter((e) => e.id === id).map((e) => e.status)).toEqual([
      'PENDING',
      'ACTIVE',
      'EXPIRED',
    ]);
    expect(platformHeard.find((e) => e.id === id)).toMatchObject({
      nominal: 18,
      queue: { name: 'aurora-training' },
      tenant: { slug: 'aurora-research' },
    });
    // The other tenant: nothing on its own stream, FORBIDDEN on the platform's, NOT_FOUND on aurora's.
    await new Promise((r) => setTimeout(r, 200));
    expect(outsider.values).toEqual([]);
    expect(JSON.stringify(outsider.values)).not.toContain(raw(id));
    expect(refused.values).toEqual([]);
    expect(JSON.stringify(refused.errors)).toMatch(/FORBIDDEN|platform admins/i);
    expect(spying.values).toEqual([]);
    expect(JSON.stringify(spying.errors)).toMatch(/NOT_FOUND|not found/i);
    for (const s of [member, outsider, operators, refused, spying]) s.dispose();
  });
});
