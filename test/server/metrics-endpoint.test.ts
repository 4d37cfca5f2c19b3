import { createClient } from 'graphql-ws';
import { createYoga } from 'graphql-yoga';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { useRoutes } from '../../plugins/useRoutes.js';
import { IdentityResolver } from '../../src/auth/identity.js';
import { load } from '../../src/config/index.js';
import { Queue } from '../../src/persistence/cluster/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import { createMetrics, MAX_OPERATION_NAMES, OTHER_OPERATION } from '../../src/server/metrics/registry.js';
import { metricsRoute } from '../../src/server/routes/metrics.js';
import { methodNotAllowed } from '../../src/server/routes/route-errors.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';
import { waitFor } from '../helpers/process.js';

let t: TestApp;
let aurora: Record<string, string>;
let metricsUrl: string;

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text format, enough of it for these assertions (no escapes in our label values). */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!match) throw new Error(`unparsable metrics line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g))
      labels[key!] = value!;
    samples.push({ name: match[1]!, labels, value: Number(match[3]) });
  }
  return samples;
}

const find = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));

async function scrape(bearer: string | null): Promise<{ status: number; text: string; type: string | null }> {
  const response = await fetch(metricsUrl, { headers: bearer ? { authorization: `Bearer ${bearer}` } : {} });
  return { status: response.status, text: await response.text(), type: response.headers.get('content-type') };
}

beforeAll(async () => {
  t = await startTestApp();
  aurora = await t.idsOf('aurora-research');
  metricsUrl = t.url.replace(/\/graphql$/, '/metrics');
});
afterAll(async () => {
  await t?.close();
});

describe('GET /metrics', () => {
  it('records operations, errors, scheduler cycles and queue gauges', async () => {
    const member = t.token('aurora-research', 'MEMBER');
    const platform = t.token(null, 'PLATFORM_ADMIN');
    const query = await t.gql(member, `query MetricsViewer { viewer { email } }`);
    expect(query.body.errors).toBeUndefined();
    const submit = await t.gql(
      member,
      `mutation MetricsSubmit($in: SubmitJobInput!) { submitJob(input: $in) { id } }`,
      {
        in: {
          queueId: aurora.Queue,
          name: 'metrics',
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: 3600,
        },
      },
    );
    expect(submit.body.errors).toBeUndefined();
    // A viewer may not submit: a typed error (its code) from execution.
    const failing = await t.gql(
      t.token('aurora-research', 'VIEWER'),
      `mutation MetricsRefused($in: SubmitJobInput!) { submitJob(input: $in) { id } }`,
      {
        in: {
          queueId: aurora.Queue,
          name: 'refused',
          podSets: [{ gpusPerPod: 1 }],
          expectedDurationSeconds: 60,
        },
      },
    );
    const refusedCode = failing.body.errors?.[0]?.extensions?.code;
    expect(refusedCode).toBe('FORBIDDEN');
    const invalid = await t.gql(member, `query MetricsInvalid { noSuchField }`);
    expect(invalid.body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    await t.gql(member, `{ viewer { email } }`);
    await t.gql(member, `query MetricsBroken { viewer {`);
    // Refused before parsing: the credential does not verify.
    const unauthenticated = await t.gql(
      'not-a-valid-token',
      `query MetricsNoCredential { viewer { email } }`,
    );
    expect(unauthenticated.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');

    let samples: Sample[] = [];
    await waitFor(
      'a scrape showing a scheduler cycle and an admission',
      async () => {
        const { status, text, type } = await scrape(platform);
        expect(status).toBe(200);
        expect(type).toMatch(/^text\/plain/);
        samples = parse(text);
        return (
          find(samples, 'fairway_scheduler_cycle_duration_seconds_count').some((s) => s.value >= 1) &&
          find(samples, 'fairway_scheduler_admitted_total').length > 0
        );
      },
      5000,
      25,
    );

    const count = (name: string, type: string) =>
      find(samples, 'fairway_graphql_operation_duration_seconds_count', {
        operation_type: type,
        operation_name: name,
      })[0]?.value ?? 0;
    expect(count('MetricsViewer', 'query')).toBeGreaterThanOrEqual(1);
    expect(count('MetricsSubmit', 'mutation')).toBeGreaterThanOrEqual(1);
    expect(count('anonymous', 'query')).toBeGreaterThanOrEqual(1);
    const errors = (name: string) => find(samples, 'fairway_graphql_errors_total', { operation_name: name });
    // Names of documents that never ran take no label: they count as "invalid".
    expect(
      samples.filter((s) =>
        ['MetricsInvalid', 'MetricsBroken', 'MetricsNoCredential'].includes(s.labels.operation_name ?? ''),
      ),
    ).toEqual([]);
    expect(errors('invalid').map((s) => [s.labels.operation_type, s.labels.code, s.value])).toEqual([
      ['query', 'GRAPHQL_VALIDATION_FAILED', 1],
      ['unknown', 'GRAPHQL_PARSE_FAILED', 1],
      ['unknown', 'UNAUTHENTICATED', 1],
    ]);
    expect(errors('MetricsRefused').map((s) => [s.labels.operation_type, s.labels.code, s.value])).toEqual([
      ['mutation', 'FORBIDDEN', 1],
    ]);
    expect(count('MetricsRefused', 'mutation')).toBe(1);
    expect(errors('MetricsViewer')).toEqual([]);
    // Each error is counted once, whichever hook saw it.
    expect(find(samples, 'fairway_graphql_errors_total').reduce((sum, s) => sum + s.value, 0)).toBe(4);

    expect(
      find(samples, 'fairway_scheduler_admitted_total').reduce((sum, s) => sum + s.value, 0),
    ).toBeGreaterThanOrEqual(1);
    expect(find(samples, 'fairway_scheduler_leader')[0]?.value).toBe(1);
    expect(find(samples, 'fairway_outbox_unperformed')).toHaveLength(1);
    const outboxAge = find(samples, 'fairway_outbox_oldest_unperformed_age_seconds');
    expect(outboxAge).toHaveLength(1);
    expect(outboxAge[0]!.value).toBeGreaterThanOrEqual(0);
    expect(find(samples, 'process_cpu_user_seconds_total')).toHaveLength(1);
    const queues = await systemEntityManager(t.app.orm).find(Queue, {});
    expect(queues.length).toBeGreaterThan(0);
    for (const { name } of queues) {
      for (const gauge of [
        'fairway_queue_pending_jobs',
        'fairway_queue_admitted_jobs',
        'fairway_queue_weighted_share',
      ]) {
        expect(find(samples, gauge, { queue: name }), `${gauge}{queue="${name}"}`).toHaveLength(1);
      }
    }
  });

  it('counts open subscriptions', async () => {
    const platform = t.token(null, 'PLATFORM_ADMIN');
    const open = async () =>
      find(parse((await scrape(platform)).text), 'fairway_subscriptions_open')[0]?.value;
    const client = createClient({
      url: t.url.replace('http', 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${t.token('aurora-research', 'MEMBER')}` },
      retryAttempts: 0,
    });
    try {
      const before = await open();
      const dispose = client.subscribe(
        {
          query: `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind } }`,
          variables: { t: aurora.Tenant },
        },
        { next: () => undefined, error: () => undefined, complete: () => undefined },
      );
      await waitFor('one more open subscription', async () => (await open()) === before! + 1, 5000, 25);
      dispose();
      await waitFor('the subscription closed', async () => (await open()) === before, 5000, 25);
    } finally {
      await client.dispose();
    }
  });

  it('is never anonymous: 401 without a credential, 403 for a tenant, 200 for a platform admin', async () => {
    const anonymous = await scrape(null);
    expect(anonymous.status).toBe(401);
    expect(JSON.parse(anonymous.text).error.code).toBe('UNAUTHENTICATED');
    expect((await scrape('not-a-token')).status).toBe(401);
    const tenantAdmin = await scrape(t.token('aurora-research', 'TENANT_ADMIN'));
    expect(tenantAdmin.status).toBe(403);
    expect(tenantAdmin.text).not.toContain('fairway_');
    expect((await scrape(await t.jwt('ada@aurora.example'))).status).toBe(403);
    expect((await scrape(await t.jwt('admin@fairway.example'))).status).toBe(200);
    expect(
      (
        await fetch(metricsUrl, {
          method: 'POST',
          headers: { authorization: `Bearer ${t.token(null, 'PLATFORM_ADMIN')}` },
        })
      ).status,
    ).toBe(405);
  });
});

describe('FAIRWAY_METRICS_TOKEN', () => {
  it('lets a scraper in with the shared token, and nothing else near it', async () => {
    const token = 'prometheus-scrape-secret-0123456789';
    // The app's own resolver is not exposed; one over the same database checks the same credentials.
    const yoga = createYoga({
      plugins: [
        useRoutes({
          routes: [
            metricsRoute({
              metrics: createMetrics(),
              identity: new IdentityResolver({ orm: t.app.orm, now: () => t.now.value }),
              token,
            }),
          ],
          methodNotAllowed,
        }),
      ],
      logging: false,
    });
    const get = (bearer?: string) =>
      yoga.fetch('http://localhost/metrics', {
        headers: bearer ? { authorization: `Bearer ${bearer}` } : {},
      });
    const ok = await get(token);
    expect(ok.status).toBe(200);
    expect(await ok.text()).toContain('fairway_graphql_operation_duration_seconds');
    expect((await get()).status).toBe(401);
    expect((await get(`${token}x`)).status).toBe(401);
    expect((await get(token.slice(0, -1))).status).toBe(401);
    expect((await get(t.token('aurora-research', 'TENANT_ADMIN'))).status).toBe(403);
    expect((await get(t.token(null, 'PLATFORM_ADMIN'))).status).toBe(200);
  });
});

describe('FAIRWAY_METRICS_TOKEN configuration', () => {
  it('is optional, and a short secret stops the server with a message naming it', () => {
    expect(load({ FAIRWAY_DEMO: 'false' }).observability.metricsToken).toBeUndefined();
    expect(
      load({ FAIRWAY_DEMO: 'false', FAIRWAY_METRICS_TOKEN: 'a-long-enough-secret' }).observability
        .metricsToken,
    ).toBe('a-long-enough-secret');
    expect(() => load({ FAIRWAY_METRICS_TOKEN: 'short' })).toThrow(
      /FAIRWAY_METRICS_TOKEN: must be at least 16 characters/,
    );
  });
});

describe('operation name labels', () => {
  it('are bounded: long names and names past the limit are "other"', () => {
    const metrics = createMetrics();
    expect(metrics.operationLabel(undefined)).toBe('anonymous');
    expect(metrics.operationLabel('x'.repeat(65))).toBe(OTHER_OPERATION);
    expect(metrics.operationLabel('x'.repeat(64))).toBe('x'.repeat(64));
    for (let i = 0; i < MAX_OPERATION_NAMES; i++) metrics.operationLabel(`Op${i}`);
    expect(metrics.operationLabel('OneTooMany')).toBe(OTHER_OPERATION);
    expect(metrics.operationLabel('Op3')).toBe('Op3');
  });
});
