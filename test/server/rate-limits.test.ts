import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import { exportSPKI, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import WebSocket from 'ws';
import { load } from '../../src/config/index.js';
import { buildApp, type FairwayApp } from '../../src/server/app.js';
import { type DemoCredential, seedDemo } from '../../src/server/demo/seed.js';
import { clientIpOf } from '../../src/server/rate-limits/client-address.js';
import type { RateLimitConfig } from '../../src/server/rate-limits/limiter.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { demoToken, testConfig } from '../helpers/harness.js';
import { testRateLimits } from '../helpers/rate-limits.js';

// One token sent 140 requests/s, 218 bad-token guesses/s and 110 previewJob/s and was
// never slowed. Small budgets here, in windows long enough (8-10 s) that a flood lands in one
// window even on a loaded machine; the end of a window is reached by moving the clock.
const LIMITS: Partial<RateLimitConfig> = {
  principal: { perSecond: 1, burst: 10 },
  tenant: { perSecond: 3, burst: 24 },
  anonymousPerMinute: 12,
  authFailuresPerMinute: 5,
  trustProxyHops: 0,
};

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: {
    data?: Record<string, any> | null;
    errors?: { message: string; extensions?: Record<string, any> }[];
  };
}

let app: FairwayApp;
let db: TestDatabase;
let dataDir: string;
let url: string;
let credentials: DemoCredential[];
const serverErrors: unknown[] = [];

beforeAll(async () => {
  db = await createTestDatabase('sqlite');
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-rate-'));
  const { publicKey } = await generateKeyPair('RS256');
  const config = {
    ...testConfig({ dataDir, database: db.database, oidc: { publicKeyPem: await exportSPKI(publicKey) } }),
    rateLimits: { ...testRateLimits(), ...LIMITS },
  };
  app = await buildApp({ config, logError: (e) => serverErrors.push(e), reauthCacheMs: 0 });
  credentials = (await seedDemo(app.orm, dataDir)) ?? [];
  await app.scheduler.rebuild();
  url = (await app.listen(0, '127.0.0.1')).url;
  await post(null, `{ __typename }`, {}, { from: '127.0.0.9' }); // warm up: the floods below must land within one window
}, 30_000);

afterAll(async () => {
  await app?.close();
  await db?.dispose();
  fs.rmSync(dataDir, { recursive: true, force: true });
  expect(serverErrors.map(String)).toEqual([]);
});

/** A POST from a chosen local address (127.0.0.0/8 is all loopback on Linux): a second client IP without a
 * proxy.
 */
function post(
  bearer: string | null,
  query: string,
  variables: Record<string, unknown> = {},
  options: { from?: string; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const body = JSON.stringify({ query, variables });
  return new Promise((resolve, reject) => {
    const request = http.request(
      url,
      {
        method: 'POST',
        localAddress: options.from ?? '127.0.0.1',
        agent: false,
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json',
          ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
          ...options.headers,
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () =>
          resolve({ status: response.statusCode!, headers: response.headers, body: JSON.parse(text) }),
        );
      },
    );
    request.on('error', reject);
    request.end(body);
  });
}

const token = (tenant: string | null, role: DemoCredential['role']) => demoToken(credentials, tenant, role);
const VIEWER = `{ viewer { email } }`;
const codeOf = (a: Answer) => a.body.errors?.[0]?.extensions?.code ?? 'OK';
const refused = (answers: Answer[]) => answers.filter((a) => codeOf(a) === 'RATE_LIMITED');
/** Runs `send` as if the wait a refusal named were over (the in-memory limiter reads Date.now). */
async function afterTheWait<T>(a: Answer, send: () => Promise<T>): Promise<T> {
  vi.useFakeTimers({
    toFake: ['Date'],
    now: Date.now() + a.body.errors![0]!.extensions!.retryAfterSeconds * 1000,
  });
  try {
    return await send();
  } finally {
    vi.useRealTimers();
  }
}

async function rowCount(entity: 'AuditEvent' | 'Job'): Promise<number> {
  const table = app.orm.getMetadata().find(entity)!.tableName;
  const [row] = await app.orm.em
    .getConnection()
    .execute<{ n: number }[]>(`select count(*) as n from ${table}`);
  return Number(row!.n);
}

describe('rate limits', () => {
  it('refuses mutations (submitJob, previewJob) before they run: no job, no audit row', async () => {
    const member = token('borealis-inference', 'MEMBER');
    const queues = await post(member, `{ queues { id } }`);
    const input = {
      queueId: queues.body.data!.queues[0].id,
      name: 'rate-limited job',
      podSets: [{ gpusPerPod: 1 }],
      expectedDurationSeconds: 3600,
    };
    const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
    const PREVIEW = `mutation($in: SubmitJobInput!) { previewJob(input: $in) { __typename } }`;
    // Allowed, a submission writes a job and an audit row: the counts below can move.
    const [jobs0, audit0] = [await rowCount('Job'), await rowCount('AuditEvent')];
    const ok = await post(member, SUBMIT, { in: input });
    expect(codeOf(ok), JSON.stringify(ok.body)).toBe('OK');
    expect([await rowCount('Job'), await rowCount('AuditEvent')]).toEqual([jobs0 + 1, audit0 + 1]);

    // A mutation costs 3 points: the budget of 10 is spent after a few.
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        post(member, i % 2 ? PREVIEW : SUBMIT, { in: { ...input, name: `flood ${i}` } }),
      ),
    );
    const [jobs1, audit1] = [await rowCount('Job'), await rowCount('AuditEvent')];
    const refusals = refused(answers);
    expect(refusals.length).toBeGreaterThanOrEqual(4);
    const acceptedSubmits = answers.filter((r, i) => i % 2 === 0 && codeOf(r) === 'OK').length;
    expect(jobs1).toBe(jobs0 + 1 + acceptedSubmits);
    expect(audit1).toBe(audit0 + 1 + acceptedSubmits);

    const more = await Promise.all([
      post(member, SUBMIT, { in: { ...input, name: 'late' } }),
      post(member, PREVIEW, { in: input }),
    ]);
    expect(more.map(codeOf)).toEqual(['RATE_LIMITED', 'RATE_LIMITED']);
    expect([await rowCount('Job'), await rowCount('AuditEvent')]).toEqual([jobs1, audit1]);
  });

  it("refuses a flood from tenant A's token with 429, Retry-After and retryAfterSeconds, never tenant B's in the same moment, and accepts A again after the wait", async () => {
    const a = token('aurora-research', 'MEMBER');
    const b = token('borealis-inference', 'TENANT_ADMIN');
    const flood = Array.from({ length: 30 }, () => post(a, VIEWER));
    const neighbour = Array.from({ length: 8 }, () => post(b, VIEWER));
    const [fromA, fromB] = await Promise.all([Promise.all(flood), Promise.all(neighbour)]);

    expect(fromB.map(codeOf)).toEqual(Array(8).fill('OK'));
    const refusals = refused(fromA);
    // 10 points per 10 s: at most two windows' worth pass, the rest are refused.
    expect(refusals.length).toBeGreaterThanOrEqual(10);
    expect(fromA.filter((r) => codeOf(r) === 'OK').length).toBeLessThanOrEqual(20);
    for (const r of refusals) {
      const error = r.body.errors![0]!;
      expect(r.status).toBe(429);
      expect(r.body.data ?? null).toBeNull();
      expect(error.extensions).toEqual({
        code: 'RATE_LIMITED',
        limit: 'token',
        retryAfterSeconds: expect.any(Number),
      });
      expect(error.extensions!.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(Number.isInteger(error.extensions!.retryAfterSeconds)).toBe(true);
      expect(r.headers['retry-after']).toBe(String(error.extensions!.retryAfterSeconds));
      expect(error.message).toMatch(/token.*retry in \d+ s/);
    }

    // One second short of the wait it is still refused; after it, accepted.
    const last = refusals.at(-1)!;
    const early = {
      ...last,
      body: {
        errors: [
          {
            message: '',
            extensions: { retryAfterSeconds: last.body.errors![0]!.extensions!.retryAfterSeconds - 1 },
          },
        ],
      },
    };
    expect(codeOf(await afterTheWait(early, () => post(a, VIEWER)))).toBe('RATE_LIMITED');
    expect(codeOf(await afterTheWait(last, () => post(a, VIEWER)))).toBe('OK');
  });

  it("refuses a tenant's tokens together past the tenant's budget, each within its own", async () => {
    // Three tokens, 9 requests each: within each token's 10, past the tenant's 24.
    const tokens = (['TENANT_ADMIN', 'VIEWER', 'AUDITOR'] as const).map((role) =>
      token('aurora-research', role),
    );
    const answers = await Promise.all(Array.from({ length: 27 }, (_, i) => post(tokens[i % 3]!, VIEWER)));
    const refusals = refused(answers);
    expect(refusals.length).toBeGreaterThan(0);
    expect(refusals.every((r) => r.body.errors![0]!.extensions!.limit === 'tenant' && r.status === 429)).toBe(
      true,
    );
    expect(codeOf(await post(token('borealis-inference', 'TENANT_ADMIN'), VIEWER))).toBe('OK');
  });

  it('cuts off bad-token guesses from one IP (valid tokens from it too), not from another IP, whatever X-Forwarded-For claims', async () => {
    const guess = (i: number, from: string) =>
      post(
        `fw_guess_${i}_${'x'.repeat(30)}`,
        VIEWER,
        {},
        { from, headers: { 'x-forwarded-for': `10.0.0.${i}` } },
      );
    const first = [];
    for (let i = 0; i < 5; i++) first.push(await guess(i, '127.0.0.2'));
    expect(first.map(codeOf)).toEqual(Array(5).fill('UNAUTHENTICATED'));

    const cut = await guess(6, '127.0.0.2');
    expect(codeOf(cut)).toBe('RATE_LIMITED');
    expect(cut.status).toBe(429);
    expect(cut.body.errors![0]!.extensions).toMatchObject({ limit: 'credential-failures' });
    expect(Number(cut.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // The window is a minute: a valid token from that address is refused too (a guesser learns nothing).
    const valid = token(null, 'PLATFORM_ADMIN');
    expect(codeOf(await post(valid, VIEWER, {}, { from: '127.0.0.2' }))).toBe('RATE_LIMITED');
    // Another client is unaffected.
    expect(codeOf(await post(valid, VIEWER, {}, { from: '127.0.0.3' }))).toBe('OK');
    expect(codeOf(await guess(7, '127.0.0.3'))).toBe('UNAUTHENTICATED');
  });

  it('limits anonymous requests per IP', async () => {
    const answers = await Promise.all(
      Array.from({ length: 16 }, () => post(null, `{ __typename }`, {}, { from: '127.0.0.4' })),
    );
    const refusals = refused(answers);
    expect(refusals.length).toBe(4);
    expect(refusals[0]!.body.errors![0]!.extensions).toMatchObject({ limit: 'anonymous' });
    expect(codeOf(await post(null, `{ __typename }`, {}, { from: '127.0.0.5' }))).toBe('OK');
  });

  it('charges a subscription when it starts over WebSocket, and refuses it without HTTP details once the budget is spent', async () => {
    const viewer = token('borealis-inference', 'TENANT_ADMIN');
    const me = await post(viewer, `{ viewer { memberships { tenant { id } } } }`);
    const tenantId = me.body.data!.viewer.memberships[0].tenant.id;
    const spend = await Promise.all(Array.from({ length: 12 }, () => post(viewer, VIEWER)));
    expect(refused(spend).length).toBeGreaterThan(0);
    const client = createClient({
      url: url.replace('http', 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${viewer}` },
      retryAttempts: 0,
    });
    try {
      const outcome = await new Promise<unknown>((resolve) => {
        client.subscribe(
          {
            query: `subscription($t: ID!) { tenantEvents(tenantId: $t) { __typename } }`,
            variables: { t: tenantId },
          },
          {
            next: (value) => resolve(value),
            error: (error) => resolve(error),
            complete: () => resolve('complete'),
          },
        );
      });
      const errors =
        (outcome as { errors?: { extensions?: Record<string, unknown> }[] }).errors ??
        (outcome as { extensions?: unknown }[]);
      expect(JSON.stringify(errors)).toContain('RATE_LIMITED');
      expect(JSON.stringify(errors)).not.toContain('"http"');
    } finally {
      await client.dispose();
    }
  });

  it('cuts off bad-token guesses in WebSocket connection_init from one IP too (closed 4429), not another', async () => {
    /** Opens a graphql-ws socket from `from`, sends connection_init, and tells how it ended. */
    const connect = (bearer: string, from: string) =>
      new Promise<{ acked: boolean; code?: number; reason?: string }>((resolve, reject) => {
        const socket = new WebSocket(url.replace(/^http/, 'ws'), 'graphql-transport-ws', {
          localAddress: from,
        });
        socket.on('open', () =>
          socket.send(
            JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${bearer}` } }),
          ),
        );
        socket.on('message', (data) => {
          if (JSON.parse(String(data)).type === 'connection_ack') {
            socket.close();
            resolve({ acked: true });
          }
        });
        socket.on('close', (code, reason) => resolve({ acked: false, code, reason: String(reason) }));
        socket.on('error', reject);
      });
    const guesses = [];
    for (let i = 0; i < 5; i++) guesses.push(await connect(`fw_wsguess_${i}_${'y'.repeat(30)}`, '127.0.0.6'));
    expect(guesses.map((g) => g.code)).toEqual(Array(5).fill(4403));
    const cut = await connect(`fw_wsguess_6_${'y'.repeat(30)}`, '127.0.0.6');
    expect(cut).toMatchObject({ acked: false, code: 4429 });
    expect(cut.reason).toMatch(/failed credentials/);
    const valid = token('aurora-research', 'VIEWER');
    expect((await connect(valid, '127.0.0.6')).code).toBe(4429); // the address is cut off, valid token or not
    expect(await connect(valid, '127.0.0.7')).toEqual({ acked: true });
  });
});

describe('rate limit configuration', () => {
  it('has defaults, can be turned off, and names a bad variable', () => {
    const defaults = load({}).rateLimits;
    expect(defaults).toMatchObject({
      enabled: true,
      principal: { perSecond: 150, burst: 600 },
      tenant: { perSecond: 450, burst: 1800 },
      anonymousPerMinute: 300,
      authFailuresPerMinute: 20,
      trustProxyHops: 0,
      keyPrefix: 'fairway:rate',
    });
    // NODE_ENV changes nothing: the test suite passes its own budgets (test/helpers/rate-limits.ts).
    expect(load({ NODE_ENV: 'test' }).rateLimits).toEqual(defaults);
    // Tests run local loops far faster than any remote client: the same limits, 20× the budget.
    expect(testRateLimits()).toMatchObject({
      enabled: true,
      principal: { perSecond: 3000, burst: 12000 },
      tenant: { perSecond: 9000, burst: 36000 },
      anonymousPerMinute: 6000,
      authFailuresPerMinute: 400,
    });
    expect(load({ FAIRWAY_RATE_TOKEN_PER_SECOND: '1000' }).rateLimits.principal).toEqual({
      perSecond: 1000,
      burst: 1000,
    });
    expect(load({ FAIRWAY_RATE_LIMITS: 'off' }).rateLimits.enabled).toBe(false);
    expect(
      load({ FAIRWAY_RATE_TOKEN_PER_SECOND: '5', FAIRWAY_RATE_TOKEN_BURST: '20' }).rateLimits.principal,
    ).toEqual({ perSecond: 5, burst: 20 });
    expect(() => load({ FAIRWAY_RATE_TOKEN_PER_SECOND: 'fast' }).rateLimits).toThrow(
      /FAIRWAY_RATE_TOKEN_PER_SECOND/,
    );
    expect(() => load({ FAIRWAY_RATE_AUTH_FAILURES_PER_MINUTE: '0' }).rateLimits).toThrow(
      /FAIRWAY_RATE_AUTH_FAILURES_PER_MINUTE: must be at least 1/,
    );
    expect(() => load({ FAIRWAY_RATE_TENANT_BURST: '10' }).rateLimits).toThrow(/FAIRWAY_RATE_TENANT_BURST/);
    expect(() => load({ FAIRWAY_RATE_LIMITS: 'maybe' }).rateLimits).toThrow(/FAIRWAY_RATE_LIMITS/);
  });

  it('believes X-Forwarded-For only as far as FAIRWAY_TRUST_PROXY_HOPS', () => {
    const ctx = (xff?: string) =>
      ({
        req: { socket: { remoteAddress: '::ffff:10.1.1.1' }, headers: xff ? { 'x-forwarded-for': xff } : {} },
      }) as never;
    expect(clientIpOf(ctx('6.6.6.6'), 0)).toBe('10.1.1.1');
    expect(clientIpOf(ctx('6.6.6.6, 203.0.113.7'), 1)).toBe('203.0.113.7');
    expect(clientIpOf(ctx('6.6.6.6, 203.0.113.7, 10.0.0.2'), 2)).toBe('203.0.113.7');
    expect(clientIpOf(ctx(), 1)).toBe('10.1.1.1');
  });
});
