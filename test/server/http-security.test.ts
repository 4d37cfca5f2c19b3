import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { createSchema, createYoga } from 'graphql-yoga';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { API_CSP } from '../../plugins/useSecurityHeaders.js';
import { ConfigError, type FairwayConfig, load } from '../../src/config/index.js';
import { buildApp, type FairwayApp } from '../../src/server/app.js';
import { type DemoCredential, seedDemo } from '../../src/server/demo/seed.js';
import { testRateLimits } from '../helpers/rate-limits.js';

/**
 * The HTTP front door over a real port: CORS for listed origins only, CSRF prevention (no
 * request a cross-site page can send without a preflight runs), form bodies refused, security
 * headers on every route, HSTS only when asked for.
 */
const PORTAL = 'https://portal.example.com';
const EVIL = 'https://evil.example';
const CSRF = { 'x-graphql-yoga-csrf': '1' };
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/graphql-response+json' };

interface Served {
  app: FairwayApp;
  url: string;
  base: string;
  token(tenant: string | null, role: DemoCredential['role']): string;
}
const apps: FairwayApp[] = [];
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-http-security-'));

async function serve(http: FairwayConfig['http'], graphiql: boolean): Promise<Served> {
  const dir = fs.mkdtempSync(path.join(dataDir, 'app-'));
  const base = load({
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    FAIRWAY_DATA_DIR: dir,
    DATABASE_URL: 'sqlite::memory:',
    FAIRWAY_DEMO: 'false',
    FAIRWAY_DEMO_TRICKLE: 'false',
    FAIRWAY_SIM_TIME_SCALE: '1000',
  });
  const config: FairwayConfig = {
    ...base,
    server: { ...base.server, graphiql },
    rateLimits: testRateLimits(),
    http,
  };
  const app = await buildApp({ config });
  apps.push(app);
  const credentials = (await seedDemo(app.orm, dir)) ?? [];
  const { url } = await app.listen(0, '127.0.0.1');
  return {
    app,
    url,
    base: url.replace(/\/graphql$/, ''),
    token: (tenant, role) => credentials.find((c) => c.tenant === tenant && c.role === role)!.token,
  };
}

let strict: Served;
let plain: Served;
beforeAll(async () => {
  [strict, plain] = await Promise.all([
    serve(
      load({
        NODE_ENV: 'test',
        FAIRWAY_CORS_ORIGINS: `${PORTAL}, https://admin.example.com:8443`,
        FAIRWAY_HSTS: 'on',
      }).http,
      true,
    ),
    serve(load({ NODE_ENV: 'test' }).http, false),
  ]);
}, 60_000);
afterAll(async () => {
  for (const app of apps) await app.close();
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** A graphql-multipart-request-spec body, written out (what an HTML form with enctype=multipart/form-data
 * sends).
 */
const MULTIPART_TYPE = 'multipart/form-data; boundary=fairway-boundary';
const multipartBody = (query: string) =>
  [
    '--fairway-boundary',
    'Content-Disposition: form-data; name="operations"',
    '',
    JSON.stringify({ query }),
    '--fairway-boundary',
    'Content-Disposition: form-data; name="map"',
    '',
    '{}',
    '--fairway-boundary--',
    '',
  ].join('\r\n');
const post = (url: string, headers: Record<string, string>, body: BodyInit) =>
  fetch(url, { method: 'POST', headers, body });
const typename = JSON.stringify({ query: '{ __typename }' });

describe('CORS', () => {
  it('a listed origin gets its own origin back on the preflight and on the POST, without credentials', async () => {
    const preflight = await fetch(strict.url, {
      method: 'OPTIONS',
      headers: {
        origin: PORTAL,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'content-type, authorization',
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe(PORTAL);
    expect(preflight.headers.get('access-control-allow-headers')).toMatch(/authorization/);
    expect(preflight.headers.get('access-control-allow-methods')).toBe('GET, POST');
    expect(preflight.headers.get('access-control-allow-credentials')).toBeNull();
    expect(preflight.headers.get('vary')).toMatch(/Origin/);
    const response = await post(strict.url, { ...JSON_HEADERS, origin: PORTAL }, typename);
    expect(await response.json()).toEqual({ data: { __typename: 'Query' } });
    expect(response.headers.get('access-control-allow-origin')).toBe(PORTAL);
    expect(response.headers.get('access-control-expose-headers')).toMatch(/x-request-id/);
    expect(response.headers.get('access-control-allow-credentials')).toBeNull();
    // The second listed origin, port included, is matched exactly too.
    const other = await post(
      strict.url,
      { ...JSON_HEADERS, origin: 'https://admin.example.com:8443' },
      typename,
    );
    expect(other.headers.get('access-control-allow-origin')).toBe('https://admin.example.com:8443');
  });

  it('an unlisted origin gets no CORS header at all', async () => {
    for (const [served, origin] of [
      [strict, EVIL],
      [strict, 'https://admin.example.com'],
      [strict, `${PORTAL}.evil.example`],
      [plain, PORTAL],
    ] as const) {
      const preflight = await fetch(served.url, {
        method: 'OPTIONS',
        headers: {
          origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type',
        },
      });
      const response = await post(served.url, { ...JSON_HEADERS, origin }, typename);
      for (const r of [preflight, response]) {
        expect(r.headers.get('access-control-allow-origin'), origin).toBeNull();
        expect(r.headers.get('access-control-allow-credentials'), origin).toBeNull();
        expect(r.headers.get('access-control-allow-headers'), origin).toBeNull();
      }
    }
  });

  it("yoga's default, which this replaces, reflects any origin with credentials", async () => {
    const yoga = createYoga({
      schema: createSchema({ typeDefs: 'type Query { hello: String }' }),
      logging: false,
    });
    const response = await yoga.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: { ...JSON_HEADERS, origin: EVIL },
      body: JSON.stringify({ query: '{ hello }' }),
    });
    expect(response.headers.get('access-control-allow-origin')).toBe(EVIL);
    expect(response.headers.get('access-control-allow-credentials')).toBe('true');
  });

  it('same-origin tools, curl and the CLI (no Origin) are unaffected', async () => {
    const response = await post(
      plain.url,
      { ...JSON_HEADERS, authorization: `Bearer ${plain.token('aurora-research', 'MEMBER')}` },
      JSON.stringify({ query: '{ viewer { email } }' }),
    );
    expect(await response.json()).toEqual({ data: { viewer: { email: 'max@aurora.example' } } });
  });
});

describe('CSRF prevention', () => {
  const formBody = () => new URLSearchParams({ query: '{ __typename }' });

  it('GET and text/plain run only with the CSRF header (a cross-site page cannot add it without a preflight)', async () => {
    const get = (headers: Record<string, string>) =>
      fetch(`${plain.url}?query=${encodeURIComponent('{ __typename }')}`, {
        headers: { accept: 'application/graphql-response+json', ...headers },
      });
    const refused = await get({});
    expect(refused.status).toBe(403);
    expect(JSON.stringify(await refused.json())).toContain('CSRF');
    const allowed = await get(CSRF);
    expect(allowed.status).toBe(200);
    expect(await allowed.json()).toEqual({ data: { __typename: 'Query' } });

    const text = await post(plain.url, { 'content-type': 'text/plain' }, typename);
    expect(text.status).toBe(403);
    // With the header it is still not GraphQL yoga can parse.
    expect((await post(plain.url, { 'content-type': 'text/plain', ...CSRF }, typename)).status).toBe(415);
    // A bearer does not stand in for the header: a proxy in front may add it from a cookie.
    expect((await get({ authorization: `Bearer ${plain.token('aurora-research', 'MEMBER')}` })).status).toBe(
      403,
    );
  });

  it('form-encoded and multipart POSTs are refused with 415, with or without the CSRF header', async () => {
    for (const headers of [{}, CSRF]) {
      const form = await post(plain.url, headers, formBody());
      expect(form.status).toBe(415);
      expect((await form.json()).errors[0]).toMatchObject({ extensions: { code: 'BAD_REQUEST' } });
      const multipart = await post(
        plain.url,
        { ...headers, 'content-type': MULTIPART_TYPE },
        multipartBody('{ __typename }'),
      );
      expect(multipart.status).toBe(415);
    }
  });

  it('yoga with the CSRF plugin alone would run those forms once they carry the header (why the 415 check exists)', async () => {
    const yoga = createYoga({
      schema: createSchema({
        typeDefs: 'type Query { hello: String }',
        resolvers: { Query: { hello: () => 'ran' } },
      }),
      plugins: [useCSRFPrevention()],
      logging: false,
    });
    const form = await yoga.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: CSRF,
      body: new URLSearchParams({ query: '{ hello }' }),
    });
    expect(await form.json()).toEqual({ data: { hello: 'ran' } });
    const multipart = await yoga.fetch('http://yoga/graphql', {
      method: 'POST',
      headers: { ...CSRF, 'content-type': MULTIPART_TYPE },
      body: multipartBody('{ hello }'),
    });
    expect(await multipart.json()).toEqual({ data: { hello: 'ran' } });
    // And without the header the plugin refuses them (403), as it does here.
    expect(
      (
        await yoga.fetch('http://yoga/graphql', {
          method: 'POST',
          body: new URLSearchParams({ query: '{ hello }' }),
        })
      ).status,
    ).toBe(403);
  });

  it('JSON POSTs with a bearer pass (a browser preflights them)', async () => {
    const response = await post(
      plain.url,
      { ...JSON_HEADERS, authorization: `Bearer ${plain.token('aurora-research', 'TENANT_ADMIN')}` },
      JSON.stringify({ query: '{ viewer { email } }' }),
    );
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ data: { viewer: { email: 'ada@aurora.example' } } });
  });
});

function expectSecurityHeaders(response: Response, what: string, hsts: boolean) {
  expect(response.headers.get('x-content-type-options'), what).toBe('nosniff');
  expect(response.headers.get('referrer-policy'), what).toBe('no-referrer');
  expect(response.headers.get('x-frame-options'), what).toBe('DENY');
  expect(response.headers.get('content-security-policy'), what).toMatch(/frame-ancestors 'none'/);
  expect(response.headers.get('strict-transport-security'), what).toBe(hsts ? 'max-age=31536000' : null);
}

describe('security headers', () => {
  it('every GET route still answers, with the headers: /health, /ready, /metrics, /usage/export.csv, GraphiQL', async () => {
    const admin = strict.token(null, 'PLATFORM_ADMIN');
    const routes: [string, RequestInit, RegExp][] = [
      [`${strict.base}/health`, {}, /^$/],
      [`${strict.base}/ready`, {}, /^(application\/json|$)/],
      [`${strict.base}/metrics`, { headers: { authorization: `Bearer ${admin}` } }, /^text\/plain/],
      [
        `${strict.base}/usage/export.csv?month=2026-10`,
        { headers: { authorization: `Bearer ${admin}` } },
        /^text\/csv/,
      ],
    ];
    for (const [url, init, type] of routes) {
      const response = await fetch(url, init);
      expect(response.status, url).toBe(200);
      expect(response.headers.get('content-type') ?? '', url).toMatch(type);
      expectSecurityHeaders(response, url, true);
      expect(response.headers.get('content-security-policy'), url).toBe(API_CSP);
      expect(response.headers.get('cache-control'), url).toBe('no-store');
      await response.arrayBuffer();
    }
    const page = await fetch(strict.url, { headers: { accept: 'text/html' } });
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('renderYogaGraphiQL');
    expectSecurityHeaders(page, 'GraphiQL', true);
  }, 30_000);

  it('GraphQL answers: no-store, default-src none, and HSTS only when FAIRWAY_HSTS=on', async () => {
    for (const served of [strict, plain]) {
      const ok = await post(served.url, JSON_HEADERS, typename);
      const refused = await post(served.url, JSON_HEADERS, JSON.stringify({ query: '{ nope }' }));
      expect(refused.status).toBe(400);
      for (const [what, response] of [
        ['ok', ok],
        ['error', refused],
      ] as const) {
        expectSecurityHeaders(response, what, served === strict);
        expect(response.headers.get('content-security-policy')).toBe(API_CSP);
        expect(response.headers.get('cache-control')).toBe('no-store');
        expect(response.headers.get('x-request-id')).toBeTruthy();
      }
    }
  });

  it("GraphiQL's CSP allows exactly the page's inline scripts by hash, its blob: workers and this origin over HTTP and WebSocket", async () => {
    const page = await fetch(strict.url, { headers: { accept: 'text/html' } });
    const html = await page.text();
    const csp = page.headers.get('content-security-policy')!;
    const directives = Object.fromEntries(
      csp
        .split(';')
        .map((d) => d.trim().split(/\s+/))
        .map(([name, ...values]) => [name!, values]),
    );
    const scripts = [...html.matchAll(/<script\b[^>]*>([\s\S]*?)<\/script\s*>/gi)]
      .map((m) => m[1]!)
      .filter(Boolean);
    expect(scripts.length).toBeGreaterThanOrEqual(1);
    const hashes = scripts.map((s) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`);
    expect(directives['script-src']!.sort()).toEqual([...new Set(hashes)].sort());
    expect(csp).not.toMatch(/'unsafe-eval'/);
    expect(directives['script-src']).not.toContain("'unsafe-inline'");
    expect(directives['default-src']).toEqual(["'none'"]);
    expect(directives['worker-src']).toEqual(['blob:']);
    const host = new URL(strict.url).host;
    expect(directives['connect-src']).toEqual(["'self'", `ws://${host}`, `wss://${host}`]);
    expect(directives['font-src']).toContain('data:');
    expect(directives['frame-ancestors']).toEqual(["'none'"]);
    // The page names nothing outside these sources: no http(s) script, style or connect target of another origin.
    expect(html.match(/<(?:script|link)\b[^>]*\b(?:src|href)\s*=\s*["']https?:/gi) ?? []).toEqual([]);
  }, 30_000);
});

describe('configuration', () => {
  const problemOf = (env: NodeJS.ProcessEnv): string => {
    try {
      load({ NODE_ENV: 'production', ...env });
    } catch (error) {
      expect(error).toBeInstanceOf(ConfigError);
      return (error as Error).message;
    }
    throw new Error(`accepted ${JSON.stringify(env)}`);
  };

  it('defaults: no origin, the yoga CSRF header, no HSTS, no persisted operations, in every environment', () => {
    for (const nodeEnv of ['development', 'production', 'test'] as const) {
      expect(load({ NODE_ENV: nodeEnv }).http).toEqual({
        corsOrigins: [],
        csrfHeaders: ['x-graphql-yoga-csrf'],
        hsts: false,
        persistedOperations: null,
      });
    }
    expect(
      load({
        NODE_ENV: 'test',
        FAIRWAY_CSRF_HEADERS: 'Apollo-Require-Preflight, x-graphql-yoga-csrf',
        FAIRWAY_HSTS: 'off',
      }).http,
    ).toMatchObject({ csrfHeaders: ['apollo-require-preflight', 'x-graphql-yoga-csrf'], hsts: false });
  });

  it('bad values stop the start with a message naming the variable', () => {
    for (const origin of [
      '*',
      'https://portal.example.com/',
      'https://portal.example.com/app',
      'portal.example.com',
      'https://*.example.com',
      'null',
      'ftp://x.example',
      'https://Portal.example.com',
    ]) {
      expect(problemOf({ FAIRWAY_CORS_ORIGINS: origin }), origin).toMatch(
        /^Invalid configuration:\n {2}- FAIRWAY_CORS_ORIGINS: .*exact origin/,
      );
    }
    expect(problemOf({ FAIRWAY_CSRF_HEADERS: 'content-type' })).toMatch(
      /FAIRWAY_CSRF_HEADERS: "content-type" cannot prove/,
    );
    expect(problemOf({ FAIRWAY_CSRF_HEADERS: 'authorization' })).toMatch(/FAIRWAY_CSRF_HEADERS/);
    expect(problemOf({ FAIRWAY_CSRF_HEADERS: 'x bad' })).toMatch(
      /FAIRWAY_CSRF_HEADERS: "x bad" is not a header name/,
    );
    expect(problemOf({ FAIRWAY_HSTS: 'yes please' })).toMatch(/FAIRWAY_HSTS/);
    expect(problemOf({ FAIRWAY_PERSISTED_OPERATIONS_MODE: 'only' })).toMatch(
      /FAIRWAY_PERSISTED_OPERATIONS_MODE: set FAIRWAY_PERSISTED_OPERATIONS/,
    );
    expect(
      problemOf({ FAIRWAY_PERSISTED_OPERATIONS: 'x.json', FAIRWAY_PERSISTED_OPERATIONS_MODE: 'strict' }),
    ).toMatch(/FAIRWAY_PERSISTED_OPERATIONS_MODE/);
    // And in any environment.
    expect(() => load({ FAIRWAY_CORS_ORIGINS: '*' })).toThrow(/FAIRWAY_CORS_ORIGINS/);
    expect(load({ FAIRWAY_CORS_ORIGINS: PORTAL }).http.corsOrigins).toEqual([PORTAL]);
  });
});
