import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { encodeGlobalID } from '@pothos/plugin-relay';
import { exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FairwayConfig } from '../../src/config/index.js';
import { createEventBus } from '../../src/events/bus.js';
import { ProjectMembership } from '../../src/persistence/tenancy/access-entities.js';
import { Membership, Tenant, User } from '../../src/persistence/tenancy/entities.js';
import { TENANT_FILTER } from '../../src/persistence/tenant-filter.js';
import { buildApp, type FairwayApp } from '../../src/server/app.js';
import { type DemoCredential, seedDemo } from '../../src/server/demo/seed.js';
import { createTestDatabase, describeNeeding, serviceUrl, type TestDatabase } from '../helpers/database.js';
import {
  codesOf,
  demoToken,
  type GqlResponse,
  TEST_AUDIENCE,
  TEST_ISSUER,
  testConfig,
} from '../helpers/harness.js';
import { waitFor } from '../helpers/process.js';

/**
 * The identity cache (src/auth/identity-cache.ts): an authenticated request reuses the caller
 * resolved a moment ago without SQL, and every change to someone's rights made through the
 * services reaches the very next request, on this app and on another sharing the bus.
 */

const VIEWER = `{ viewer { authKind tokenScopes memberships { role } } }`;
const DAY = 86_400_000;

interface Replica {
  app: FairwayApp;
  /** SQL statements run since the last take(). */
  take(): string[];
  gql(
    bearer: string,
    query: string,
    variables?: Record<string, unknown>,
  ): Promise<GqlResponse<Record<string, any>>>;
}

let db: TestDatabase;
let dataDir: string;
let keys: Awaited<ReturnType<typeof generateKeyPair>>;
const now = { value: Date.now() };
let credentials: DemoCredential[];
let a: Replica;
/** Shares a's database and hears a's events through a shared event target (as replicas through Redis); TTL
 * one minute.
 */
let b: Replica;
/** Same database, no cache. */
let off: Replica;
const replicas: Replica[] = [];

async function start(options: {
  identityCacheMs?: number;
  events?: FairwayApp['events'];
  redisUrl?: string;
}): Promise<Replica> {
  const statements: string[] = [];
  const base = testConfig({
    dataDir,
    database: db.database,
    oidc: { publicKeyPem: await exportSPKI(keys.publicKey) },
  });
  const config: FairwayConfig = {
    ...base,
    auth: { ...base.auth, identityCacheMs: options.identityCacheMs ?? base.auth.identityCacheMs },
    server: { ...base.server, redisUrl: options.redisUrl },
  };
  const app = await buildApp({
    config,
    now: () => now.value,
    reauthCacheMs: 0,
    onQuery: (sql) => statements.push(sql),
    events: options.events,
  });
  const { url } = await app.listen(0, '127.0.0.1');
  const replica: Replica = {
    app,
    take: () => statements.splice(0),
    async gql(bearer, query, variables) {
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json',
          authorization: `Bearer ${bearer}`,
        },
        body: JSON.stringify({ query, variables }),
      });
      return {
        status: response.status,
        headers: response.headers,
        body: (await response.json()) as GqlResponse['body'],
      };
    },
  };
  replicas.push(replica);
  return replica;
}

function session(email: string, roles?: string[]): Promise<string> {
  return new SignJWT({ email, name: email.split('@')[0], ...(roles ? { fairway_roles: roles } : {}) })
    .setProtectedHeader({ alg: 'RS256' })
    .setIssuer(TEST_ISSUER)
    .setAudience(TEST_AUDIENCE)
    .setIssuedAt(Math.floor(now.value / 1000))
    .setSubject(email)
    .setExpirationTime('1h')
    .sign(keys.privateKey);
}

async function ok(
  r: Replica,
  bearer: string,
  query: string,
  variables?: Record<string, unknown>,
): Promise<Record<string, any>> {
  const res = await r.gql(bearer, query, variables);
  expect(res.body.errors, JSON.stringify(res.body.errors)).toBeUndefined();
  return res.body.data!;
}

async function expectUnauthenticated(r: Replica, bearer: string, message: RegExp) {
  const res = await r.gql(bearer, VIEWER);
  expect(codesOf(res)).toEqual(['UNAUTHENTICATED']);
  expect(res.body.errors![0]!.message).toMatch(message);
}

/** Statements that read or write what a principal is made of. */
const identitySql = (statements: string[]) =>
  statements.filter((s) =>
    /(from|update) [`"](api_tokens|users|memberships|project_memberships|break_glass_grants)[`"]/.test(s),
  );

function systemEm() {
  const em = a.app.orm.em.fork({ clear: true });
  em.setFilterParams(TENANT_FILTER, { all: true });
  return em;
}

async function mint(
  r: Replica,
  email: string,
  input: { scopes?: string[]; expiresInDays?: number } = {},
): Promise<{ secret: string; id: string }> {
  const tenantId = encodeGlobalID(
    'Tenant',
    (await systemEm().findOneOrFail(Tenant, { slug: 'aurora-research' })).id,
  );
  const data = await ok(
    r,
    await session(email),
    `mutation($in: CreateApiTokenInput!) { createApiToken(input: $in) { secret token { id } } }`,
    {
      in: {
        tenantId,
        name: `cache test ${Math.random()}`,
        scopes: input.scopes ?? ['TENANT_READ', 'JOBS_READ'],
        expiresInDays: input.expiresInDays ?? 30,
      },
    },
  );
  return { secret: data.createApiToken.secret, id: data.createApiToken.token.id };
}

beforeAll(async () => {
  db = await createTestDatabase('sqlite');
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-identity-cache-'));
  keys = await generateKeyPair('RS256');
  // a and b: two buses over one event target, as two replicas over Redis (b hears a's
  // events only through the target, never through a's in-process listeners).
  const target = new EventTarget();
  a = await start({ events: createEventBus(target as never) });
  credentials = (await seedDemo(a.app.orm, dataDir, () => now.value)) ?? [];
  b = await start({ identityCacheMs: 60_000, events: createEventBus(target as never) });
  off = await start({ identityCacheMs: 0 });
}, 30_000);

afterAll(async () => {
  for (const r of replicas) await r.app.close();
  await db?.dispose();
  if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('a cached caller', () => {
  it('costs no SQL: an API token and a JWT are looked up once, then reused', async () => {
    const token = demoToken(credentials, 'aurora-research', 'MEMBER');
    const jwt = await session('max@aurora.example');
    for (const bearer of [token, jwt]) {
      a.take();
      await ok(a, bearer, VIEWER);
      expect(identitySql(a.take()).length).toBeGreaterThan(0);
      await ok(a, bearer, `{ __typename }`);
      expect(a.take()).toEqual([]);
    }
  });

  it('concurrent first requests share one lookup', async () => {
    const { secret } = await mint(a, 'ada@aurora.example');
    a.take();
    await Promise.all(Array.from({ length: 8 }, () => ok(a, secret, `{ __typename }`)));
    expect(a.take().filter((s) => /from [`"]api_tokens[`"]/.test(s))).toHaveLength(1);
  });

  it('with FAIRWAY_IDENTITY_CACHE_MS=0 every request looks the caller up', async () => {
    const token = demoToken(credentials, 'aurora-research', 'MEMBER');
    for (let i = 0; i < 2; i++) {
      off.take();
      await ok(off, token, `{ __typename }`);
      expect(off.take().filter((s) => /from [`"]api_tokens[`"]/.test(s))).toHaveLength(1);
    }
  });

  it('a token expiring while cached is refused from its expiry on', async () => {
    const start = now.value;
    try {
      const { secret } = await mint(a, 'ada@aurora.example', { expiresInDays: 1 });
      now.value = start + DAY - 60_000;
      await ok(a, secret, VIEWER);
      a.take();
      await ok(a, secret, VIEWER);
      expect(identitySql(a.take())).toEqual([]);
      now.value = start + DAY + 1000;
      await expectUnauthenticated(a, secret, /expired/);
    } finally {
      now.value = start;
    }
  });
});

describe('a change of rights reaches the next request', () => {
  it('a revoked token is UNAUTHENTICATED on the next request, here and on the other replica', async () => {
    const { secret, id } = await mint(a, 'ada@aurora.example');
    for (const r of [a, b]) {
      await ok(r, secret, VIEWER);
      r.take();
      await ok(r, secret, VIEWER);
      expect(identitySql(r.take())).toEqual([]);
    }
    await ok(
      a,
      await session('ada@aurora.example'),
      `mutation($id: ID!) { revokeApiToken(id: $id) { revokedAt } }`,
      { id },
    );
    await expectUnauthenticated(a, secret, /revoked/);
    // b's entry had a minute to live: only the event can have dropped it.
    await expectUnauthenticated(b, secret, /revoked/);
  });

  it("a lowered tenant role narrows the member's token and session at once; raising it back too", async () => {
    const token = demoToken(credentials, 'aurora-research', 'MEMBER');
    const jwt = await session('max@aurora.example');
    const ada = await session('ada@aurora.example');
    const em = systemEm();
    const max = await em.findOneOrFail(User, { email: 'max@aurora.example' });
    const memberId = encodeGlobalID('Member', (await em.findOneOrFail(Membership, { user: max.id })).id);
    const before = (await ok(b, token, VIEWER)).viewer;
    expect(before.tokenScopes).toContain('JOBS_WRITE');
    await ok(a, jwt, VIEWER);
    await ok(a, ada, `mutation($id: ID!) { changeMemberRole(id: $id, role: VIEWER) { role } }`, {
      id: memberId,
    });
    try {
      const narrowed = (await ok(a, token, VIEWER)).viewer;
      expect(narrowed.memberships).toEqual([{ role: 'VIEWER' }]);
      expect(narrowed.tokenScopes).not.toContain('JOBS_WRITE');
      expect((await ok(a, jwt, VIEWER)).viewer.memberships).toEqual([{ role: 'VIEWER' }]);
      expect((await ok(b, token, VIEWER)).viewer.memberships).toEqual([{ role: 'VIEWER' }]);
    } finally {
      await ok(a, ada, `mutation($id: ID!) { changeMemberRole(id: $id, role: MEMBER) { role } }`, {
        id: memberId,
      });
    }
    expect((await ok(a, token, VIEWER)).viewer).toEqual(before);
  });

  it("a removed member's token and session lose the tenant on the next request", async () => {
    const ada = await session('ada@aurora.example');
    const tenantId = encodeGlobalID(
      'Tenant',
      (await systemEm().findOneOrFail(Tenant, { slug: 'aurora-research' })).id,
    );
    const added = await ok(a, ada, `mutation($in: AddMemberInput!) { addMember(input: $in) { id } }`, {
      in: { tenantId, email: 'nina@aurora.example', role: 'MEMBER' },
    });
    const nina = await session('nina@aurora.example');
    const { secret } = await mint(a, 'nina@aurora.example');
    await ok(a, secret, VIEWER);
    expect((await ok(a, nina, VIEWER)).viewer.memberships).toEqual([{ role: 'MEMBER' }]);
    await ok(a, ada, `mutation($id: ID!) { removeMember(id: $id) { removedMemberId } }`, {
      id: added.addMember.id,
    });
    await expectUnauthenticated(a, secret, /no longer a member/);
    expect((await ok(a, nina, VIEWER)).viewer.memberships).toEqual([]);
  });

  it('a changed project role shows on the next request', async () => {
    const em = systemEm();
    const max = await em.findOneOrFail(User, { email: 'max@aurora.example' });
    const row = await em.findOneOrFail(ProjectMembership, { user: max.id });
    const projectId = encodeGlobalID('Project', row.project.id);
    const rowId = encodeGlobalID('ProjectMember', row.id);
    const jwt = await session('max@aurora.example');
    const ada = await session('ada@aurora.example');
    const role = async () =>
      (
        await ok(a, jwt, `query($id: ID!) { node(id: $id) { ... on Project { viewerRole } } }`, {
          id: projectId,
        })
      ).node.viewerRole;
    expect(await role()).toBe('CONTRIBUTOR');
    await ok(a, ada, `mutation($id: ID!) { changeProjectMemberRole(id: $id, role: VIEWER) { role } }`, {
      id: rowId,
    });
    try {
      expect(await role()).toBe('VIEWER');
    } finally {
      await ok(
        a,
        ada,
        `mutation($id: ID!) { changeProjectMemberRole(id: $id, role: CONTRIBUTOR) { role } }`,
        { id: rowId },
      );
    }
    expect(await role()).toBe('CONTRIBUTOR');
  });

  it('a break-glass grant works from its opening, stops when closed, and at its expiry while cached', async () => {
    const operator = await session('admin@fairway.example', ['fairway:PLATFORM_ADMIN']);
    const tenantId = encodeGlobalID(
      'Tenant',
      (await systemEm().findOneOrFail(Tenant, { slug: 'aurora-research' })).id,
    );
    const AUDIT = `query($id: ID!) { auditEvents(tenantId: $id, last: 1) { edges { node { action } } } }`;
    const OPEN = `mutation($in: OpenBreakGlassInput!) { openBreakGlass(input: $in) { id expiresAt } }`;
    expect(codesOf(await a.gql(operator, AUDIT, { id: tenantId }))).toEqual(['FORBIDDEN']);
    const grant = (
      await ok(a, operator, OPEN, {
        in: { tenantId, reason: 'identity cache test: first look', durationMinutes: 30 },
      })
    ).openBreakGlass;
    await ok(a, operator, AUDIT, { id: tenantId });
    await ok(a, operator, `mutation($id: ID!) { closeBreakGlass(id: $id) { id } }`, { id: grant.id });
    expect(codesOf(await a.gql(operator, AUDIT, { id: tenantId }))).toEqual(['FORBIDDEN']);

    const start = now.value;
    try {
      const second = (
        await ok(a, operator, OPEN, {
          in: { tenantId, reason: 'identity cache test: second look', durationMinutes: 1 },
        })
      ).openBreakGlass;
      await ok(a, operator, AUDIT, { id: tenantId });
      now.value = new Date(second.expiresAt).getTime() + 1;
      expect(codesOf(await a.gql(operator, AUDIT, { id: tenantId }))).toEqual(['FORBIDDEN']);
    } finally {
      now.value = start;
    }
  });
});

describeNeeding(['redis'], 'through Redis', () => {
  it('a token revoked on one replica is refused on the other within the bus latency, not the TTL', async () => {
    const redisUrl = serviceUrl('redis')!;
    const [r1, r2] = [
      await start({ identityCacheMs: 60_000, redisUrl }),
      await start({ identityCacheMs: 60_000, redisUrl }),
    ];
    const { secret, id } = await mint(r1, 'ada@aurora.example');
    for (const r of [r1, r2]) {
      await ok(r, secret, VIEWER);
      r.take();
      await ok(r, secret, VIEWER);
      expect(identitySql(r.take())).toEqual([]);
    }
    await ok(
      r1,
      await session('ada@aurora.example'),
      `mutation($id: ID!) { revokeApiToken(id: $id) { revokedAt } }`,
      { id },
    );
    await expectUnauthenticated(r1, secret, /revoked/);
    await waitFor(
      'the revocation to reach the other replica',
      async () => codesOf(await r2.gql(secret, VIEWER))[0] === 'UNAUTHENTICATED',
      2000,
      20,
    );
  });
});
