import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codesOf, startTestApp, type TestApp } from './helpers/harness.js';

type Caller = 'anonymous' | 'platformAdmin' | 'tenantAdmin' | 'member' | 'viewer' | 'auditor' | 'outsider';
type Expect = 'OK' | 'UNAUTHENTICATED' | 'FORBIDDEN' | 'NOT_FOUND';

const CALLER_EMAILS: Record<Exclude<Caller, 'anonymous'>, string> = {
  platformAdmin: 'admin@fairway.example',
  tenantAdmin: 'ada@aurora.example',
  member: 'max@aurora.example',
  viewer: 'vera@aurora.example',
  auditor: 'otto@aurora.example',
  outsider: 'bea@borealis.example',
};

let t: TestApp;
let ids: Record<string, string>;
const bearers = {} as Record<Caller, string | null>;
let serial = 0;

async function asPlatform<T = any>(query: string, variables: Record<string, unknown>): Promise<T> {
  const res = await t.gql(bearers.platformAdmin, query, variables);
  if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
  return res.body.data as T;
}

const PLATFORM_ONLY: Record<Caller, Expect> = { anonymous: 'UNAUTHENTICATED', platformAdmin: 'OK', tenantAdmin: 'FORBIDDEN', member: 'FORBIDDEN', viewer: 'FORBIDDEN', auditor: 'FORBIDDEN', outsider: 'FORBIDDEN' };
const JOB_WRITERS: Record<Caller, Expect> = { anonymous: 'UNAUTHENTICATED', platformAdmin: 'OK', tenantAdmin: 'OK', member: 'OK', viewer: 'FORBIDDEN', auditor: 'FORBIDDEN', outsider: 'NOT_FOUND' };

/** Each mutation with the setup its allowed callers need, and who may call it. */
const MUTATIONS: {
  name: string;
  query: string;
  variables: () => Promise<Record<string, unknown>>;
  expect: Record<Caller, Expect>;
}[] = [
  {
    name: 'createTenant',
    query: `mutation($in: CreateTenantInput!) { createTenant(input: $in) { id } }`,
    variables: async () => ({ in: { slug: `t-${++serial}`, name: 'New tenant' } }),
    expect: { anonymous: 'UNAUTHENTICATED', platformAdmin: 'OK', tenantAdmin: 'FORBIDDEN', member: 'FORBIDDEN', viewer: 'FORBIDDEN', auditor: 'FORBIDDEN', outsider: 'FORBIDDEN' },
  },
  {
    name: 'updateTenant',
    query: `mutation($in: UpdateTenantInput!) { updateTenant(input: $in) { id } }`,
    variables: async () => ({ in: { id: ids.Tenant, name: 'Aurora Research' } }),
    expect: { anonymous: 'UNAUTHENTICATED', platformAdmin: 'OK', tenantAdmin: 'FORBIDDEN', member: 'FORBIDDEN', viewer: 'FORBIDDEN', auditor: 'FORBIDDEN', outsider: 'FORBIDDEN' },
  },
  {
    name: 'addMember',
    query: `mutation($in: AddMemberInput!) { addMember(input: $in) { id } }`,
    variables: async () => ({ in: { tenantId: ids.Tenant, email: `new-${++serial}@aurora.example`, role: 'VIEWER' } }),
    expect: { anonymous: 'UNAUTHENTICATED', platformAdmin: 'OK', tenantAdmin: 'OK', member: 'FORBIDDEN', viewer: 'FORBIDDEN', auditor: 'FORBIDDEN', outsider: 'NOT_FOUND' },
  },
  {
    // Only the person themself (ids.Member is the member's own membership).
    name: 'acceptMembership',
    query: `mutation($id: ID!) { acceptMembership(id: $id) { id } }`,
    variables: async () => ({ id: ids.Member }),
    expect: { anonymous: 'UNAUTHENTICATED', platformAdmin: 'FORBIDDEN', tenantAdmin: 'FORBIDDEN', member: 'OK', viewer: 'FORBIDDEN', auditor: 'FORBIDDEN', outsider: 'NOT_FOUND' },
  },
  {
    name: 'changeMemberRole',
    query: `mutation($id: ID!) { changeMemberRole(id: $id, role: MEMBER) { id } }`,
    variables: async () => ({ id: ids.Member }),
    expect: { anonymous: 'UNAUTHENTICATED', platformAdmin: 'OK', tenantAdmin: 'OK', member: 'FORBIDDEN', viewer: 'FORBIDDEN', auditor: 'FORBIDDEN', outsider: 'NOT_FOUND' },
  },
  {
    name: 'removeMember',
    query: `mutation($id: ID!) { removeMember(id: $id) { removedMemberId } }`,
    variables: async () => {
      const data = await asPlatform(`mutation($in: AddMemberInput!) { addMember(input: $in) { id } }`, { in: { tenantId: ids.Tenant, email: `leaver-${++serial}@aurora.example`, role: 'VIEWER' } });
      return { id: data.addMember.id };
    },
    expect: { anonymous: 'UNAUTHENTICATED', platformAdmin: 'OK', tenantAdmin: 'OK', member: 'FORBIDDEN', viewer: 'FORBIDDEN', auditor: 'FORBIDDEN', outsider: 'NOT_FOUND' },
  },
  {
    name: 'createProject',
    query: `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
    variables: async () => ({ in: { tenantId: ids.Tenant, slug: `p-${++serial}`, name: 'Project' } }),
    expect: { anonymous: 'UNAUTHENTICATED', platformAdmin: 'OK', tenantAdmin: 'OK', member: 'FORBIDDEN', viewer: 'FORBIDDEN', auditor: 'FORBIDDEN', outsider: 'NOT_FOUND' },
  },
  {
    name: 'archiveProject',
    query: `mutation($id: ID!) { archiveProject(id: $id) { id status } }`,
    variables: async () => {
      const data = await asPlatform(`mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`, { in: { tenantId: ids.Tenant, slug: `a-${++serial}`, name: 'To archive' } });
      return { id: data.createProject.id };
    },
    expect: { anonymous: 'UNAUTHENTICATED', platformAdmin: 'OK', tenantAdmin: 'OK', member: 'FORBIDDEN', viewer: 'FORBIDDEN', auditor: 'FORBIDDEN', outsider: 'NOT_FOUND' },
  },
  {
    name: 'createApiToken',
    query: `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { secret } }`,
    variables: async () => ({ in: { tenantId: ids.Tenant, name: `tok-${++serial}`, scopes: ['TENANT_READ'] } }),
    // The platform admin is not a member of aurora: a tenant token acts as a membership.
    expect: { anonymous: 'UNAUTHENTICATED', platformAdmin: 'FORBIDDEN', tenantAdmin: 'OK', member: 'OK', viewer: 'FORBIDDEN', auditor: 'FORBIDDEN', outsider: 'NOT_FOUND' },
  },
  {
    name: 'revokeApiToken (a token of the tenant admin)',
    query: `mutation($id: ID!) { revokeApiToken(id: $id) { id revokedAt } }`,
    variables: async () => {
      const res = await t.gql(bearers.tenantAdmin, `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { token { id } } }`, { in: { tenantId: ids.Tenant, name: `victim-${++serial}`, scopes: ['TENANT_READ'] } });
      return { id: res.body.data!.createApiToken.token.id };
    },
    // Members cannot see other people's tokens, so for them it does not exist.
    expect: { anonymous: 'UNAUTHENTICATED', platformAdmin: 'OK', tenantAdmin: 'OK', member: 'NOT_FOUND', viewer: 'NOT_FOUND', auditor: 'NOT_FOUND', outsider: 'NOT_FOUND' },
  },
  {
    name: 'createFlavor',
    query: `mutation($in: CreateFlavorInput!) { createFlavor(input: $in) { id } }`,
    variables: async () => ({ in: { name: `f-${++serial}`, kind: 'GPU', pricePerUnitHour: 1 } }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'createNodePool',
    query: `mutation($in: CreateNodePoolInput!) { createNodePool(input: $in) { id } }`,
    variables: async () => ({ in: { name: `pool-${++serial}`, nodes: [{ name: `n-${serial}`, flavor: 'h100-80g', gpus: 8, cpuMillis: 64000, memoryMiB: 65536 }] } }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'createCohort',
    query: `mutation($in: CreateCohortInput!) { createCohort(input: $in) { id } }`,
    variables: async () => ({ in: { name: `c-${++serial}` } }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'createQueue',
    query: `mutation($in: CreateQueueInput!) { createQueue(input: $in) { id } }`,
    variables: async () => ({ in: { name: `q-${++serial}`, tenantId: ids.Tenant, quotas: [{ flavor: 'h100-80g', nominal: 0 }] } }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'updateQueue',
    query: `mutation($in: UpdateQueueInput!) { updateQueue(input: $in) { id } }`,
    variables: async () => ({ in: { id: ids.Queue, weight: 1 } }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'setQuota',
    query: `mutation($id: ID!) { setQuota(queueId: $id, quota: { flavor: "h100-80g", nominal: 16 }) { id } }`,
    variables: async () => ({ id: ids.Queue }),
    expect: PLATFORM_ONLY,
  },
  {
    name: 'setProjectQueue',
    query: `mutation($p: ID!, $q: ID) { setProjectQueue(projectId: $p, queueId: $q) { id } }`,
    variables: async () => ({ p: ids.Project, q: ids.Queue }),
    expect: { anonymous: 'UNAUTHENTICATED', platformAdmin: 'OK', tenantAdmin: 'OK', member: 'FORBIDDEN', viewer: 'FORBIDDEN', auditor: 'FORBIDDEN', outsider: 'NOT_FOUND' },
  },
  {
    name: 'submitJob',
    query: `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`,
    variables: async () => ({ in: { queueId: ids.Queue, name: `job-${++serial}`, podSets: [{ gpusPerPod: 1 }], expectedDurationSeconds: 60 } }),
    expect: JOB_WRITERS,
  },
  {
    name: 'previewJob',
    query: `mutation($in: SubmitJobInput!) { previewJob(input: $in) { admissible } }`,
    variables: async () => ({ in: { queueId: ids.Queue, name: 'what-if', podSets: [{ gpusPerPod: 1 }] } }),
    expect: JOB_WRITERS,
  },
  {
    name: 'cancelJob',
    query: `mutation($id: ID!) { cancelJob(id: $id) { state } }`,
    variables: async () => {
      const data = await asPlatform(`mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, { in: { queueId: ids.Queue, name: `to-cancel-${++serial}`, podSets: [{ count: 8, gpusPerPod: 8 }], expectedDurationSeconds: 60 } });
      return { id: data.submitJob.id };
    },
    expect: JOB_WRITERS,
  },
];

beforeAll(async () => {
  t = await startTestApp();
  ids = await t.idsOf('aurora-research');
  bearers.anonymous = null;
  for (const [caller, email] of Object.entries(CALLER_EMAILS)) bearers[caller as Caller] = await t.jwt(email);
});
afterAll(async () => {
  await t?.close();
});

describe('role matrix: who may call each mutation', () => {
  const cases = MUTATIONS.flatMap((m) => (Object.keys(m.expect) as Caller[]).map((caller) => ({ mutation: m.name, caller, expected: m.expect[caller] })));
  it.each(cases)('$mutation as $caller → $expected', async ({ mutation, caller, expected }) => {
    const spec = MUTATIONS.find((m) => m.name === mutation)!;
    const variables = await spec.variables();
    const before = await t.rowCounts({ ignoreAudit: true });
    const res = await t.gql(bearers[caller], spec.query, variables);
    if (expected === 'OK') {
      expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
    } else {
      expect(codesOf(res), JSON.stringify(res.body)).toEqual([expected]);
      expect(await t.rowCounts({ ignoreAudit: true })).toEqual(before);
    }
  });

  it('covers every mutation in the schema', async () => {
    const { schema } = await import('../schema/index.js');
    const names = Object.keys(schema.getMutationType()!.getFields()).sort();
    const covered = [...new Set(MUTATIONS.map((m) => m.name.split(' ')[0]))].sort();
    expect(covered).toEqual(names);
  });

  it('refused attempts are audited as DENIED, under no tenant when the caller is an outsider', async () => {
    const res = await t.gql(bearers.platformAdmin, `{ platformAuditEvents(last: 100) { edges { node { action outcome errorCode actorEmail input } } } }`);
    const events = res.body.data!.platformAuditEvents.edges.map((e: any) => e.node);
    expect(events.some((e: any) => e.outcome === 'DENIED' && e.actorEmail === 'bea@borealis.example' && e.action === 'project.create')).toBe(true);
    // Read by the tenant admin: only admins (and each actor) see actors' e-mails.
    const auroraLog = await t.gql(bearers.tenantAdmin, `query($id: ID!) { auditEvents(tenantId: $id, last: 200) { edges { node { actorEmail outcome } } } }`, { id: ids.Tenant });
    const auroraEvents = auroraLog.body.data!.auditEvents.edges.map((e: any) => e.node);
    expect(auroraEvents.some((e: any) => e.actorEmail === 'bea@borealis.example')).toBe(false);
    expect(auroraEvents.some((e: any) => e.outcome === 'DENIED' && e.actorEmail === 'max@aurora.example')).toBe(true);
  });

  it('a tenant keeps its last admin', async () => {
    const res = await t.gql(bearers.tenantAdmin, `mutation($id: ID!) { changeMemberRole(id: $id, role: VIEWER) { id } }`, { id: ids.AdminMember });
    expect(codesOf(res)).toEqual(['CONFLICT']);
  });

  it('field rules: member e-mails for admins and self only; audit log for auditors and admins', async () => {
    const q = `query($id: ID!) { members(tenantId: $id) { edges { node { email isViewer } } } }`;
    const asMember = await t.gql(bearers.member, q, { id: ids.Tenant });
    const nodes = asMember.body.data!.members.edges.map((e: any) => e.node);
    expect(nodes.filter((n: any) => n.email !== null)).toEqual([{ email: 'max@aurora.example', isViewer: true }]);
    expect(new Set(codesOf(asMember))).toEqual(new Set(['FORBIDDEN']));
    const asAdmin = await t.gql(bearers.tenantAdmin, q, { id: ids.Tenant });
    expect(asAdmin.body.errors).toBeUndefined();
    const audit = `query($id: ID!) { auditEvents(tenantId: $id) { edges { node { action } } } }`;
    expect(codesOf(await t.gql(bearers.viewer, audit, { id: ids.Tenant }))).toEqual(['FORBIDDEN']);
    expect((await t.gql(bearers.auditor, audit, { id: ids.Tenant })).body.errors).toBeUndefined();
  });
});
