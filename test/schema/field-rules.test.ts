import type { Client } from 'graphql-ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codesOf, type GqlResponse, startTestApp, type TestApp } from '../helpers/harness.js';
import { liveSubscription, wsClient } from '../helpers/live-subscription.js';

/**
 * Field rules mean the same on every path: a query, a nested field, a subscription event.
 * Usage numbers need the usage:read scope (not only tenant:read); a person's e-mail is
 * shown to tenant admins and the person themself, through Member.email and
 * AuditEvent.actorEmail alike. A field the caller may not read is null with FORBIDDEN.
 */
let t: TestApp;
let ids: Record<string, string>;
let adaSession: string;
let withoutUsage: string;
let withUsage: string;
const clients: Client[] = [];
const USAGE_FIELDS = 'usage { flavor used borrowed lent } weightedShare pendingCount admittedCount';

async function mint(scopes: string[]): Promise<string> {
  const res = await t.gql(
    adaSession,
    `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { secret } }`,
    { in: { tenantId: ids.Tenant, name: `rules-${scopes.join('-')}`, scopes } },
  );
  expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
  return res.body.data!.createApiToken.secret;
}

/** Paths (as joined strings) of the FORBIDDEN errors of a response. */
function forbiddenPaths(res: GqlResponse): string[] {
  return (res.body.errors ?? [])
    .filter((e) => e.extensions?.code === 'FORBIDDEN')
    .map((e) => (e.path ?? []).join('.'));
}

beforeAll(async () => {
  t = await startTestApp();
  ids = await t.idsOf('aurora-research');
  adaSession = await t.jwt('ada@aurora.example');
  withoutUsage = await mint(['TENANT_READ', 'JOBS_READ']);
  withUsage = await mint(['TENANT_READ', 'JOBS_READ', 'USAGE_READ']);
});
afterAll(async () => {
  for (const client of clients) await client.dispose();
  await t?.close();
});

describe('usage:read', () => {
  it('a token without USAGE_READ reads the queue but none of its usage, on the queue, the queue list and nested under a job', async () => {
    const paths = {
      node: `query($id: ID!) { node(id: $id) { ... on Queue { name ${USAGE_FIELDS} } } }`,
      list: `{ queues { name ${USAGE_FIELDS} } }`,
      nested: `query($id: ID!) { node(id: $id) { ... on Job { name queue { name ${USAGE_FIELDS} } } } }`,
      tenant: `{ tenant(slug: "aurora-research") { queues { name ${USAGE_FIELDS} } } }`,
    };
    for (const [name, query] of Object.entries(paths)) {
      const variables = name === 'node' ? { id: ids.Queue } : name === 'nested' ? { id: ids.Job } : {};
      const refused = await t.gql(withoutUsage, query, variables);
      const text = JSON.stringify(refused.body);
      expect(text, name).toContain('aurora-training'); // the queue itself is readable
      expect(
        codesOf(refused).every((c) => c === 'FORBIDDEN'),
        text,
      ).toBe(true);
      expect(
        forbiddenPaths(refused)
          .map((p) => p.split('.').at(-1))
          .sort(),
        text,
      ).toEqual(['admittedCount', 'pendingCount', 'usage', 'weightedShare']);
      for (const field of ['usage', 'weightedShare', 'pendingCount', 'admittedCount'])
        expect(text, `${name}: ${field}`).toContain(`"${field}":null`);

      const allowed = await t.gql(withUsage, query, variables);
      expect(allowed.body.errors, JSON.stringify(allowed.body)).toBeUndefined();
      expect(JSON.stringify(allowed.body)).toContain('"flavor":"h100-80g"');
    }
  });

  it('queueUpdated events carry no usage to a token without USAGE_READ', async () => {
    const selection = `subscription($id: ID!) { queueUpdated(id: $id) { name pendingCount usage { flavor used } } }`;
    const client = wsClient(t.url, withoutUsage);
    clients.push(client);
    const refused = liveSubscription(client, selection, { id: ids.Queue }, (data) => data.queueUpdated);
    const allowedClient = wsClient(t.url, withUsage);
    clients.push(allowedClient);
    const allowed = liveSubscription(
      allowedClient,
      selection,
      { id: ids.Queue },
      (data) => data.queueUpdated,
    );
    await new Promise((r) => setTimeout(r, 300));
    const submit = await t.gql(
      t.token('aurora-research', 'MEMBER'),
      `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`,
      {
        in: {
          queueId: ids.Queue,
          name: 'usage-event',
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: 1e5,
        },
      },
    );
    expect(submit.body.errors).toBeUndefined();
    await allowed.until((values) => values.length > 0);
    const deadline = Date.now() + 20_000;
    while (refused.values.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    refused.dispose();
    allowed.dispose();
    expect(refused.values.length, JSON.stringify(refused.errors)).toBeGreaterThan(0);
    for (const value of refused.values)
      expect(value).toMatchObject({ name: 'aurora-training', pendingCount: null, usage: null });
    expect(refused.errors.map((e) => (e as { extensions?: { code?: string } }).extensions?.code)).toContain(
      'FORBIDDEN',
    );
    expect(allowed.values[0]!.pendingCount).toEqual(expect.any(Number));
  });
});

describe('one rule for e-mail addresses', () => {
  it("an auditor reads the audit log but no other member's e-mail through actorEmail; tenant admins and the actor do", async () => {
    const made = await t.gql(
      adaSession,
      `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
      { in: { tenantId: ids.Tenant, slug: 'email-rule', name: 'E-mail rule' } },
    );
    expect(made.body.errors).toBeUndefined();
    const auditor = t.token('aurora-research', 'AUDITOR');
    // A refused attempt of the auditor is audited in the tenant: their own address stays visible to them.
    const refusedAttempt = await t.gql(
      auditor,
      `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
      { in: { tenantId: ids.Tenant, slug: 'not-allowed', name: 'x' } },
    );
    expect(codesOf(refusedAttempt)).toEqual(['FORBIDDEN']);
    const log = `query($id: ID!) { auditEvents(tenantId: $id, last: 50) { edges { node { action outcome actorName actorEmail } } } }`;

    const seenByAuditor = await t.gql(auditor, log, { id: ids.Tenant });
    const rows = seenByAuditor.body.data!.auditEvents.edges.map((e: any) => e.node);
    const adas = rows.filter(
      (r: any) => r.action === 'project.create' && r.outcome === 'SUCCESS' && r.actorName === 'Ada Admin',
    );
    expect(adas.length).toBeGreaterThan(0);
    for (const row of adas) expect(row.actorEmail).toBeNull();
    expect(JSON.stringify(seenByAuditor.body)).not.toContain('ada@aurora.example');
    expect(forbiddenPaths(seenByAuditor).every((p) => p.endsWith('actorEmail'))).toBe(true);
    expect(rows.some((r: any) => r.outcome === 'DENIED' && r.actorEmail === 'otto@aurora.example')).toBe(
      true,
    );

    const seenByAdmin = await t.gql(adaSession, log, { id: ids.Tenant });
    expect(seenByAdmin.body.errors).toBeUndefined();
    expect(
      seenByAdmin.body.data!.auditEvents.edges.some((e: any) => e.node.actorEmail === 'ada@aurora.example'),
    ).toBe(true);
  });

  it('the same rule on the live audit stream and on Member.email', async () => {
    const auditor = t.token('aurora-research', 'AUDITOR');
    const client = wsClient(t.url, auditor);
    clients.push(client);
    const stream = liveSubscription(
      client,
      `subscription($id: ID!) { auditEventRecorded(tenantId: $id) { action actorName actorEmail } }`,
      { id: ids.Tenant },
      (data) => data.auditEventRecorded,
    );
    await new Promise((r) => setTimeout(r, 300));
    await t.gql(adaSession, `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`, {
      in: { tenantId: ids.Tenant, slug: 'email-rule-live', name: 'Live' },
    });
    const deadline = Date.now() + 20_000;
    while (stream.values.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    stream.dispose();
    expect(stream.values[0]).toMatchObject({
      action: 'project.create',
      actorName: 'Ada Admin',
      actorEmail: null,
    });
    expect(JSON.stringify(stream.errors)).not.toContain('ada@aurora.example');

    const members = await t.gql(
      auditor,
      `{ tenant(slug: "aurora-research") { members { edges { node { name email isViewer } } } } }`,
    );
    const nodes = members.body.data!.tenant.members.edges.map((e: any) => e.node);
    expect(nodes.find((n: any) => n.isViewer).email).toBe('otto@aurora.example');
    for (const other of nodes.filter((n: any) => !n.isViewer)) expect(other.email).toBeNull();
    expect(new Set(codesOf(members))).toEqual(new Set(['FORBIDDEN']));
  });
});
