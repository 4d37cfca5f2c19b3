import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { type CryptoKey, exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type FairwayApp } from '../../src/server/app.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import {
  codesOf,
  type GqlResponse,
  startTestApp,
  TEST_AUDIENCE,
  TEST_ISSUER,
  type TestApp,
  testConfig,
} from '../helpers/harness.js';

/** OIDC JWT sessions: refusals with actionable 401s, roles from DB or claim, provisioning, JWKS. */
let t: TestApp;

beforeAll(async () => {
  t = await startTestApp();
});
afterAll(async () => {
  await t?.close();
});

const VIEWER = `{ viewer { email name authKind isPlatformAdmin tokenScopes memberships { role tenant { slug } } } }`;

async function post(
  url: string,
  authorization: string | null,
  query = VIEWER,
): Promise<GqlResponse<Record<string, any>>> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
      ...(authorization ? { authorization } : {}),
    },
    body: JSON.stringify({ query }),
  });
  const text = await response.text();
  // Nothing from inside the server: no stack frames, no source paths.
  expect(text).not.toMatch(/\n\s+at |\bat [\w.<>]+ \(|node_modules|\.ts:\d+|\.js:\d+|"stack"/);
  return { status: response.status, headers: response.headers, body: JSON.parse(text) } as GqlResponse<
    Record<string, any>
  >;
}

/** 401, one UNAUTHENTICATED error, no data, and a message that says what to do. */
function expectRefused(res: GqlResponse<Record<string, any>>, message: RegExp) {
  expect(res.status).toBe(401);
  expect(codesOf(res)).toEqual(['UNAUTHENTICATED']);
  expect(res.body.data ?? null).toBeNull();
  const text = res.body.errors![0]!.message;
  expect(text).toMatch(message);
  expect(text).not.toMatch(/^Unexpected error/);
  expect(res.body.errors![0]!.extensions).not.toHaveProperty('stack');
  expect(res.body.errors![0]!.extensions).not.toHaveProperty('originalError');
}

function sign(
  claims: Record<string, unknown>,
  key: CryptoKey,
  options: { kid?: string; issuer?: string; audience?: string; iat?: number; exp?: number | string } = {},
) {
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: 'RS256', ...(options.kid ? { kid: options.kid } : {}) })
    .setIssuer(options.issuer ?? TEST_ISSUER)
    .setAudience(options.audience ?? TEST_AUDIENCE)
    .setSubject(String(claims.email ?? 'someone'))
    .setIssuedAt(options.iat ?? Math.floor(Date.now() / 1000))
    .setExpirationTime(options.exp ?? '1h');
  return jwt.sign(key);
}

describe('refused JWTs and headers: 401 UNAUTHENTICATED with an actionable message', () => {
  it('a JWT signed by another key', async () => {
    const { privateKey } = await generateKeyPair('RS256');
    const jwt = await t.jwt('ada@aurora.example', { key: privateKey });
    expectRefused(await post(t.url, `Bearer ${jwt}`), /signature does not verify/);
  });

  it('a JWT from another issuer', async () => {
    const jwt = await t.jwt('ada@aurora.example', { issuer: 'https://evil.example' });
    expectRefused(await post(t.url, `Bearer ${jwt}`), /issuer this gateway does not trust/);
  });

  it('a JWT for another audience', async () => {
    const jwt = await t.jwt('ada@aurora.example', { audience: 'some-other-app' });
    expectRefused(await post(t.url, `Bearer ${jwt}`), /another audience/);
  });

  it('an expired JWT', async () => {
    // Issued two hours ago, expired one hour ago; otherwise valid (right key, issuer, audience).
    const jwt = await t.jwt('ada@aurora.example', { expiresIn: '1 hour ago' });
    expectRefused(await post(t.url, `Bearer ${jwt}`), /expired.*sign in again/i);
  });

  it('garbage bearers', async () => {
    expectRefused(await post(t.url, 'Bearer not-a-token'), /neither a Fairway API token nor a JWT/);
    expectRefused(await post(t.url, 'Bearer aaa.bbb.ccc'), /JWT could not be verified/);
    // A tampered payload of a good token: the signature no longer matches.
    const good = await t.jwt('ada@aurora.example');
    const [h, , s] = good.split('.');
    const forged = Buffer.from(
      JSON.stringify({
        email: 'admin@fairway.example',
        iss: TEST_ISSUER,
        aud: TEST_AUDIENCE,
        exp: 9_999_999_999,
        fairway_roles: ['fairway:PLATFORM_ADMIN'],
      }),
    ).toString('base64url');
    expectRefused(await post(t.url, `Bearer ${h}.${forged}.${s}`), /signature does not verify/);
  });

  it('an alg=none JWT', async () => {
    const header = Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url');
    const payload = Buffer.from(
      JSON.stringify({
        email: 'ada@aurora.example',
        iss: TEST_ISSUER,
        aud: TEST_AUDIENCE,
        exp: Math.floor(Date.now() / 1000) + 3600,
      }),
    ).toString('base64url');
    const res = await post(t.url, `Bearer ${header}.${payload}.`);
    // Three parts with an empty signature: looks like a JWT, must never be accepted unsigned.
    expectRefused(res, /signing algorithm that is not allowed/);
  });

  it('Authorization: Basic …', async () => {
    expectRefused(
      await post(t.url, `Basic ${Buffer.from('ada:secret').toString('base64')}`),
      /Authorization: Bearer/,
    );
  });

  it('a JWT without the user claim', async () => {
    // Signed by the right IdP, but with an empty "email": nobody to sign in as.
    const jwt = await t.jwt('');
    expectRefused(await post(t.url, `Bearer ${jwt}`), /"email" claim/);
  });
});

describe('accepted JWTs', () => {
  it('a seeded user resolves viewer with their database memberships', async () => {
    const res = await post(t.url, `Bearer ${await t.jwt('ada@aurora.example')}`);
    expect(res.status).toBe(200);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.viewer).toEqual({
      email: 'ada@aurora.example',
      name: 'Ada Admin',
      authKind: 'USER',
      isPlatformAdmin: false,
      tokenScopes: null,
      memberships: [{ role: 'TENANT_ADMIN', tenant: { slug: 'aurora-research' } }],
    });
  });

  it('the e-mail claim is matched case-insensitively', async () => {
    const res = await post(t.url, `Bearer ${await t.jwt('Ada@Aurora.Example')}`);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.viewer.email).toBe('ada@aurora.example');
    expect(res.body.data!.viewer.memberships).toHaveLength(1);
  });

  it('a fairway_roles claim replaces the database roles', async () => {
    const jwt = await t.jwt('ada@aurora.example', {
      roles: ['borealis-inference:VIEWER', 'no-such-tenant:TENANT_ADMIN', 'aurora-research:NOT_A_ROLE'],
    });
    const res = await post(t.url, `Bearer ${jwt}`);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.viewer.memberships).toEqual([
      { role: 'VIEWER', tenant: { slug: 'borealis-inference' } },
    ]);
    expect(res.body.data!.viewer.isPlatformAdmin).toBe(false);

    // And they are what is enforced: aurora is now invisible, borealis is read-only.
    const ids = await t.idsOf('aurora-research');
    const auroraProjects = await t.gql(
      jwt,
      `query($id: ID!) { projects(tenantId: $id) { edges { node { slug } } } }`,
      { id: ids.Tenant },
    );
    expect(codesOf(auroraProjects)).toEqual(['NOT_FOUND']);
    const b = await t.idsOf('borealis-inference');
    const create = await t.gql(
      jwt,
      `mutation($in: CreateProjectInput!) { createProject(input: $in) { id } }`,
      { in: { tenantId: b.Tenant, slug: 'nope', name: 'Nope' } },
    );
    expect(codesOf(create)).toEqual(['FORBIDDEN']);
  });

  it('an empty fairway_roles claim means no tenants at all (not a fall-back to the database)', async () => {
    const res = await post(t.url, `Bearer ${await t.jwt('ada@aurora.example', { roles: [] })}`);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.viewer.memberships).toEqual([]);
  });

  it('the fairway:PLATFORM_ADMIN claim makes a platform admin', async () => {
    const jwt = await t.jwt('ops@fairway.example', { roles: ['fairway:PLATFORM_ADMIN'] });
    const res = await post(
      t.url,
      `Bearer ${jwt}`,
      `{ viewer { isPlatformAdmin } tenants { edges { node { slug } } } }`,
    );
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.viewer.isPlatformAdmin).toBe(true);
    expect((res.body.data as any).tenants.edges.map((e: any) => e.node.slug).sort()).toEqual([
      'aurora-research',
      'borealis-inference',
    ]);
  });

  it('the first sign-in of an unknown e-mail provisions a user, once', async () => {
    const before = await t.rowCounts({ ignoreAudit: true });
    const jwt = await t.jwt('newcomer@example.org');
    const first = await post(t.url, `Bearer ${jwt}`);
    expect(first.body.errors).toBeUndefined();
    expect(first.body.data!.viewer).toMatchObject({
      email: 'newcomer@example.org',
      name: 'newcomer',
      authKind: 'USER',
      isPlatformAdmin: false,
      memberships: [],
    });
    const after = await t.rowCounts({ ignoreAudit: true });
    expect(after.User).toBe(before.User! + 1);
    expect({ ...after, User: before.User }).toEqual(before);

    const again = await post(t.url, `Bearer ${await t.jwt('newcomer@example.org')}`);
    expect(again.body.errors).toBeUndefined();
    expect((await t.rowCounts({ ignoreAudit: true })).User).toBe(after.User);
  });

  it('a refused JWT provisions nobody', async () => {
    const before = await t.rowCounts();
    const jwt = await t.jwt('intruder@example.org', { issuer: 'https://evil.example' });
    expectRefused(await post(t.url, `Bearer ${jwt}`), /issuer/);
    expect(await t.rowCounts()).toEqual(before);
  });
});

describe('JWKS: keys fetched from the identity provider', () => {
  let jwks: Server;
  let jwksHits = 0;
  let app: FairwayApp;
  let db: TestDatabase;
  let dataDir: string;
  let url: string;
  let signingKey: CryptoKey;
  const errors: unknown[] = [];

  beforeAll(async () => {
    const pair = await generateKeyPair('RS256');
    signingKey = pair.privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'fairway-test-1', alg: 'RS256', use: 'sig' };
    jwks = createServer((req, res) => {
      jwksHits++;
      if (req.url !== '/.well-known/jwks.json') {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [jwk] }));
    });
    await new Promise<void>((resolve) => jwks.listen(0, '127.0.0.1', resolve));
    const { port } = jwks.address() as AddressInfo;

    db = await createTestDatabase('sqlite');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-jwks-'));
    const config = testConfig({
      dataDir,
      database: db.database,
      oidc: { jwksUrl: `http://127.0.0.1:${port}/.well-known/jwks.json` },
    });
    app = await buildApp({ config, logError: (e) => errors.push(e) });
    url = (await app.listen(0, '127.0.0.1')).url;
  });

  afterAll(async () => {
    await app?.close();
    await new Promise<void>((resolve) => (jwks ? jwks.close(() => resolve()) : resolve()));
    await db?.dispose();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
    expect(errors.map(String)).toEqual([]);
  });

  it('accepts a JWT signed with the published key (kid matches)', async () => {
    const jwt = await sign({ email: 'jwks-user@example.org', name: 'Jay Dubs' }, signingKey, {
      kid: 'fairway-test-1',
    });
    const res = await post(url, `Bearer ${jwt}`);
    expect(res.body.errors).toBeUndefined();
    expect(res.body.data!.viewer).toMatchObject({
      email: 'jwks-user@example.org',
      name: 'Jay Dubs',
      authKind: 'USER',
      memberships: [],
    });
    expect(jwksHits).toBeGreaterThan(0);
  });

  it('refuses a JWT with a kid the issuer does not publish', async () => {
    const jwt = await sign({ email: 'jwks-user@example.org' }, signingKey, { kid: 'rotated-away' });
    expectRefused(await post(url, `Bearer ${jwt}`), /key the issuer does not publish/);
  });

  it('refuses a JWT signed by another key under the published kid', async () => {
    const other = await generateKeyPair('RS256');
    const jwt = await sign({ email: 'jwks-user@example.org' }, other.privateKey, { kid: 'fairway-test-1' });
    expectRefused(await post(url, `Bearer ${jwt}`), /signature does not verify/);
  });

  it('still checks issuer and audience with JWKS keys', async () => {
    expectRefused(
      await post(
        url,
        `Bearer ${await sign({ email: 'a@example.org' }, signingKey, { kid: 'fairway-test-1', issuer: 'https://other.example' })}`,
      ),
      /issuer/,
    );
    expectRefused(
      await post(
        url,
        `Bearer ${await sign({ email: 'a@example.org' }, signingKey, { kid: 'fairway-test-1', audience: 'other' })}`,
      ),
      /audience/,
    );
  });
});
