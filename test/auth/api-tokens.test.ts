import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashApiTokenSecret } from '../../src/auth/api-token-secret.js';
import { ApiToken } from '../../src/persistence/tenancy/entities.js';
import { TENANT_FILTER } from '../../src/persistence/tenant-filter.js';
import { codesOf, type GqlResponse, startTestApp, type TestApp } from '../helpers/harness.js';

/** API tokens (`fwt_…`): refusal of bad ones, secret handling, who may mint what, visibility. */
let t: TestApp;
let aurora: { Tenant: string } & Record<string, string>;

beforeAll(async () => {
  t = await startTestApp();
  aurora = (await t.idsOf('aurora-research')) as typeof aurora;
});
afterAll(async () => {
  await t?.close();
});

const CREATE = `mutation($in: CreateApiTokenInput!) {
  createApiToken(input: $in) { secret token { id prefix name scopes expiresAt lastUsedAt revokedAt isPlatformToken } }
}`;
const VIEWER = `{ viewer { email authKind tokenScopes memberships { role } } }`;
const DAY = 86_400_000;

async function session(email: string, roles?: string[]): Promise<string> {
  return t.jwt(email, roles ? { roles } : {});
}

async function createToken(
  bearer: string,
  input: Record<string, unknown>,
): Promise<GqlResponse<Record<string, any>>> {
  return t.gql(bearer, CREATE, { in: { tenantId: aurora.Tenant, name: 'test token', ...input } });
}

async function mint(
  email: string,
  input: Record<string, unknown> = {},
): Promise<{ secret: string; id: string; prefix: string }> {
  const res = await createToken(await session(email), { scopes: ['JOBS_READ'], ...input });
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  const payload = res.body.data!.createApiToken;
  return { secret: payload.secret, id: payload.token.id, prefix: payload.token.prefix };
}

function expectUnauthenticated(res: GqlResponse<Record<string, any>>, message: RegExp) {
  expect(res.status).toBe(401);
  expect(codesOf(res)).toEqual(['UNAUTHENTICATED']);
  expect(res.body.errors![0]!.message).toMatch(message);
  expect(res.body.data ?? null).toBeNull();
}

function systemEm() {
  const em = t.app.orm.em.fork({ clear: true });
  em.setFilterParams(TENANT_FILTER, { all: true });
  return em;
}

function rawId(globalId: string): string {
  return Buffer.from(globalId, 'base64').toString('utf8').split(':')[1]!;
}

describe('refused API tokens', () => {
  it('an unknown fwt_ token is UNAUTHENTICATED (401)', async () => {
    const res = await t.gql(`fwt_${randomBytes(32).toString('base64url')}`, VIEWER);
    expectUnauthenticated(res, /API token is not valid/);
  });

  it('an expired token is UNAUTHENTICATED once the clock passes its expiry, and works before', async () => {
    const start = t.now.value;
    try {
      const { secret } = await mint('ada@aurora.example', { expiresInDays: 1 });
      t.now.value = start + DAY - 60_000;
      const before = await t.gql(secret, VIEWER);
      expect(before.body.errors).toBeUndefined();
      expect(before.body.data!.viewer.authKind).toBe('API_TOKEN');
      t.now.value = start + DAY + 1000;
      expectUnauthenticated(await t.gql(secret, VIEWER), /expired/);
    } finally {
      t.now.value = start;
    }
  });

  it('a revoked token is UNAUTHENTICATED on the next request', async () => {
    const { secret, id } = await mint('ada@aurora.example');
    expect((await t.gql(secret, VIEWER)).body.errors).toBeUndefined();
    const revoke = await t.gql(
      await session('ada@aurora.example'),
      `mutation($id: ID!) { revokeApiToken(id: $id) { id revokedAt } }`,
      { id },
    );
    expect(revoke.body.errors).toBeUndefined();
    expect(revoke.body.data!.revokeApiToken.revokedAt).toBeTruthy();
    expectUnauthenticated(await t.gql(secret, VIEWER), /revoked/);
  });

  it('a token with only JOBS_READ is FORBIDDEN for anything needing another capability, and changes nothing', async () => {
    // Ada is TENANT_ADMIN: her role allows everything, the token's scope narrows it.
    const { secret } = await mint('ada@aurora.example', { scopes: ['JOBS_READ'] });
    const viewer = await t.gql(secret, VIEWER);
    expect(viewer.body.errors).toBeUndefined();
    expect(viewer.body.data!.viewer.tokenScopes).toEqual(['JOBS_READ']);

    const audit = await t.gql(
      secret,
      `query($id: ID!) { auditEvents(tenantId: $id, last: 1) { edges { node { action } } } }`,
      { id: aurora.Tenant },
    );
    expect(codesOf(audit)).toEqual(['FORBIDDEN']);
    expect(audit.body.errors![0]!.message).toMatch(/audit:read/);

    const counts = await t.rowCounts({ ignoreAudit: true });
    const create = await t.gql(
      secret,
      `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
      {
        in: { tenantId: aurora.Tenant, slug: 'scoped-out', name: 'Scoped out' },
      },
    );
    expect(codesOf(create)).toEqual(['FORBIDDEN']);
    expect(await t.rowCounts({ ignoreAudit: true })).toEqual(counts);
  });
});

describe('the secret', () => {
  it('is returned once by createApiToken, stored only as its SHA-256 hash, and readable nowhere later', async () => {
    const res = await createToken(await session('ada@aurora.example'), {
      name: 'once',
      scopes: ['TENANT_READ'],
    });
    expect(res.body.errors).toBeUndefined();
    const { secret, token } = res.body.data!.createApiToken;
    expect(secret).toMatch(/^fwt_[A-Za-z0-9_-]{43}$/);
    expect(token.prefix.length).toBeLessThan(secret.length);
    expect(secret.startsWith(token.prefix)).toBe(true);

    // No field of ApiToken (or anything else) exposes it.
    const type = await t.gql(
      await session('ada@aurora.example'),
      `{ __type(name: "ApiToken") { fields { name } } }`,
    );
    const fields = type.body.data!.__type.fields.map((f: { name: string }) => f.name);
    expect(fields).toContain('prefix');
    expect(fields.filter((f: string) => /secret|hash/i.test(f))).toEqual([]);

    // Reading every token field back, as the admin, never shows it.
    const list = await t.gql(
      await session('ada@aurora.example'),
      `query($id: ID!) { apiTokens(tenantId: $id, first: 100) { edges { node { id name prefix scopes createdByName createdAt expiresAt lastUsedAt revokedAt isPlatformToken } } } }`,
      { id: aurora.Tenant },
    );
    expect(list.body.errors).toBeUndefined();
    expect(list.body.data!.apiTokens.edges.map((e: any) => e.node.id)).toContain(token.id);
    expect(JSON.stringify(list.body)).not.toContain(secret);

    // Nor does the audit log of its creation.
    const audit = await t.gql(
      t.token('aurora-research', 'AUDITOR'),
      `query($id: ID!) { auditEvents(tenantId: $id, last: 100) { edges { node { action input targetId } } } }`,
      { id: aurora.Tenant },
    );
    const created = audit.body
      .data!.auditEvents.edges.map((e: any) => e.node)
      .find((n: any) => n.targetId === token.id);
    expect(created).toMatchObject({ action: 'apiToken.create' });
    expect(JSON.stringify(audit.body)).not.toContain(secret);

    // The database holds the hash, never the secret.
    const row = await systemEm().findOneOrFail(ApiToken, { id: rawId(token.id) });
    expect(row.tokenHash).not.toBe(secret);
    expect(row.tokenHash).toBe(hashApiTokenSecret(secret));
    expect(row.tokenHash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(secret);
    const raw = await t.app.orm.em
      .getConnection()
      .execute(`select * from api_tokens where id = ?`, [rawId(token.id)]);
    expect(raw).toHaveLength(1);
    expect(JSON.stringify(raw)).not.toContain(secret);
  });
});

describe('who may create tokens', () => {
  it('an API token cannot create tokens (FORBIDDEN), even a tenant admin token', async () => {
    const res = await createToken(t.token('aurora-research', 'TENANT_ADMIN'), { scopes: ['JOBS_READ'] });
    expect(codesOf(res)).toEqual(['FORBIDDEN']);
    expect(res.body.errors![0]!.message).toMatch(/sign in as a user/);
  });

  it('a VIEWER session cannot create tokens (FORBIDDEN)', async () => {
    const res = await createToken(await session('vera@aurora.example'), { scopes: ['JOBS_READ'] });
    expect(codesOf(res)).toEqual(['FORBIDDEN']);
  });

  it("scopes beyond the creator's role are FORBIDDEN; those within it are granted", async () => {
    const max = await session('max@aurora.example'); // MEMBER: no audit:read, no members:write
    const tooMuch = await createToken(max, { scopes: ['JOBS_READ', 'AUDIT_READ'] });
    expect(codesOf(tooMuch)).toEqual(['FORBIDDEN']);
    expect(tooMuch.body.errors![0]!.message).toMatch(/audit:read/);
    const adminScope = await createToken(max, { scopes: ['MEMBERS_WRITE'] });
    expect(codesOf(adminScope)).toEqual(['FORBIDDEN']);
    const ok = await createToken(max, { scopes: ['JOBS_READ', 'JOBS_WRITE'] });
    expect(ok.body.errors).toBeUndefined();
    expect(ok.body.data!.createApiToken.token.scopes).toEqual(['JOBS_READ', 'JOBS_WRITE']);
  });
});

describe('token lifecycle', () => {
  it('lastUsedAt is empty until the token is used, then set to the time of use', async () => {
    const { secret, id } = await mint('ada@aurora.example');
    const readBack = async () => {
      const res = await t.gql(
        await session('ada@aurora.example'),
        `query($id: ID!) { apiTokens(tenantId: $id, first: 100) { edges { node { id lastUsedAt } } } }`,
        { id: aurora.Tenant },
      );
      expect(res.body.errors).toBeUndefined();
      return res.body.data!.apiTokens.edges.map((e: any) => e.node).find((n: any) => n.id === id);
    };
    expect((await readBack()).lastUsedAt).toBeNull();
    const usedAt = t.now.value;
    expect((await t.gql(secret, VIEWER)).body.errors).toBeUndefined();
    // The server clock at the time of use (allowing for a database that stores whole seconds).
    const lastUsedAt = new Date((await readBack()).lastUsedAt).getTime();
    expect(lastUsedAt).toBeLessThanOrEqual(usedAt);
    expect(usedAt - lastUsedAt).toBeLessThan(1000);
  });

  it('a token stops working when its owner is removed from the tenant', async () => {
    const ada = await session('ada@aurora.example');
    const added = await t.gql(ada, `mutation($in: AddMemberInput!) { addMember(input: $in) { id } }`, {
      in: { tenantId: aurora.Tenant, email: 'nina@aurora.example', name: 'Nina Leaver', role: 'MEMBER' },
    });
    expect(added.body.errors).toBeUndefined();
    const { secret } = await mint('nina@aurora.example', { scopes: ['TENANT_READ', 'JOBS_READ'] });
    const before = await t.gql(
      secret,
      `query($id: ID!) { projects(tenantId: $id) { edges { node { slug } } } }`,
      { id: aurora.Tenant },
    );
    expect(before.body.errors).toBeUndefined();

    const removed = await t.gql(ada, `mutation($id: ID!) { removeMember(id: $id) { removedMemberId } }`, {
      id: added.body.data!.addMember.id,
    });
    expect(removed.body.errors).toBeUndefined();
    expectUnauthenticated(await t.gql(secret, VIEWER), /no longer a member/);
  });
});

describe('platform tokens', () => {
  const LIST_TENANTS = `{ viewer { isPlatformAdmin authKind } tenants { edges { node { slug } } } }`;

  it('a platform admin session (roles claim) mints a platform token that lists every tenant', async () => {
    // admin@fairway.example is a platform admin in the database and by the claim.
    const jwt = await session('admin@fairway.example', ['fairway:PLATFORM_ADMIN']);
    const res = await t.gql(jwt, CREATE, { in: { name: 'platform automation', scopes: [] } });
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.createApiToken.token.isPlatformToken).toBe(true);
    const used = await t.gql(res.body.data!.createApiToken.secret, LIST_TENANTS);
    expect(used.body.errors).toBeUndefined();
    expect(used.body.data!.viewer).toEqual({ isPlatformAdmin: true, authKind: 'API_TOKEN' });
    expect(used.body.data!.tenants.edges.map((e: any) => e.node.slug).sort()).toEqual([
      'aurora-research',
      'borealis-inference',
    ]);
  });

  it('a platform token handed out to a claim-only platform admin works (or is refused up front, never dead on arrival)', async () => {
    // ops@ is a platform admin only through the IdP's roles claim, not in the database.
    const jwt = await session('ops@fairway.example', ['fairway:PLATFORM_ADMIN']);
    const me = await t.gql(jwt, VIEWER.replace('email', 'email isPlatformAdmin'));
    expect(me.body.data!.viewer.isPlatformAdmin).toBe(true);
    const res = await t.gql(jwt, CREATE, { in: { name: 'ops automation', scopes: [] } });
    if (res.body.errors) {
      expect(codesOf(res)).toEqual(['FORBIDDEN']);
      return;
    }
    // The secret was handed out as a working credential: it must authenticate.
    const used = await t.gql(res.body.data!.createApiToken.secret, LIST_TENANTS);
    expect(
      used.body.errors,
      'createApiToken returned a platform token that the gateway then refuses',
    ).toBeUndefined();
    expect(used.body.data!.tenants.edges.map((e: any) => e.node.slug).sort()).toEqual([
      'aurora-research',
      'borealis-inference',
    ]);
  });

  it('a platform token cannot be minted by a non-admin, nor carry scopes', async () => {
    const noTenant = await t.gql(await session('ada@aurora.example'), CREATE, {
      in: { name: 'sneaky', scopes: [] },
    });
    expect(codesOf(noTenant)).toEqual(['FORBIDDEN']);
    const withScopes = await t.gql(
      await session('admin@fairway.example', ['fairway:PLATFORM_ADMIN']),
      CREATE,
      { in: { name: 'scoped', scopes: ['JOBS_READ'] } },
    );
    expect(codesOf(withScopes)).toEqual(['BAD_USER_INPUT']);
  });
});

describe('who sees which tokens', () => {
  const LIST = `query($id: ID!) { apiTokens(tenantId: $id, first: 100) { edges { node { id name createdByName } } } }`;

  it('a member sees only their own tokens; a tenant admin sees everyone’s', async () => {
    const own = await mint('max@aurora.example', { name: 'max own token' });
    const adas = await mint('ada@aurora.example', { name: 'ada own token' });

    const asMax = await t.gql(await session('max@aurora.example'), LIST, { id: aurora.Tenant });
    expect(asMax.body.errors).toBeUndefined();
    const maxSees = asMax.body.data!.apiTokens.edges.map((e: any) => e.node);
    expect(maxSees.map((n: any) => n.id)).toContain(own.id);
    expect(maxSees.map((n: any) => n.id)).not.toContain(adas.id);
    expect(new Set(maxSees.map((n: any) => n.createdByName))).toEqual(new Set(['Max Member']));

    const asAda = await t.gql(await session('ada@aurora.example'), LIST, { id: aurora.Tenant });
    expect(asAda.body.errors).toBeUndefined();
    const adaSees = asAda.body.data!.apiTokens.edges.map((e: any) => e.node);
    expect(adaSees.map((n: any) => n.id)).toEqual(expect.arrayContaining([own.id, adas.id]));
    // The four demo people of aurora each have a token.
    for (const who of ['Ada Admin', 'Max Member', 'Vera Viewer', 'Otto Auditor']) {
      expect(adaSees.map((n: any) => n.createdByName)).toContain(who);
    }
  });

  it("another tenant's member cannot list aurora's tokens (NOT_FOUND)", async () => {
    const res = await t.gql(await session('bea@borealis.example'), LIST, { id: aurora.Tenant });
    expect(codesOf(res)).toEqual(['NOT_FOUND']);
  });
});
