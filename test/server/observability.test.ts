import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import { exportSPKI, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { ConfigError, load } from '../../src/config/index.js';
import { Queue } from '../../src/persistence/cluster/entities.js';
import { Tenant } from '../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import { buildApp, type FairwayApp } from '../../src/server/app.js';
import { type DemoCredential, seedDemo } from '../../src/server/demo/seed.js';
import { createLogger, yogaLogger } from '../../src/server/observability/observability.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { demoToken, testConfig } from '../helpers/harness.js';

type Line = Record<string, any>;

/** pino's destination in memory: every line parsed, and a way to await one. */
function captureLogs() {
  const lines: Line[] = [];
  let raw = '';
  const waiters = new Set<{ match: (line: Line) => boolean; resolve: (line: Line) => void }>();
  return {
    lines,
    raw: () => raw,
    stream: {
      write(chunk: string) {
        raw += chunk;
        const line = JSON.parse(chunk) as Line;
        lines.push(line);
        for (const waiter of waiters) if (waiter.match(line)) waiters.delete(waiter), waiter.resolve(line);
      },
    },
    next(match: (line: Line) => boolean, timeoutMs = 5000): Promise<Line> {
      const found = lines.find(match);
      if (found) return Promise.resolve(found);
      return new Promise((resolve, reject) => {
        const waiter = { match, resolve };
        waiters.add(waiter);
        setTimeout(
          () => waiters.delete(waiter) && reject(new Error('log line not written in time')),
          timeoutMs,
        ).unref();
      });
    },
  };
}

const logs = captureLogs();
let app: FairwayApp;
let db: TestDatabase;
let dataDir: string;
let url: string;
let credentials: DemoCredential[];
let auroraTenantId: string;
const globalId = (type: string, id: string) => Buffer.from(`${type}:${id}`).toString('base64');

async function post(bearer: string | null, query: string, variables?: Record<string, unknown>) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(bearer ? { authorization: `Bearer ${bearer}` } : {}) },
    body: JSON.stringify({ query, variables }),
  });
  const text = await response.text();
  return {
    status: response.status,
    requestId: response.headers.get('x-request-id'),
    text,
    body: JSON.parse(text) as { data?: any; errors?: { message: string; extensions?: { code?: string } }[] },
  };
}

beforeAll(async () => {
  db = await createTestDatabase('sqlite');
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-obs-'));
  const { publicKey } = await generateKeyPair('RS256');
  const config = testConfig({
    dataDir,
    database: db.database,
    oidc: { publicKeyPem: await exportSPKI(publicKey) },
  });
  // No logError: unexpected errors go where the server sends them, the structured logger.
  app = await buildApp({
    config,
    logger: createLogger({ logLevel: 'debug' }, logs.stream),
    reauthCacheMs: 0,
  });
  credentials = (await seedDemo(app.orm, dataDir)) ?? [];
  await app.scheduler.rebuild();
  url = (await app.listen(0, '127.0.0.1')).url;
  auroraTenantId = (await systemEntityManager(app.orm).findOneOrFail(Tenant, { slug: 'aurora-research' })).id;
});
afterAll(async () => {
  await app?.close();
  await db?.dispose();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

describe('request log', () => {
  it('writes one JSON line per operation: request id, operation, caller by ids, duration, status', async () => {
    const member = demoToken(credentials, 'aurora-research', 'MEMBER');
    const res = await post(member, `query ObsViewer { viewer { email } }`);
    expect(res.body.errors).toBeUndefined();
    expect(res.requestId).toBeTruthy();
    const line = await logs.next((l) => l.requestId === res.requestId && l.msg === 'graphql operation');
    expect(logs.lines.filter((l) => l.requestId === res.requestId)).toHaveLength(1);
    expect(line).toMatchObject({
      level: 'info',
      component: 'graphql',
      transport: 'http',
      method: 'POST',
      status: 200,
      operationName: 'ObsViewer',
      operationType: 'query',
      tenantIds: [auroraTenantId],
      platformAdmin: false,
      errorCodes: [],
      principal: { kind: 'api-token' },
    });
    expect(line.principal.userId).toEqual(expect.any(String));
    expect(line.principal.tokenId).toEqual(expect.any(String));
    expect(line.durationMs).toEqual(expect.any(Number));
    expect(line.durationMs).toBeGreaterThanOrEqual(0);
    expect(typeof line.time).toBe('string');
    // Ids, never the e-mail the answer carried.
    expect(JSON.stringify(line)).not.toContain('@');
  });

  it('logs a typed refusal at warn with its code, and a refused credential as anonymous', async () => {
    const viewer = demoToken(credentials, 'aurora-research', 'VIEWER');
    const queue = await systemEntityManager(app.orm).findOneOrFail(Queue, { tenant: auroraTenantId });
    const refused = await post(
      viewer,
      `mutation ObsRefused($in: SubmitJobInput!) { submitJob(input: $in) { id } }`,
      {
        in: {
          queueId: globalId('Queue', queue.id),
          name: 'refused',
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: 60,
        },
      },
    );
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(await logs.next((l) => l.requestId === refused.requestId)).toMatchObject({
      level: 'warn',
      operationType: 'mutation',
      operationName: 'ObsRefused',
      errorCodes: ['FORBIDDEN'],
    });

    const bogus = await post('fw_this-credential-does-not-exist', `query ObsBogus { viewer { email } }`);
    expect(bogus.status).toBe(401);
    expect(await logs.next((l) => l.requestId === bogus.requestId)).toMatchObject({
      level: 'warn',
      status: 401,
      principal: { kind: 'anonymous' },
      tenantIds: [],
      errorCodes: ['UNAUTHENTICATED'],
    });
  });

  it('logs an unexpected error with its stack server-side; the client sees "Unexpected error." only', async () => {
    const member = demoToken(credentials, 'aurora-research', 'MEMBER');
    const original = app.scheduler.queueStatus;
    app.scheduler.queueStatus = () => {
      throw new Error('scheduler exploded near /srv/fairway/internal-state.db');
    };
    let res;
    try {
      res = await post(member, `query ObsBroken { queues { name windowOpen } }`);
    } finally {
      app.scheduler.queueStatus = original;
    }
    expect(res.body.errors?.map((e) => [e.message, e.extensions?.code])).toEqual([
      ['Unexpected error.', 'INTERNAL_SERVER_ERROR'],
    ]);
    expect(res.text).not.toContain('exploded');
    expect(res.text).not.toContain('internal-state');
    expect(res.text).not.toMatch(/\bat .*\.ts:\d+/);

    const logged = await logs.next((l) => l.err?.message?.includes('scheduler exploded'));
    expect(logged.level).toBe('error');
    // The stack and the client's x-request-id find each other.
    expect(logged.requestId).toBe(res.requestId);
    expect(logged.err.type).toBe('Error');
    expect(logged.err.stack).toMatch(/scheduler exploded[\s\S]*\n\s+at /);
    expect(
      await logs.next((l) => l.requestId === res.requestId && l.msg === 'graphql operation'),
    ).toMatchObject({ level: 'error', errorCodes: ['INTERNAL_SERVER_ERROR'] });
  });

  it('never logs a credential or a variable: header tokens, connection params, variable values', async () => {
    const member = demoToken(credentials, 'aurora-research', 'MEMBER');
    const admin = demoToken(credentials, 'aurora-research', 'TENANT_ADMIN');
    const secretInVariables = 'variable-value-that-must-not-be-logged-7f3a';
    const queue = await systemEntityManager(app.orm).findOneOrFail(Queue, { tenant: auroraTenantId });
    const submitted = await post(
      admin,
      `mutation ObsSubmit($in: SubmitJobInput!) { submitJob(input: $in) { id } }`,
      {
        in: {
          queueId: globalId('Queue', queue.id),
          name: secretInVariables,
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: 60,
        },
      },
    );
    expect(submitted.body.errors).toBeUndefined();
    // A bad variable: graphql-js quotes its value in the error message.
    const badVariable = await post(
      admin,
      `mutation ObsBadVariable($in: SubmitJobInput!) { submitJob(input: $in) { id } }`,
      {
        in: {
          queueId: globalId('Queue', queue.id),
          name: 'bad',
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: secretInVariables,
        },
      },
    );
    expect(badVariable.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');
    expect(badVariable.text).toContain(secretInVariables);
    const bogusToken = 'fw_bogus-secret-credential-0123456789';
    const bogus = await post(bogusToken, `query ObsBogusToken { viewer { email } }`);

    // Over WebSocket: the credential travels in the connection params.
    const client = createClient({
      url: url.replace('http', 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${member}` },
      retryAttempts: 0,
    });
    try {
      const started = logs.next(
        (l) => l.msg === 'graphql subscription started' && l.operationName === 'ObsEvents',
      );
      const dispose = client.subscribe(
        {
          query: `subscription ObsEvents($t: ID!) { tenantEvents(tenantId: $t) { kind } }`,
          variables: { t: globalId('Tenant', auroraTenantId) },
        },
        { next: () => undefined, error: () => undefined, complete: () => undefined },
      );
      const line = await started;
      expect(line).toMatchObject({
        level: 'info',
        transport: 'ws',
        operationType: 'subscription',
        tenantIds: [auroraTenantId],
        principal: { kind: 'api-token' },
        errorCodes: [],
      });
      expect(line.requestId).toEqual(expect.any(String));
      const ended = logs.next(
        (l) => l.msg === 'graphql subscription ended' && l.requestId === line.requestId,
      );
      dispose();
      expect((await ended).level).toBe('debug');
    } finally {
      await client.dispose();
    }

    await logs.next((l) => l.requestId === bogus.requestId);
    const raw = logs.raw();
    for (const secret of [member, admin, bogusToken, secretInVariables]) expect(raw).not.toContain(secret);
    expect(raw).not.toMatch(/Bearer/i);
  });
});

describe('createLogger', () => {
  it('redacts credentials wherever a caller puts them, and honours the level', () => {
    const capture = captureLogs();
    const logger = createLogger({ logLevel: 'info' }, capture.stream);
    logger.info(
      {
        authorization: 'Bearer abc',
        headers: { authorization: 'Bearer def', cookie: 'sid=ghi' },
        input: { password: 'jkl', nested: { token: 'mno' } },
        variables: { x: 'pqr' },
        kept: 'visible',
      },
      'hello',
    );
    logger.debug({}, 'below the level');
    expect(capture.lines).toHaveLength(1);
    for (const secret of ['abc', 'def', 'ghi', 'jkl', 'mno', 'pqr'])
      expect(capture.raw()).not.toContain(secret);
    expect(capture.lines[0]).toMatchObject({
      level: 'info',
      msg: 'hello',
      kept: 'visible',
      authorization: '[redacted]',
      headers: { authorization: '[redacted]' },
    });

    const silent = captureLogs();
    createLogger({ logLevel: 'silent' }, silent.stream).error({ err: new Error('x') }, 'nothing');
    expect(silent.lines).toEqual([]);
  });

  it('gives yoga a logger: its text only; its debug trace and the errors it masked are not kept (maskError logs the unexpected ones)', () => {
    const capture = captureLogs();
    const yoga = yogaLogger(createLogger({ logLevel: 'debug' }, capture.stream));
    yoga.info('Processing', { params: { variables: { secret: 'do-not-log-me' } } });
    yoga.error(new Error('Variable "$x" got invalid value "quoted-secret"'));
    yoga.debug('Parsing request to extract GraphQL parameters');
    yoga.warn('something odd');
    expect(capture.lines.map((l) => [l.level, l.component, l.msg])).toEqual([
      ['info', 'yoga', 'Processing'],
      ['warn', 'yoga', 'something odd'],
    ]);
    expect(capture.raw()).not.toContain('quoted-secret');
    expect(capture.raw()).not.toContain('do-not-log-me');
  });
});

describe('observability configuration', () => {
  it('defaults: info in production, warn in development (the demo terminal), error under tests; tracing off', () => {
    expect(load({ NODE_ENV: 'production' }).observability).toEqual({ logLevel: 'info', tracing: null });
    expect(load({ NODE_ENV: 'test' }).observability.logLevel).toBe('error');
    expect(load({ NODE_ENV: 'development' }).observability.logLevel).toBe('warn');
    expect(load({ NODE_ENV: 'production', LOG_LEVEL: 'DEBUG' }).observability.logLevel).toBe('debug');
    expect(load({ NODE_ENV: 'production', LOG_LEVEL: 'silent' }).observability.logLevel).toBe('silent');
  });

  it('FAIRWAY_TRACING=otlp reads the standard OTEL_* variables', () => {
    expect(load({ NODE_ENV: 'production', FAIRWAY_TRACING: 'otlp' }).observability.tracing).toEqual({
      url: 'http://localhost:4318/v1/traces',
      headers: {},
      serviceName: 'fairway',
    });
    expect(
      load({
        NODE_ENV: 'production',
        FAIRWAY_TRACING: 'otlp',
        OTEL_EXPORTER_OTLP_ENDPOINT: 'https://otel.example:4318/',
        OTEL_SERVICE_NAME: 'fairway-eu',
        OTEL_EXPORTER_OTLP_HEADERS: 'x-api-key=a%3Db, team=ml',
      }).observability.tracing,
    ).toEqual({
      url: 'https://otel.example:4318/v1/traces',
      headers: { 'x-api-key': 'a=b', team: 'ml' },
      serviceName: 'fairway-eu',
    });
    expect(
      load({
        NODE_ENV: 'production',
        FAIRWAY_TRACING: 'otlp',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/custom',
      }).observability.tracing?.url,
    ).toBe('http://collector:4318/custom');
  });

  it('bad values stop the server with a message naming the variable', () => {
    expect(() => load({ NODE_ENV: 'production', LOG_LEVEL: 'verbose' }).observability).toThrow(ConfigError);
    expect(() => load({ LOG_LEVEL: 'verbose' })).toThrow(
      /LOG_LEVEL: "verbose" is not one of fatal, error, warn, info, debug, trace, silent/,
    );
    expect(() => load({ NODE_ENV: 'production', FAIRWAY_TRACING: 'jaeger' }).observability).toThrow(
      /FAIRWAY_TRACING: "jaeger" is not one of off, otlp/,
    );
    expect(
      () =>
        load({
          NODE_ENV: 'production',
          FAIRWAY_TRACING: 'otlp',
          OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318',
        }).observability,
    ).toThrow(/OTEL_EXPORTER_OTLP_ENDPOINT/);
    expect(
      () =>
        load({ NODE_ENV: 'production', FAIRWAY_TRACING: 'otlp', OTEL_EXPORTER_OTLP_HEADERS: 'novalue' })
          .observability,
    ).toThrow(/OTEL_EXPORTER_OTLP_HEADERS/);
  });
});
