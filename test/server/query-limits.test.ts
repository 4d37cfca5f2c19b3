import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exportSPKI, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { load } from '../../src/config/index.js';
import { buildApp, type FairwayApp } from '../../src/server/app.js';
import { DEFAULT_QUERY_LIMITS } from '../../src/server/query-limits/limits.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import {
  codesOf,
  expectOk,
  type GqlResponse,
  startTestApp,
  type TestApp,
  testConfig,
} from '../helpers/harness.js';

// Any caller could stall the server with a deep, aliased, padded or batched request.
// Every refusal here is typed (never INTERNAL), writes nothing, and the server keeps answering.
let t: TestApp;
let member: string;

beforeAll(async () => {
  t = await startTestApp();
  member = t.token('aurora-research', 'MEMBER');
}, 60_000);
afterAll(async () => t?.close());

const limitsOf = (res: GqlResponse) => (res.body.errors ?? []).map((e) => e.extensions?.limit);

/** Sends a refused request and proves nothing was written (audit included) and the server still answers. */
async function refusedUnchanged(send: () => Promise<GqlResponse>): Promise<GqlResponse> {
  const before = await t.rowCounts();
  const res = await send();
  expect(res.status).toBeGreaterThanOrEqual(400);
  expect(JSON.stringify(res.body)).not.toMatch(/\bat .+\.(ts|js):\d+/); // no stack trace
  expect(await t.rowCounts()).toEqual(before);
  await expectOk(t, member, `{ queues { id name } }`);
  return res;
}

const nested = (levels: number) =>
  `{ ${'queues { tenant { '.repeat(levels / 2)}id${' } }'.repeat(levels / 2)} }`;

describe('query limits (defaults)', () => {
  it('refuses a query 50 levels deep with a typed error; a deep real query passes', async () => {
    const res = await refusedUnchanged(() => t.gql(member, nested(50)));
    expect(codesOf(res)).toContain('BAD_USER_INPUT');
    expect(limitsOf(res)).toContain('depth');
    expect(res.body.errors!.map((e) => e.message)).toContain(
      `Query depth limit of ${DEFAULT_QUERY_LIMITS.maxDepth} exceeded, found 51.`,
    );
    await expectOk(t, member, nested(10));
  });

  it('refuses 1,000 aliases (the token limit stops it first) and 40 aliases (the alias limit)', async () => {
    const aliased = (n: number) =>
      `{ ${Array.from({ length: n }, (_, i) => `a${i}: queues { id }`).join(' ')} }`;
    const many = await refusedUnchanged(() => t.gql(member, aliased(1000)));
    expect(codesOf(many)).toEqual(['BAD_USER_INPUT']);
    const some = await refusedUnchanged(() => t.gql(member, aliased(40)));
    expect(codesOf(some)).toEqual(['BAD_USER_INPUT']);
    expect(limitsOf(some)).toEqual(['aliases']);
    expect(some.body.errors![0]!.message).toBe(
      `Aliases limit of ${DEFAULT_QUERY_LIMITS.maxAliases} exceeded, found 40.`,
    );
    await expectOk(t, member, aliased(DEFAULT_QUERY_LIMITS.maxAliases));
  });

  it('refuses a query of 20,000 tokens while parsing', async () => {
    const res = await refusedUnchanged(() => t.gql(member, `{ ${'__typename '.repeat(20_000)}}`));
    expect(codesOf(res)).toEqual(['BAD_USER_INPUT']);
    expect(limitsOf(res)).toEqual(['tokens']);
    expect(res.body.errors![0]!.message).toBe(`Token limit of ${DEFAULT_QUERY_LIMITS.maxTokens} exceeded.`);
  });

  it('refuses a costly query within the depth and alias limits', async () => {
    // Two nested pages of 500: up to 250,000 jobs in one answer.
    const res = await refusedUnchanged(() =>
      t.gql(
        member,
        `{ tenant(slug: "aurora-research") { jobs(first: 500) { edges { node { queue { jobs(first: 500) { edges { node { name } } } } } } } } }`,
      ),
    );
    expect(limitsOf(res)).toEqual(['cost']);
  });

  it('refuses a fragment cycle with a typed validation error', async () => {
    const res = await refusedUnchanged(() =>
      t.gql(member, `{ queues { ...A } } fragment A on Queue { tenant { queues { ...A } } }`),
    );
    expect(codesOf(res).length).toBeGreaterThan(0);
    for (const code of codesOf(res)) expect(['GRAPHQL_VALIDATION_FAILED', 'BAD_USER_INPUT']).toContain(code);
    expect(res.body.errors!.map((e) => e.message).join(' ')).toMatch(
      /Cannot spread fragment "A" within itself/,
    );
  });

  it('refuses a 10 MB body with 413 before reading it', async () => {
    const before = await t.rowCounts();
    const started = Date.now();
    const body = JSON.stringify({ query: `{ __typename ${' '.repeat(10_000_000)}}` });
    const status = await fetch(t.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${member}` },
      body,
    })
      .then((r) => r.status)
      // The server may answer 413 and close before the client has finished sending.
      .catch((error: Error) =>
        /other side closed|ECONNRESET|EPIPE|SocketError/.test(`${error.message} ${String(error.cause)}`)
          ? 413
          : error.message,
      );
    expect(status).toBe(413);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(await t.rowCounts()).toEqual(before);
    await expectOk(t, member, `{ queues { id } }`);
  });

  it('refuses a batch of 1,000 operations (batching is off by default)', async () => {
    const res = await refusedUnchanged(async () => {
      const response = await fetch(t.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json',
          authorization: `Bearer ${member}`,
        },
        body: JSON.stringify(Array.from({ length: 1000 }, () => ({ query: `mutation { __typename }` }))),
      });
      return {
        status: response.status,
        headers: response.headers,
        body: (await response.json()) as GqlResponse['body'],
      };
    });
    expect(codesOf(res).length).toBeGreaterThan(0);
    expect(codesOf(res)).not.toContain('INTERNAL_SERVER_ERROR');
  });

  it('keeps introspection and suggestions on outside production', async () => {
    await expectOk(t, null, `{ __schema { queryType { name } } }`);
    const res = await t.gql(member, `{ queus { id } }`);
    expect(res.body.errors![0]!.message).toMatch(/Did you mean "queues"/);
  });
});

describe('query limits (introspection and suggestions disabled)', () => {
  let app: FairwayApp;
  let db: TestDatabase;
  let url: string;
  let dataDir: string;
  beforeAll(async () => {
    db = await createTestDatabase('sqlite');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-limits-'));
    const { publicKey } = await generateKeyPair('RS256');
    const base = testConfig({
      dataDir,
      database: db.database,
      oidc: { publicKeyPem: await exportSPKI(publicKey) },
    });
    const config = { ...base, limits: { ...base.limits, introspection: false, fieldSuggestions: false } };
    app = await buildApp({ config });
    url = (await app.listen(0, '127.0.0.1')).url;
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await db?.dispose();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const post = async (query: string) => {
    const r = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/graphql-response+json' },
      body: JSON.stringify({ query }),
    });
    return { status: r.status, body: (await r.json()) as GqlResponse['body'] };
  };

  it('refuses introspection with a typed error; __typename still answers', async () => {
    for (const query of [`{ __schema { types { name } } }`, `{ __type(name: "Query") { name } }`]) {
      const res = await post(query);
      expect(res.status).toBe(400);
      expect(new Set(res.body.errors!.map((e) => e.extensions?.code))).toEqual(new Set(['BAD_USER_INPUT']));
      expect(new Set(res.body.errors!.map((e) => e.extensions?.limit))).toEqual(new Set(['introspection']));
      expect(res.body.errors![0]!.message).toMatch(/introspection is disabled/);
    }
    expect((await post(`{ __typename }`)).body).toEqual({ data: { __typename: 'Query' } });
  });

  it('hides field suggestions', async () => {
    const res = await post(`{ queus { id } tenant(slg: "x") { id } }`);
    expect(res.body.errors!.length).toBeGreaterThan(0);
    expect(res.body.errors!.map((e) => e.message).join(' ')).not.toMatch(/Did you mean/);
  });
});

describe('limits configuration', () => {
  it('turns introspection and suggestions off in production, on elsewhere, and reads overrides', () => {
    expect(load({ NODE_ENV: 'production' }).limits).toMatchObject({
      introspection: false,
      fieldSuggestions: false,
    });
    expect(load({ NODE_ENV: 'development' }).limits).toMatchObject({
      introspection: true,
      fieldSuggestions: true,
    });
    const config = load({
      NODE_ENV: 'production',
      FAIRWAY_MAX_DEPTH: '20',
      FAIRWAY_INTROSPECTION: 'true',
      FAIRWAY_MAX_BODY_BYTES: '2048',
    });
    expect(config.limits).toMatchObject({
      maxDepth: 20,
      introspection: true,
      fieldSuggestions: false,
      maxBodyBytes: 2048,
      maxAliases: DEFAULT_QUERY_LIMITS.maxAliases,
    });
  });
});
