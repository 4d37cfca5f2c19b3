import fs from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { createSchema, createYoga } from 'graphql-yoga';
import { exportSPKI, generateKeyPair } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTraceparent } from '../../plugins/useTracing.js';
import { load } from '../../src/config/index.js';
import { Queue } from '../../src/persistence/cluster/entities.js';
import { Tenant } from '../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import { buildApp, type FairwayApp } from '../../src/server/app.js';
import { seedDemo } from '../../src/server/demo/seed.js';
import { createLogger, observabilityPlugins } from '../../src/server/observability/observability.js';
import { createTestDatabase, type TestDatabase } from '../helpers/database.js';
import { demoToken, testConfig } from '../helpers/harness.js';

/** An OTLP/HTTP receiver: keeps every request's path, headers and (JSON) body. */
interface Received {
  path: string;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}
let receiver: Server;
let receiverUrl: string;
const received: Received[] = [];

beforeAll(async () => {
  receiver = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      received.push({
        path: req.url ?? '',
        headers: req.headers,
        text: (req.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body).toString('utf8'),
      });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => receiver?.close(resolve));
});

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: {
    key: string;
    value: { stringValue?: string; boolValue?: boolean; arrayValue?: { values: { stringValue?: string }[] } };
  }[];
  events?: { name: string; attributes: { key: string }[] }[];
  status?: { code?: number };
}

/** Spans of every export, with the resource's service.name and attributes as plain values. */
function spansOf(requests: Received[]) {
  return requests.flatMap((request) =>
    (
      JSON.parse(request.text).resourceSpans as {
        resource: { attributes: OtlpSpan['attributes'] };
        scopeSpans: { spans: OtlpSpan[] }[];
      }[]
    ).flatMap((resourceSpans) => {
      const service = resourceSpans.resource.attributes.find((a) => a.key === 'service.name')?.value
        .stringValue;
      return resourceSpans.scopeSpans.flatMap((scope) =>
        scope.spans.map((span) => ({
          ...span,
          service,
          attrs: Object.fromEntries(
            span.attributes.map(({ key, value }) => [
              key,
              value.arrayValue
                ? value.arrayValue.values.map((v) => v.stringValue)
                : (value.stringValue ?? value.boolValue),
            ]),
          ),
        })),
      );
    }),
  );
}

describe('tracing on (FAIRWAY_TRACING=otlp)', () => {
  let app: FairwayApp;
  let db: TestDatabase;
  let dataDir: string;

  afterAll(async () => {
    await app?.close();
    await db?.dispose();
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('exports one span per operation to the collector, with Fairway ids and no token, variable or error text', async () => {
    db = await createTestDatabase('sqlite');
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-trace-'));
    const { publicKey } = await generateKeyPair('RS256');
    const observability = load({
      NODE_ENV: 'test',
      LOG_LEVEL: 'silent',
      FAIRWAY_TRACING: 'otlp',
      OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
      OTEL_SERVICE_NAME: 'fairway-test',
      OTEL_EXPORTER_OTLP_HEADERS: 'x-collector-key=collector-secret',
    }).observability;
    const config = {
      ...testConfig({ dataDir, database: db.database, oidc: { publicKeyPem: await exportSPKI(publicKey) } }),
      observability,
    };
    app = await buildApp({ config, logger: createLogger(observability), reauthCacheMs: 0 });
    const credentials = (await seedDemo(app.orm, dataDir)) ?? [];
    await app.scheduler.rebuild();
    const { url } = await app.listen(0, '127.0.0.1');
    const tenantId = (await systemEntityManager(app.orm).findOneOrFail(Tenant, { slug: 'aurora-research' }))
      .id;
    const queue = await systemEntityManager(app.orm).findOneOrFail(Queue, { tenant: tenantId });
    const queueId = Buffer.from(`Queue:${queue.id}`).toString('base64');
    const admin = demoToken(credentials, 'aurora-research', 'TENANT_ADMIN');
    const secret = 'variable-value-never-in-a-span-91c2';
    const traceparent = '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01';
    const post = async (
      query: string,
      variables?: Record<string, unknown>,
      headers: Record<string, string> = {},
    ) => {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${admin}`, ...headers },
        body: JSON.stringify({ query, variables }),
      });
      return {
        requestId: response.headers.get('x-request-id')!,
        body: (await response.json()) as { errors?: { extensions?: { code?: string } }[] },
      };
    };

    const query = await post(`query TraceViewer { viewer { email } }`, undefined, { traceparent });
    expect(query.body.errors).toBeUndefined();
    const mutation = await post(
      `mutation TraceSubmit($in: SubmitJobInput!) { submitJob(input: $in) { id } }`,
      { in: { queueId, name: secret, podSets: [{ gpusPerPod: 1 }], expectedDurationSeconds: 60 } },
    );
    expect(mutation.body.errors).toBeUndefined();
    // graphql-js quotes a bad variable's value in its message: the span must not carry it.
    const refused = await post(
      `mutation TraceBadInput($in: SubmitJobInput!) { submitJob(input: $in) { id } }`,
      { in: { queueId, name: 'x', podSets: [{ gpusPerPod: 1 }], expectedDurationSeconds: secret } },
    );
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('BAD_USER_INPUT');

    // Batched: nothing is sent before the flush that close() performs.
    await app.close();
    expect(received.length).toBeGreaterThan(0);
    expect(
      received.every(
        (r) =>
          r.path === '/v1/traces' &&
          r.headers['content-type'] === 'application/json' &&
          r.headers['x-collector-key'] === 'collector-secret',
      ),
    ).toBe(true);

    const spans = spansOf(received);
    expect(spans.map((s) => s.name).sort()).toEqual([
      'mutation.TraceBadInput',
      'mutation.TraceSubmit',
      'query.TraceViewer',
    ]);
    const byName = (name: string) => spans.find((s) => s.name === name)!;
    const viewer = byName('query.TraceViewer');
    expect(viewer.service).toBe('fairway-test');
    expect(viewer.kind).toBe(2); // SERVER
    expect(viewer.attrs).toMatchObject({
      'graphql.execute.operationName': 'TraceViewer',
      'graphql.execute.operationType': 'query',
      'fairway.request_id': query.requestId,
      'fairway.principal.kind': 'api-token',
      'fairway.tenant_ids': [tenantId],
      'fairway.platform_admin': false,
    });
    // The caller's W3C trace is the parent.
    expect(viewer.traceId).toBe(parseTraceparent(traceparent)!.traceId);
    expect(viewer.parentSpanId).toBe(parseTraceparent(traceparent)!.spanId);
    const submit = byName('mutation.TraceSubmit');
    expect(submit.attrs['fairway.request_id']).toBe(mutation.requestId);
    expect(submit.traceId).not.toBe(viewer.traceId);
    expect(submit.parentSpanId ?? '').toBe('');
    const bad = byName('mutation.TraceBadInput');
    expect(bad.status?.code).toBe(2); // ERROR
    expect(bad.attrs['graphql.error.codes']).toEqual(['BAD_USER_INPUT']);
    expect(bad.events?.map((e) => e.attributes.map((a) => a.key))).toEqual([['exception.type']]);

    const payload = received.map((r) => r.text).join('\n');
    for (const leaked of [
      secret,
      admin,
      'graphql.execute.document',
      'graphql.execute.variables',
      'viewer { email }',
      '@aurora',
    ])
      expect(payload).not.toContain(leaked);
  });
});

describe('tracing off (the default)', () => {
  it('sends nothing, even with the OTEL_* variables pointing at a collector', async () => {
    const before = received.length;
    const saved = process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
    process.env.OTEL_EXPORTER_OTLP_ENDPOINT = receiverUrl;
    try {
      const config = load({
        NODE_ENV: 'production',
        LOG_LEVEL: 'silent',
        OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl,
      }).observability;
      expect(config.tracing).toBeNull();
      const observability = observabilityPlugins(config, { logger: createLogger(config) });
      const yoga = createYoga({
        schema: createSchema({
          typeDefs: 'type Query { ping: String }',
          resolvers: { Query: { ping: () => 'pong' } },
        }),
        plugins: observability.plugins,
        logging: false,
      });
      const response = await yoga.fetch('http://localhost/graphql', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: 'query Off { ping }' }),
      });
      expect(await response.json()).toEqual({ data: { ping: 'pong' } });
      await observability.close();
    } finally {
      if (saved === undefined) delete process.env.OTEL_EXPORTER_OTLP_ENDPOINT;
      else process.env.OTEL_EXPORTER_OTLP_ENDPOINT = saved;
    }
    expect(received.length).toBe(before);
  });

  it('reads W3C traceparent strictly', () => {
    expect(parseTraceparent('00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01')).toEqual({
      traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
      spanId: '00f067aa0ba902b7',
      traceFlags: 1,
      isRemote: true,
    });
    for (const bad of [
      null,
      '',
      'garbage',
      '00-00000000000000000000000000000000-00f067aa0ba902b7-01',
      '01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
      '00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01',
    ]) {
      expect(parseTraceparent(bad)).toBeNull();
    }
  });
});
