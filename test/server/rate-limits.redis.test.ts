import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { exportSPKI, generateKeyPair } from 'jose';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { FairwayConfig } from '../../src/config/index.js';
import { buildApp, type FairwayApp } from '../../src/server/app.js';
import { type DemoCredential, seedDemo } from '../../src/server/demo/seed.js';
import { createTestDatabase, describeNeeding, serviceUrl, type TestDatabase } from '../helpers/database.js';
import { demoToken, testConfig } from '../helpers/harness.js';
import { testRateLimits } from '../helpers/rate-limits.js';
import { startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Two replicas (two apps on one database) with Redis between them through a proxy whose
 * network the test cuts: with Redis they share one budget per token; without it each limits
 * on its own (answers, no hang, no unhandled rejection); with Redis back, shared again.
 */

const VIEWER = `{ viewer { email } }`;
/** 10 requests per 10 s per token, shared through Redis. */
const TOKEN_BUDGET = 10;

describeNeeding(['redis'], 'rate limits shared through Redis', () => {
  const keyPrefix = `fairway:rate:test-redis-${randomBytes(4).toString('hex')}`;
  let db: TestDatabase;
  let dataDir: string;
  let proxy: TcpProxy;
  let redis: Redis;
  let a: { app: FairwayApp; url: string };
  let b: { app: FairwayApp; url: string };
  let credentials: DemoCredential[];
  const logged = { a: [] as string[], b: [] as string[] };
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    const target = new URL(serviceUrl('redis')!);
    redis = new Redis(target.toString());
    proxy = await startTcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
    db = await createTestDatabase('sqlite');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-rate-redis-'));
    const { publicKey } = await generateKeyPair('RS256');
    const base = testConfig({
      dataDir,
      database: db.database,
      oidc: { publicKeyPem: await exportSPKI(publicKey) },
    });
    const config: FairwayConfig = {
      ...base,
      server: { ...base.server, redisUrl: `redis://127.0.0.1:${proxy.port}` },
      rateLimits: { ...testRateLimits(), principal: { perSecond: 1, burst: TOKEN_BUDGET }, keyPrefix },
    };
    const appA = await buildApp({ config, logError: (e) => logged.a.push(String(e)) });
    credentials = (await seedDemo(appA.orm, dataDir)) ?? [];
    // The second replica on the same database (its own limiter, Redis connection and HTTP port).
    const appB = await buildApp({ config, orm: appA.orm, logError: (e) => logged.b.push(String(e)) });
    a = { app: appA, url: (await appA.listen(0, '127.0.0.1')).url };
    b = { app: appB, url: (await appB.listen(0, '127.0.0.1')).url };
  }, 30_000);

  afterAll(async () => {
    await b?.app.close();
    await a?.app.close();
    await proxy?.close();
    if (redis) {
      const keys = await redis.keys(`${keyPrefix}:*`);
      if (keys.length) await redis.del(...keys);
      await redis.quit();
    }
    await db?.dispose();
    fs.rmSync(dataDir, { recursive: true, force: true });
    process.off('unhandledRejection', onUnhandled);
  });

  const post = async (url: string, bearer: string) => {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
      body: JSON.stringify({ query: VIEWER }),
    });
    const body = (await response.json()) as { errors?: { extensions?: { code?: string } }[] };
    return body.errors?.[0]?.extensions?.code ?? 'OK';
  };
  /** `count` requests to each replica, one after another; the outcomes per replica. */
  const sendBoth = async (bearer: string, count: number) => {
    const outcomes = { a: [] as string[], b: [] as string[] };
    for (let i = 0; i < count; i++) {
      outcomes.a.push(await post(a.url, bearer));
      outcomes.b.push(await post(b.url, bearer));
    }
    return outcomes;
  };
  const accepted = (codes: string[]) => codes.filter((c) => c === 'OK').length;

  it("shares a token's budget between replicas", async () => {
    const { a: onA, b: onB } = await sendBoth(demoToken(credentials, 'aurora-research', 'MEMBER'), 7);
    expect(accepted(onA) + accepted(onB)).toBe(TOKEN_BUDGET);
    expect([...onA, ...onB].filter((c) => c !== 'OK').every((c) => c === 'RATE_LIMITED')).toBe(true);
  });

  it('limits per replica while Redis is cut, answering at once and without an unhandled rejection', async () => {
    await proxy.setMode('cut');
    const started = Date.now();
    const { a: onA, b: onB } = await sendBoth(demoToken(credentials, 'aurora-research', 'VIEWER'), 12);
    // Each replica's own budget: neither refusing everything nor letting everything through.
    expect([accepted(onA), accepted(onB)]).toEqual([TOKEN_BUDGET, TOKEN_BUDGET]);
    expect(onA.slice(TOKEN_BUDGET)).toEqual(['RATE_LIMITED', 'RATE_LIMITED']);
    expect(Date.now() - started).toBeLessThan(5000);
    expect(unhandled).toEqual([]);
    // The outage is reported once per replica, not per request.
    expect(logged.a.filter((m) => m.includes('rate limits: Redis unavailable'))).toHaveLength(1);
    expect(logged.b.filter((m) => m.includes('rate limits: Redis unavailable'))).toHaveLength(1);
  });

  it('shares the budget again once Redis is back', async () => {
    await proxy.setMode('pass');
    // Each replica's limiter is back when a request's count lands in Redis (the platform token's, kept
    // apart).
    const platform = demoToken(credentials, null, 'PLATFORM_ADMIN');
    for (const replica of [a, b]) {
      const deadline = Date.now() + 8000;
      for (;;) {
        await redis.del(...(await redis.keys(`${keyPrefix}:admin:*`)), `${keyPrefix}:none`);
        expect(await post(replica.url, platform)).toBe('OK');
        if ((await redis.keys(`${keyPrefix}:admin:*`)).length) break;
        if (Date.now() > deadline) throw new Error('the limiter did not reconnect to Redis within 8 s');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
    const { a: onA, b: onB } = await sendBoth(demoToken(credentials, 'aurora-research', 'AUDITOR'), 7);
    expect(accepted(onA) + accepted(onB)).toBe(TOKEN_BUDGET);
    expect(unhandled).toEqual([]);
    const unexpected = [...logged.a, ...logged.b].filter(
      (m) => !/Redis|ECONNREFUSED|ECONNRESET|Connection is closed|EPIPE|Stream isn't writeable/i.test(m),
    );
    expect(unexpected).toEqual([]);
  });
});
