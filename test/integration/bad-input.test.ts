import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codesOf, startTestApp, type TestApp } from '../helpers/harness.js';

let t: TestApp;
let admin: string;
let platform: string;
let ids: Record<string, string>;
beforeAll(async () => {
  t = await startTestApp();
  ids = await t.idsOf('aurora-research');
  admin = await t.jwt('ada@aurora.example');
  platform = await t.jwt('admin@fairway.example');
});
afterAll(async () => {
  await t?.close();
});

/** Each case: a request that must be refused with a clear message, writing nothing. */
const createProject = `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`;
describe('bad input is refused clearly and changes nothing', () => {
  const cases: {
    name: string;
    as: () => string;
    query: string;
    variables: () => Record<string, unknown>;
    code: string;
    message: RegExp;
  }[] = [
    {
      name: 'malformed global ID',
      as: () => admin,
      query: `query($id: ID!) { node(id: $id) { id } }`,
      variables: () => ({ id: 'not-an-id!!' }),
      code: 'BAD_USER_INPUT',
      message: /not a valid ID/,
    },
    {
      name: 'base64 that is not a global ID',
      as: () => admin,
      query: `query($id: ID!) { node(id: $id) { id } }`,
      variables: () => ({ id: Buffer.from('garbage').toString('base64') }),
      code: 'BAD_USER_INPUT',
      message: /not a valid ID/,
    },
    {
      name: 'ID of the wrong type',
      as: () => admin,
      query: `mutation($id: ID!) { archiveProject(id: $id) { id } }`,
      variables: () => ({ id: ids.Tenant }),
      code: 'NOT_FOUND',
      message: /Project not found/,
    },
    {
      name: 'malformed ID inside an input',
      as: () => admin,
      query: createProject,
      variables: () => ({ in: { tenantId: '%%%', slug: 'ok', name: 'ok' } }),
      code: 'BAD_USER_INPUT',
      message: /not a valid ID/,
    },
    {
      name: 'oversized name',
      as: () => admin,
      query: createProject,
      variables: () => ({ in: { tenantId: ids.Tenant, slug: 'ok', name: 'x'.repeat(201) } }),
      code: 'BAD_USER_INPUT',
      message: /name: must be at most 200 characters/,
    },
    {
      name: 'oversized description',
      as: () => admin,
      query: createProject,
      variables: () => ({
        in: { tenantId: ids.Tenant, slug: 'ok', name: 'ok', description: 'x'.repeat(2001) },
      }),
      code: 'BAD_USER_INPUT',
      message: /description: must be at most 2000/,
    },
    {
      name: 'slug with capitals and spaces',
      as: () => admin,
      query: createProject,
      variables: () => ({ in: { tenantId: ids.Tenant, slug: 'Not A Slug', name: 'ok' } }),
      code: 'BAD_USER_INPUT',
      message: /slug: use 1-63 lowercase letters/,
    },
    {
      name: 'empty name',
      as: () => admin,
      query: createProject,
      variables: () => ({ in: { tenantId: ids.Tenant, slug: 'ok', name: '   ' } }),
      code: 'BAD_USER_INPUT',
      message: /name: must not be empty/,
    },
    {
      name: 'duplicate project slug',
      as: () => admin,
      query: createProject,
      variables: () => ({ in: { tenantId: ids.Tenant, slug: 'llm-pretraining', name: 'dup' } }),
      code: 'CONFLICT',
      message: /already has a project with slug "llm-pretraining"/,
    },
    {
      name: 'duplicate tenant slug',
      as: () => platform,
      query: `mutation { createTenant(input: { slug: "borealis-inference", name: "Dup" }) { id } }`,
      variables: () => ({}),
      code: 'CONFLICT',
      message: /already exists/,
    },
    {
      name: 'unknown enum value (variable)',
      as: () => platform,
      query: `mutation($in: CreateTenantInput!) { createTenant(input: $in) { id } }`,
      variables: () => ({ in: { slug: 'enum-x', name: 'x', tier: 'PLATINUM' } }),
      code: 'BAD_USER_INPUT',
      message: /PLATINUM/,
    },
    {
      name: 'bad e-mail',
      as: () => admin,
      query: `mutation($in: AddMemberInput!) { addMember(input: $in) { id } }`,
      variables: () => ({ in: { tenantId: ids.Tenant, email: 'not-an-email', role: 'VIEWER' } }),
      code: 'BAD_USER_INPUT',
      message: /email: must be an e-mail address/,
    },
    {
      name: 'token lifetime out of range',
      as: () => admin,
      query: `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { secret } }`,
      variables: () => ({
        in: { tenantId: ids.Tenant, name: 'x', scopes: ['TENANT_READ'], expiresInDays: 9999 },
      }),
      code: 'BAD_USER_INPUT',
      message: /expiresInDays: must be at most 365 days/,
    },
    {
      name: 'repeated scopes',
      as: () => admin,
      query: `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { secret } }`,
      variables: () => ({ in: { tenantId: ids.Tenant, name: 'x', scopes: ['TENANT_READ', 'TENANT_READ'] } }),
      code: 'BAD_USER_INPUT',
      message: /list each scope once/,
    },
    {
      name: 'a cursor from elsewhere',
      as: () => admin,
      query: `query($id: ID!) { projects(tenantId: $id, after: "bogus") { edges { cursor } } }`,
      variables: () => ({ id: ids.Tenant }),
      code: 'BAD_USER_INPUT',
      message: /not a cursor from this list/,
    },
    {
      name: 'negative page size',
      as: () => admin,
      query: `query($id: ID!) { projects(tenantId: $id, first: -1) { edges { cursor } } }`,
      variables: () => ({ id: ids.Tenant }),
      code: 'BAD_USER_INPUT',
      message: /first/,
    },
  ];

  it.each(cases)('$name → $code', async ({ as, query, variables, code, message }) => {
    const before = await t.rowCounts({ ignoreAudit: true });
    const res = await t.gql(as(), query, variables());
    expect(codesOf(res), JSON.stringify(res.body)).toContain(code);
    const text = res.body.errors!.map((e) => e.message).join(' | ');
    expect(text).toMatch(message);
    expect(JSON.stringify(res.body)).not.toMatch(/\s+at\s+\S+\s+\(|node_modules|stack/i);
    expect(await t.rowCounts({ ignoreAudit: true })).toEqual(before);
  });

  it('an unknown enum value in the query text is a validation error naming the value', async () => {
    const res = await t.gql(
      platform,
      `mutation { createTenant(input: { slug: "enum-y", name: "y", tier: PLATINUM }) { id } }`,
    );
    expect(res.status).toBe(400);
    expect(res.body.errors![0]!.message).toMatch(/PLATINUM/);
  });
});
