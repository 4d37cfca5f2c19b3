import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { exportSPKI, generateKeyPair } from 'jose';
import { buildApp, type FairwayApp } from '../../src/server/app.js';
import { type DemoCredential, seedDemo } from '../../src/server/demo/seed.js';
import { createTestDatabase, type Dialect, type TestDatabase } from './database.js';
import { demoToken, testConfig } from './harness.js';

/**
 * An in-process app on a fresh, seeded database like harness.ts, for the scheduler service
 * tests that provoke failures on purpose: the errors the server logs are collected and
 * returned instead of failing `close()`, and the scheduler's timings can be set.
 */
export interface SchedulerTestApp {
  app: FairwayApp;
  db: TestDatabase;
  url: string;
  errors: unknown[];
  token(tenant: string, role: DemoCredential['role']): string;
  gql<T = any>(
    bearer: string,
    query: string,
    variables?: Record<string, unknown>,
  ): Promise<{ data?: T; errors?: { message: string }[] }>;
  close(): Promise<void>;
}

export async function startSchedulerApp(options: {
  dialect: Dialect;
  scheduler?: { debounceMs?: number; resyncIntervalMs?: number; leaderRetryMs?: number };
}): Promise<SchedulerTestApp> {
  const db = await createTestDatabase(options.dialect);
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-sched-'));
  const { publicKey } = await generateKeyPair('RS256');
  const config = testConfig({
    dataDir,
    database: db.database,
    oidc: { publicKeyPem: await exportSPKI(publicKey) },
  });
  const errors: unknown[] = [];
  const app = await buildApp({
    config,
    logError: (e) => errors.push(e),
    reauthCacheMs: 0,
    scheduler: options.scheduler,
  });
  const credentials = (await seedDemo(app.orm, dataDir, Date.now))!;
  await app.scheduler.rebuild();
  const { url } = await app.listen(0, '127.0.0.1');
  return {
    app,
    db,
    url,
    errors,
    token(tenant, role) {
      return demoToken(credentials, tenant, role);
    },
    gql: (bearer, query, variables) => postGraphql(url, bearer, query, variables),
    async close() {
      await app.close();
      await db.dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** One GraphQL request over HTTP with a bearer token; the parsed body. */
export async function postGraphql<T>(
  url: string,
  bearer: string,
  query: string,
  variables?: Record<string, unknown>,
): Promise<T> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
      authorization: `Bearer ${bearer}`,
    },
    body: JSON.stringify({ query, variables }),
  });
  return (await response.json()) as T;
}
