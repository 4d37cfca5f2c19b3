import type { Client } from 'graphql-ws';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../../helpers/database.js';
import { codesOf, type GqlResponse, startTestApp, type TestApp } from '../../helpers/harness.js';
import { eventually, liveSubscription, wsClient } from '../../helpers/live-subscription.js';

/**
 * A platform admin without a break-glass grant runs the platform: every tenant, its queues,
 * usage and jobs' metadata. What is inside a tenant (e-mails, audit details, job content)
 * and every change in it are refused, over HTTP and over graphql-ws.
 */
let t: TestApp;
let aurora: Record<string, string>;
let admin: string;
let platformJwt: string;
const clients: Client[] = [];

/** The errors on one path (e.g. ['tenant', 'members', 'edges', 0, 'node', 'email']), by code. */
function codesAt(res: GqlResponse, ...prefix: (string | number)[]): string[] {
  return (res.body.errors ?? [])
    .filter((e) => prefix.every((p, i) => e.path?.[i] === p))
    .map((e) => e.extensions?.code ?? 'NONE');
}

async function jobStates(): Promise<Record<string, string>> {
  const res = await t.gql(
    admin,
    `query($id: ID!) { jobs(tenantId: $id, first: 100) { edges { node { id state } } } }`,
    { id: aurora.Tenant },
  );
  expect(res.body.errors).toBeUndefined();
  return Object.fromEntries(
    res.body.data!.jobs.edges.map((e: { node: { id: string; state: string } }) => [e.node.id, e.node.state]),
  );
}

describeEachDialect('a platform admin without a break-glass grant', (dialect) => {
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    aurora = await t.idsOf('aurora-research');
    await t.idsOf('borealis-inference');
    admin = t.token('aurora-research', 'TENANT_ADMIN');
    platformJwt = await t.jwt('admin@fairway.example');
  });
  afterAll(async () => {
    for (const c of clients.splice(0)) await c.dispose();
    await t?.close();
  });

  for (const who of ['JWT', 'platform token'] as const) {
    it(`(${who}) sees every tenant, its queues, usage and jobs' metadata`, async () => {
      const bearer = who === 'JWT' ? platformJwt : t.token(null, 'PLATFORM_ADMIN');
      const res = await t.gql(
        bearer,
        `{ tenants(first: 10) { edges { node { slug queues { name pendingCount usage { flavor } } jobs(first: 10) { edges { node { name state gpus submittedByName } } } members(first: 10) { edges { node { name } } } } } } }`,
      );
      expect(res.body.errors).toBeUndefined();
      const tenants = res.body.data!.tenants.edges.map((e: any) => e.node);
      expect(tenants.map((x: any) => x.slug).sort()).toEqual(['aurora-research', 'borealis-inference']);
      for (const tenant of tenants) {
        expect(tenant.queues.length).toBeGreaterThan(0);
        expect(tenant.queues[0].pendingCount).not.toBeNull();
        expect(tenant.jobs.edges.length).toBeGreaterThan(0);
        expect(tenant.jobs.edges[0].node).toMatchObject({ name: `fixture job ${tenant.slug}`, gpus: 1 });
        expect(typeof tenant.jobs.edges[0].node.state).toBe('string');
      }
    });
  }

  it("gets FORBIDDEN (null) on members' e-mails, and the rest of the answer", async () => {
    const res = await t.gql(
      platformJwt,
      `query($slug: String!) { tenant(slug: $slug) { name members(first: 10) { edges { node { name email } } } } }`,
      { slug: 'aurora-research' },
    );
    const members = res.body.data!.tenant.members.edges.map((e: any) => e.node);
    expect(members.length).toBe(4);
    expect(members.every((m: any) => m.email === null && typeof m.name === 'string')).toBe(true);
    expect(codesAt(res, 'tenant', 'members')).toEqual(['FORBIDDEN', 'FORBIDDEN', 'FORBIDDEN', 'FORBIDDEN']);
    expect(JSON.stringify(res.body)).not.toContain('@aurora.example');
  });

  it("gets FORBIDDEN on a tenant event's input and actor e-mail (platform log), and on the tenant's audit log itself", async () => {
    await t.gql(admin, `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`, {
      in: { tenantId: aurora.Tenant, slug: 'split-probe', name: 'Split probe' },
    });
    const res = await t.gql(
      platformJwt,
      `{ platformAuditEvents(last: 50) { edges { node { action actorName actorEmail input } } } }`,
    );
    const created = res.body
      .data!.platformAuditEvents.edges.map((e: any) => e.node)
      .find((e: any) => e.action === 'project.create');
    expect(created).toMatchObject({ actorName: 'Ada Admin', actorEmail: null, input: null });
    expect(codesOf(res).length).toBeGreaterThan(0);
    expect(new Set(codesOf(res))).toEqual(new Set(['FORBIDDEN']));
    expect(JSON.stringify(res.body)).not.toContain('split-probe');

    const log = await t.gql(
      platformJwt,
      `query($id: ID!) { auditEvents(tenantId: $id, first: 5) { edges { node { action } } } }`,
      { id: aurora.Tenant },
    );
    expect(codesOf(log)).toEqual(['FORBIDDEN']);
    const one = await t.gql(
      platformJwt,
      `query($id: ID!) { node(id: $id) { ... on AuditEvent { action input } } }`,
      { id: aurora.AuditEvent },
    );
    expect(codesOf(one)).toEqual(['FORBIDDEN']);
    expect(one.body.data?.node ?? null).toBeNull();
  });

  it("gets FORBIDDEN (null) on a job's container", async () => {
    const res = await t.gql(
      platformJwt,
      `query($id: ID!) { node(id: $id) { ... on Job { name state container { image } } } }`,
      { id: aurora.Job },
    );
    expect(res.body.data!.node).toMatchObject({ name: 'fixture job aurora-research', container: null });
    expect(codesOf(res)).toEqual(['FORBIDDEN']);
  });

  it('is refused every change inside a tenant (FORBIDDEN), and nothing changes', async () => {
    const before = await t.rowCounts({ ignoreAudit: true });
    const states = await jobStates();
    const attempts = [
      [
        `mutation($in: AddMemberInput!) { addMember(input: $in) { id } }`,
        { in: { tenantId: aurora.Tenant, email: 'mallory@evil.example', role: 'TENANT_ADMIN' } },
      ],
      [
        `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
        { in: { tenantId: aurora.Tenant, slug: 'by-platform', name: 'By platform' } },
      ],
      [
        `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`,
        { in: { queueId: aurora.Queue, name: 'platform job', podSets: [{ gpusPerPod: 1 }] } },
      ],
      [`mutation($id: ID!) { cancelJob(id: $id) { state } }`, { id: aurora.Job }],
    ] as const;
    for (const bearer of [platformJwt, t.token(null, 'PLATFORM_ADMIN')]) {
      for (const [query, variables] of attempts) {
        const res = await t.gql(bearer, query, variables);
        expect(codesOf(res), query).toEqual(['FORBIDDEN']);
        expect(res.body.data ?? null).toBeNull();
      }
    }
    expect(await t.rowCounts({ ignoreAudit: true })).toEqual(before);
    expect(await jobStates()).toEqual(states);
  });

  it('over graphql-ws: the tenant audit subscription is refused, and no event arrives', async () => {
    const client = wsClient(t.url, platformJwt);
    clients.push(client);
    const sub = liveSubscription(
      client,
      `subscription($id: ID!) { auditEventRecorded(tenantId: $id) { action input } }`,
      { id: aurora.Tenant },
      (d) => d.auditEventRecorded,
    );
    await eventually(async () => sub.errors.length > 0);
    expect(JSON.stringify(sub.errors)).toContain('FORBIDDEN');
    await t.gql(admin, `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`, {
      in: { tenantId: aurora.Tenant, slug: 'split-ws', name: 'Split ws' },
    });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sub.values).toEqual([]);
    sub.dispose();
  });
  it("a member's refused change that named only an id is filed in the tenant's log, not the platform's (no e-mail or target there)", async () => {
    const max = t.token('aurora-research', 'MEMBER');
    const refused = await t.gql(max, `mutation($id: ID!) { removeMember(id: $id) { removedMemberId } }`, {
      id: aurora.AdminMember,
    });
    expect(codesOf(refused)).toEqual(['FORBIDDEN']);
    const auditorLog = await t.gql(
      t.token('aurora-research', 'AUDITOR'),
      `query($id: ID!) { auditEvents(tenantId: $id, last: 20) { edges { node { action outcome actorName } } } }`,
      { id: aurora.Tenant },
    );
    const tenantEvents = auditorLog.body.data!.auditEvents.edges.map((e: any) => e.node);
    expect(
      tenantEvents.some((e: any) => e.action === 'member.remove' && e.outcome === 'DENIED'),
      JSON.stringify(auditorLog.body),
    ).toBe(true);
    const platformLog = await t.gql(
      platformJwt,
      `{ platformAuditEvents(last: 200) { edges { node { action outcome actorEmail input } } } }`,
    );
    const text = JSON.stringify(platformLog.body.data);
    expect(text).not.toContain('max@aurora.example');
    const denied = platformLog.body
      .data!.platformAuditEvents.edges.map((e: any) => e.node)
      .filter((e: any) => e.action === 'member.remove' && e.outcome === 'DENIED');
    expect(denied.length).toBeGreaterThan(0);
    for (const event of denied) expect(event).toMatchObject({ actorEmail: null, input: null });
  });
  it('sets a tenant up with its first admin and a default project, then stays out of it', async () => {
    const created = await t.gql(
      platformJwt,
      `mutation($in: CreateTenantInput!) { createTenant(input: $in) { id slug defaultProject { slug isDefault } } }`,
      {
        in: { slug: 'cygnus-labs', name: 'Cygnus Labs', adminEmail: 'Cyd@Cygnus.example' },
      },
    );
    expect(created.body.errors, JSON.stringify(created.body)).toBeUndefined();
    const tenant = created.body.data!.createTenant;
    expect(tenant.defaultProject).toEqual({ slug: 'default', isDefault: true });
    const cyd = await t.jwt('cyd@cygnus.example');
    const own = await t.gql(cyd, `{ viewer { memberships { role tenant { slug } } } }`);
    expect(own.body.data!.viewer.memberships).toEqual([
      { role: 'TENANT_ADMIN', tenant: { slug: 'cygnus-labs' } },
    ]);
    // The first admin runs it; the platform admin cannot add people to it without a grant.
    const added = await t.gql(cyd, `mutation($in: AddMemberInput!) { addMember(input: $in) { role } }`, {
      in: { tenantId: tenant.id, email: 'cy2@cygnus.example', role: 'MEMBER' },
    });
    expect(added.body.errors, JSON.stringify(added.body)).toBeUndefined();
    const refused = await t.gql(
      platformJwt,
      `mutation($in: AddMemberInput!) { addMember(input: $in) { role } }`,
      { in: { tenantId: tenant.id, email: 'mallory@evil.example', role: 'TENANT_ADMIN' } },
    );
    expect(codesOf(refused)).toEqual(['FORBIDDEN']);
  });
});
