import type { Client } from 'graphql-ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../../helpers/database.js';
import { codesOf, startTestApp, type TestApp } from '../../helpers/harness.js';
import { eventually, liveSubscription, wsClient } from '../../helpers/live-subscription.js';

/**
 * Break-glass: a platform admin opens a time-limited grant for one tenant, with a reason;
 * under it they read and change what is inside that tenant, and every such read is written
 * to the tenant's own audit log (who, what, under which grant) for its auditors.
 */
let t: TestApp;
let aurora: Record<string, string>;
let borealis: Record<string, string>;
let ada: string;
let otto: string;
let max: string;
let bea: string;
let operator: string;
const clients: Client[] = [];

const OPEN = `mutation($in: OpenBreakGlassInput!) { openBreakGlass(input: $in) { id operatorName reason expiresAt closedAt active tenant { slug } } }`;
const CLOSE = `mutation($id: ID!) { closeBreakGlass(id: $id) { id active closedAt } }`;
const GRANTS = `query($id: ID!) { breakGlassGrants(tenantId: $id) { id operatorName reason active } }`;
/** Content a platform admin may only read under a grant: e-mails, a job's container, audit details. */
const CONTENT = `query($slug: String!, $job: ID!, $event: ID!) {
  tenant(slug: $slug) { members(first: 10) { edges { node { email } } } }
  job: node(id: $job) { ... on Job { name container { image } } }
  event: node(id: $event) { ... on AuditEvent { action input } }
}`;

interface AuditRow {
  id: string;
  action: string;
  actorName: string | null;
  targetId: string | null;
  input: Record<string, any> | null;
  outcome: string;
}

/** The tenant's audit log as its auditor (otto) reads it, oldest first. */
async function auditLog(tenant = aurora): Promise<AuditRow[]> {
  const bearer = tenant === aurora ? otto : bea;
  const res = await t.gql(
    bearer,
    `query($id: ID!) { auditEvents(tenantId: $id, last: 500) { edges { node { id action actorName targetId input outcome } } } }`,
    { id: tenant.Tenant },
  );
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.auditEvents.edges.map((e: { node: AuditRow }) => e.node);
}
const breakGlassReads = async (tenant = aurora) =>
  (await auditLog(tenant)).filter((e) => e.action === 'breakglass.read');

async function open(
  reason = 'Investigating ticket INC-4711: stuck jobs',
  durationMinutes = 30,
  tenant = aurora,
): Promise<Record<string, any>> {
  const res = await t.gql(operator, OPEN, { in: { tenantId: tenant.Tenant, reason, durationMinutes } });
  expect(res.body.errors).toBeUndefined();
  return res.body.data!.openBreakGlass;
}

async function readContent(): Promise<{ codes: string[]; data: Record<string, any> }> {
  const res = await t.gql(operator, CONTENT, {
    slug: 'aurora-research',
    job: aurora.Job,
    event: aurora.AuditEvent,
  });
  return { codes: codesOf(res), data: res.body.data! };
}

let firstGrant: Record<string, any>;
const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1];

describeEachDialect('break-glass grants', (dialect) => {
  beforeAll(async () => {
    t = await startTestApp({ dialect, expectedServerErrors: /audit store down/ });
    aurora = await t.idsOf('aurora-research');
    borealis = await t.idsOf('borealis-inference');
    ada = t.token('aurora-research', 'TENANT_ADMIN');
    otto = t.token('aurora-research', 'AUDITOR');
    max = t.token('aurora-research', 'MEMBER');
    bea = t.token('borealis-inference', 'TENANT_ADMIN');
    operator = await t.jwt('admin@fairway.example');
  });
  afterAll(async () => {
    for (const c of clients.splice(0)) await c.dispose();
    await t?.close();
  });

  it('refuses a bad reason or duration (BAD_USER_INPUT) and tenant members (FORBIDDEN), writing nothing', async () => {
    const before = await t.rowCounts();
    const grantsBefore = (await t.gql(ada, GRANTS, { id: aurora.Tenant })).body.data!.breakGlassGrants;
    for (const input of [
      { reason: 'too short', durationMinutes: 30 },
      { reason: '          padded   ', durationMinutes: 30 },
      { reason: 'x'.repeat(501), durationMinutes: 30 },
      { reason: 'A good long reason', durationMinutes: 0 },
      { reason: 'A good long reason', durationMinutes: 481 },
    ]) {
      const res = await t.gql(operator, OPEN, { in: { tenantId: aurora.Tenant, ...input } });
      expect(codesOf(res), JSON.stringify(input)).toEqual(['BAD_USER_INPUT']);
    }
    expect(await t.rowCounts()).toEqual(before);
    for (const member of [ada, otto, max]) {
      const res = await t.gql(member, OPEN, {
        in: { tenantId: aurora.Tenant, reason: 'Let me look at everything', durationMinutes: 30 },
      });
      expect(codesOf(res)).toEqual(['FORBIDDEN']);
    }
    const { AuditEvent: _audited, ...beforeWithoutAudit } = before;
    expect(await t.rowCounts({ ignoreAudit: true })).toEqual(beforeWithoutAudit);
    const listed = await t.gql(ada, GRANTS, { id: aurora.Tenant });
    expect(listed.body.data!.breakGlassGrants).toEqual(grantsBefore);
    expect(grantsBefore.every((g: { active: boolean }) => !g.active)).toBe(true);
  });

  it('opens a grant, audited with the reason in the tenant log; listed to its admins, auditors and the operator, hidden from outsiders', async () => {
    const grant = (firstGrant = await open());
    expect(grant).toMatchObject({
      operatorName: 'Platform Admin',
      reason: 'Investigating ticket INC-4711: stuck jobs',
      closedAt: null,
      active: true,
      tenant: { slug: 'aurora-research' },
    });
    expect(new Date(grant.expiresAt).getTime()).toBe(t.now.value + 30 * 60_000);

    // The members' refused attempts are in the log too (DENIED); one succeeded.
    const opened = (await auditLog()).filter(
      (e) => e.action === 'breakglass.open' && e.outcome === 'SUCCESS',
    );
    expect(opened).toHaveLength(1);
    expect(opened[0]).toMatchObject({
      actorName: 'Platform Admin',
      targetId: grant.id,
      outcome: 'SUCCESS',
      input: { reason: 'Investigating ticket INC-4711: stuck jobs', durationMinutes: 30 },
    });

    for (const reader of [ada, otto, operator]) {
      const res = await t.gql(reader, GRANTS, { id: aurora.Tenant });
      expect(res.body.errors).toBeUndefined();
      // Newest first (an older, closed fixture grant may follow).
      expect(res.body.data!.breakGlassGrants[0]).toEqual({
        id: grant.id,
        operatorName: 'Platform Admin',
        reason: grant.reason,
        active: true,
      });
      expect(res.body.data!.breakGlassGrants.filter((g: { active: boolean }) => g.active)).toHaveLength(1);
      const viaTenant = await t.gql(
        reader,
        `query { tenant(slug: "aurora-research") { breakGlassGrants { id } } }`,
      );
      expect(viaTenant.body.data!.tenant.breakGlassGrants[0]).toEqual({ id: grant.id });
      const node = await t.gql(
        reader,
        `query($id: ID!) { node(id: $id) { ... on BreakGlassGrant { id reason } } }`,
        { id: grant.id },
      );
      expect(node.body.data!.node).toEqual({ id: grant.id, reason: grant.reason });
    }
    const mine = await t.gql(operator, `{ viewer { breakGlassGrants { id tenant { slug } } } }`);
    expect(mine.body.data!.viewer.breakGlassGrants).toEqual([
      { id: grant.id, tenant: { slug: 'aurora-research' } },
    ]);
    expect(
      (await t.gql(ada, `{ viewer { breakGlassGrants { id } } }`)).body.data!.viewer.breakGlassGrants,
    ).toEqual([]);

    // A member without audit:read: FORBIDDEN; another tenant's admin: NOT_FOUND, as for nothing.
    expect(codesOf(await t.gql(max, GRANTS, { id: aurora.Tenant }))).toEqual(['FORBIDDEN']);
    expect(codesOf(await t.gql(bea, GRANTS, { id: aurora.Tenant }))).toEqual(['NOT_FOUND']);
    const probe = await t.gql(bea, `query($id: ID!) { node(id: $id) { id } }`, { id: grant.id });
    const missing = await t.gql(bea, `query($id: ID!) { node(id: $id) { id } }`, {
      id: Buffer.from('BreakGlassGrant:00000000-0000-7000-8000-000000000000').toString('base64'),
    });
    expect(codesOf(probe)).toEqual(['NOT_FOUND']);
    expect(probe.body.errors![0]!.message).toBe(missing.body.errors![0]!.message);
    expect(codesOf(await t.gql(bea, CLOSE, { id: grant.id }))).toEqual(['NOT_FOUND']);

    // One open grant per operator and tenant.
    const again = await t.gql(operator, OPEN, {
      in: { tenantId: aurora.Tenant, reason: 'A second reason here', durationMinutes: 10 },
    });
    expect(codesOf(again)).toEqual(['CONFLICT']);
  });

  it('under the grant the content reads succeed, and each request that read content writes one breakglass.read event for the auditors', async () => {
    const [grant] = (await t.gql(operator, `{ viewer { breakGlassGrants { id } } }`)).body.data!.viewer
      .breakGlassGrants;
    const before = (await breakGlassReads()).length;

    const first = await readContent();
    expect(first.codes).toEqual([]);
    expect(first.data.tenant.members.edges.map((e: any) => e.node.email)).toContain('otto@aurora.example');
    expect(first.data.job).toMatchObject({ name: 'fixture job aurora-research' });
    expect(first.data.event).toMatchObject({ action: 'test.fixture', input: {} });

    let reads = await breakGlassReads();
    expect(reads).toHaveLength(before + 1);
    const event = reads.at(-1)!;
    expect(event).toMatchObject({ actorName: 'Platform Admin', targetId: grant.id, outcome: 'SUCCESS' });
    expect(event.input!.reads).toEqual(
      expect.arrayContaining(['e-mail addresses', 'job content', 'audit details']),
    );

    await readContent();
    reads = await breakGlassReads();
    expect(reads).toHaveLength(before + 2);

    // Metadata a platform admin sees anyway is not a break-glass read.
    const meta = await t.gql(operator, `{ tenants(first: 5) { edges { node { slug queues { name } } } } }`);
    expect(meta.body.errors).toBeUndefined();
    expect(await breakGlassReads()).toHaveLength(before + 2);
  });

  it('when the audit record of a read cannot be written, the content is withheld; once the store is back, reads work again', async () => {
    const before = (await breakGlassReads()).length;
    const connection = t.app.orm.em.getConnection();
    // The audit store refuses break-glass records (a fault injected in the database itself).
    if (dialect === 'sqlite') {
      await connection.execute(
        `create trigger audit_store_down before insert on audit_events when new.action = 'breakglass.read' begin select raise(abort, 'audit store down'); end`,
      );
    } else {
      await connection.execute(
        `create or replace function audit_store_down() returns trigger as $$ begin if new.action = 'breakglass.read' then raise exception 'audit store down'; end if; return new; end $$ language plpgsql`,
      );
      await connection.execute(
        `create trigger audit_store_down before insert on audit_events for each row execute function audit_store_down()`,
      );
    }
    try {
      const res = await t.gql(operator, CONTENT, {
        slug: 'aurora-research',
        job: aurora.Job,
        event: aurora.AuditEvent,
      });
      expect(codesOf(res)).toEqual(['SERVICE_UNAVAILABLE']);
      expect(res.body.data ?? null).toBeNull();
      const text = JSON.stringify(res.body);
      for (const secret of ['otto@aurora.example', 'audit store down', 'test.fixture'])
        expect(text).not.toContain(secret);
    } finally {
      await connection.execute(
        dialect === 'sqlite'
          ? `drop trigger audit_store_down`
          : `drop trigger audit_store_down on audit_events`,
      );
    }
    expect(await breakGlassReads()).toHaveLength(before);
    const again = await readContent();
    expect(again.codes).toEqual([]);
    expect(again.data.tenant.members.edges.map((e: any) => e.node.email)).toContain('otto@aurora.example');
    expect(await breakGlassReads()).toHaveLength(before + 1);
  });

  it('a grant for one tenant gives nothing in another', async () => {
    const before = await t.rowCounts({ ignoreAudit: true });
    const res = await t.gql(
      operator,
      `{ tenant(slug: "borealis-inference") { members(first: 5) { edges { node { email } } } } }`,
    );
    expect(new Set(codesOf(res))).toEqual(new Set(['FORBIDDEN']));
    expect(JSON.stringify(res.body.data)).not.toContain('@borealis.example');
    const create = await t.gql(
      operator,
      `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
      { in: { tenantId: borealis.Tenant, slug: 'bg-elsewhere', name: 'x' } },
    );
    expect(codesOf(create)).toEqual(['FORBIDDEN']);
    expect(await t.rowCounts({ ignoreAudit: true })).toEqual(before);
    expect(await breakGlassReads(borealis)).toEqual([]);
  });

  it('a change made under the grant names the grant in its audit input', async () => {
    const [grant] = (await t.gql(operator, `{ viewer { breakGlassGrants { id } } }`)).body.data!.viewer
      .breakGlassGrants;
    const readsBefore = await breakGlassReads();
    const res = await t.gql(
      operator,
      `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
      { in: { tenantId: aurora.Tenant, slug: 'bg-fix', name: 'Fix' } },
    );
    // The change is its own audit record; the write check alone is not a read.
    expect(await breakGlassReads()).toEqual(readsBefore);
    expect(res.body.errors).toBeUndefined();
    const created = (await auditLog()).filter((e) => e.action === 'project.create').at(-1)!;
    expect(created).toMatchObject({ actorName: 'Platform Admin', outcome: 'SUCCESS' });
    expect(created.input!.breakGlassGrantId).toBe(rawId(grant.id));
  });

  it('a subscription event read under the grant is audited too (and the audit records do not feed on themselves)', async () => {
    const client = wsClient(t.url, operator);
    clients.push(client);
    const sub = liveSubscription(
      client,
      `subscription($id: ID!) { auditEventRecorded(tenantId: $id) { action actorEmail input } }`,
      { id: aurora.Tenant },
      (d) => d.auditEventRecorded,
    );
    // graphql-ws says nothing when a subscription is live: make changes until one arrives.
    let n = 0;
    await eventually(async () => {
      await t.gql(ada, `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`, {
        in: { tenantId: aurora.Tenant, slug: `bg-live-${++n}`, name: 'Live' },
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      return sub.values.some((v) => v.action === 'project.create');
    });
    const seen = sub.values.find((v) => v.action === 'project.create')!;
    expect(seen.actorEmail).toBe('ada@aurora.example');
    expect(seen.input).toMatchObject({ slug: expect.stringMatching(/^bg-live-/) });
    await eventually(async () =>
      (await breakGlassReads()).some(
        (e) =>
          e.input!.reads.includes('audit details') &&
          e.input!.reads.some((r: string) => r.startsWith('Audit event')),
      ),
    );

    // Its own breakglass.read records reach the subscription too; reading them must not write more of them
    // forever.
    await new Promise((resolve) => setTimeout(resolve, 500));
    const settled = (await breakGlassReads()).length;
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect((await breakGlassReads()).length).toBe(settled);
    expect(sub.values.some((v) => v.action === 'breakglass.read')).toBe(true);
    expect(sub.errors).toEqual([]);
    sub.dispose();
  });

  it('after the grant expires the same reads are FORBIDDEN again', async () => {
    const grant = firstGrant;
    const saved = t.now.value;
    t.now.value = new Date(grant.expiresAt).getTime() + 1;
    try {
      const before = (await breakGlassReads()).length;
      const after = await readContent();
      expect(after.codes.length).toBeGreaterThan(0);
      expect(new Set(after.codes)).toEqual(new Set(['FORBIDDEN']));
      expect(JSON.stringify(after.data)).not.toContain('@aurora.example');
      expect((await breakGlassReads()).length).toBe(before);
      expect(
        (await t.gql(operator, `{ viewer { breakGlassGrants { id } } }`)).body.data!.viewer.breakGlassGrants,
      ).toEqual([]);
      expect((await t.gql(otto, GRANTS, { id: aurora.Tenant })).body.data!.breakGlassGrants).toContainEqual({
        id: grant.id,
        operatorName: 'Platform Admin',
        reason: grant.reason,
        active: false,
      });
      // Ended: closing it is a conflict, and a change is refused.
      expect(codesOf(await t.gql(operator, CLOSE, { id: grant.id }))).toEqual(['CONFLICT']);
      const create = await t.gql(
        operator,
        `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
        { in: { tenantId: aurora.Tenant, slug: 'bg-late', name: 'Late' } },
      );
      expect(codesOf(create)).toEqual(['FORBIDDEN']);
    } finally {
      t.now.value = saved;
    }
  });

  it('closeBreakGlass ends a grant at once: by the operator, or by the tenant admin; members may not', async () => {
    // The first grant has expired (its clock moved on): open a fresh one.
    t.now.value += 31 * 60_000;
    const grant = await open('Second look: ticket INC-4712', 60);
    expect((await readContent()).codes).toEqual([]);
    const client = wsClient(t.url, operator);
    clients.push(client);
    const sub = liveSubscription(
      client,
      `subscription($id: ID!) { auditEventRecorded(tenantId: $id) { action input } }`,
      { id: aurora.Tenant },
      (d) => d.auditEventRecorded,
    );
    let n = 0;
    await eventually(async () => {
      await t.gql(ada, `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`, {
        in: { tenantId: aurora.Tenant, slug: `bg-open-${++n}`, name: 'Open' },
      });
      await new Promise((resolve) => setTimeout(resolve, 100));
      return sub.values.some((v) => v.action === 'project.create');
    });

    expect(codesOf(await t.gql(max, CLOSE, { id: grant.id }))).toEqual(['FORBIDDEN']);
    expect(codesOf(await t.gql(otto, CLOSE, { id: grant.id }))).toEqual(['FORBIDDEN']);
    const closed = await t.gql(ada, CLOSE, { id: grant.id });
    expect(closed.body.errors).toBeUndefined();
    expect(closed.body.data!.closeBreakGlass).toMatchObject({ id: grant.id, active: false });

    const after = await readContent();
    expect(new Set(after.codes)).toEqual(new Set(['FORBIDDEN']));
    // The open subscription stops at once too: the next tenant event is not sent, nor audited as read.
    const readsAfterClose = (await breakGlassReads()).length;
    const seen = sub.values.length;
    await t.gql(ada, `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`, {
      in: { tenantId: aurora.Tenant, slug: 'bg-after-close', name: 'After close' },
    });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(sub.values.slice(seen).filter((v) => v.action === 'project.create')).toEqual([]);
    expect(JSON.stringify(sub.values)).not.toContain('bg-after-close');
    expect((await breakGlassReads()).length).toBe(readsAfterClose);
    sub.dispose();
    expect(codesOf(await t.gql(ada, CLOSE, { id: grant.id }))).toEqual(['CONFLICT']);
    const close = (await auditLog()).filter(
      (e) => e.action === 'breakglass.close' && e.outcome === 'SUCCESS',
    );
    expect(close).toHaveLength(1);
    expect(close[0]).toMatchObject({ actorName: 'Ada Admin', targetId: grant.id });

    // Content read in the very request that closes the grant does not leave: the answer is withheld, the
    // close stands.
    const fourth = await open('Fourth look: ticket INC-4714', 5);
    const readsBefore = (await breakGlassReads()).length;
    const closing = await t.gql(
      operator,
      `mutation($id: ID!) { closeBreakGlass(id: $id) { id tenant { members(first: 10) { edges { node { email } } } } } }`,
      { id: fourth.id },
    );
    expect(codesOf(closing)).toEqual(['FORBIDDEN']);
    expect(JSON.stringify(closing.body)).not.toContain('@aurora.example');
    expect((await breakGlassReads()).length).toBe(readsBefore);
    expect((await t.gql(otto, GRANTS, { id: aurora.Tenant })).body.data!.breakGlassGrants).toContainEqual({
      id: fourth.id,
      operatorName: 'Platform Admin',
      reason: fourth.reason,
      active: false,
    });

    // The operator closes their own, too.
    const third = await open('Third look: ticket INC-4713', 5);
    const own = await t.gql(operator, CLOSE, { id: third.id });
    expect(own.body.data!.closeBreakGlass).toMatchObject({ active: false });
    expect(new Set((await readContent()).codes)).toEqual(new Set(['FORBIDDEN']));
  });
});
