import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, type FairwayConfig, load } from '../../src/config/index.js';
import { buildApp, type FairwayApp } from '../../src/server/app.js';
import { type DemoCredential, seedDemo } from '../../src/server/demo/seed.js';
import {
  httpSecurityFromConfig,
  loadPersistedOperations,
  webSocketOperationCheck,
} from '../../src/server/http-security/http-security.js';
import { testRateLimits } from '../helpers/rate-limits.js';

/**
 * Persisted operations from a manifest (FAIRWAY_PERSISTED_OPERATIONS) over a real port: `allow`
 * takes ids and text, `only` takes nothing but ids; unknown ids and refused text are typed
 * errors; a bad manifest stops the start. The example manifest in examples/ is the one served.
 */
const EXAMPLE = path.resolve('examples/persisted-operations.json');
const example = JSON.parse(fs.readFileSync(EXAMPLE, 'utf8')) as Record<string, string>;
const idOf = (name: string) =>
  Object.entries(example).find(([, query]) => query.startsWith(`query ${name}`))![0];
const VIEWER = idOf('Viewer');
const QUEUES = idOf('Queues');
const UNKNOWN = 'f'.repeat(64);

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-persisted-'));
const apps: FairwayApp[] = [];
afterAll(async () => {
  for (const app of apps) await app.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

function writeManifest(name: string, content: unknown): string {
  const file = path.join(tmp, name);
  fs.writeFileSync(file, typeof content === 'string' ? content : JSON.stringify(content));
  return file;
}

async function serve(
  mode: 'allow' | 'only',
): Promise<{ url: string; token: (tenant: string | null, role: DemoCredential['role']) => string }> {
  const dataDir = fs.mkdtempSync(path.join(tmp, `${mode}-`));
  const env = {
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    FAIRWAY_DATA_DIR: dataDir,
    DATABASE_URL: 'sqlite::memory:',
    FAIRWAY_DEMO: 'false',
    FAIRWAY_DEMO_TRICKLE: 'false',
    FAIRWAY_GRAPHIQL: 'false',
    FAIRWAY_SIM_TIME_SCALE: '1000',
  };
  const loaded = load({
    ...env,
    FAIRWAY_PERSISTED_OPERATIONS: EXAMPLE,
    FAIRWAY_PERSISTED_OPERATIONS_MODE: mode,
  });
  const config: FairwayConfig = { ...loaded, rateLimits: testRateLimits() };
  const app = await buildApp({ config });
  apps.push(app);
  const credentials = (await seedDemo(app.orm, dataDir)) ?? [];
  const { url } = await app.listen(0, '127.0.0.1');
  return {
    url,
    token: (tenant, role) => credentials.find((c) => c.tenant === tenant && c.role === role)!.token,
  };
}

type Body = {
  data?: Record<string, any> | null;
  errors?: { message: string; extensions?: { code?: string } }[];
};
async function call(
  url: string,
  bearer: string,
  body: Record<string, unknown>,
): Promise<{ status: number; body: Body }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json',
      authorization: `Bearer ${bearer}`,
    },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Body };
}
const byId = (id: string, variables?: Record<string, unknown>) => ({
  extensions: { persistedQuery: { version: 1, sha256Hash: id } },
  ...(variables ? { variables } : {}),
});

describe('the manifest', () => {
  it("the example is GraphQL Codegen's format, each id the SHA-256 of its text", () => {
    const loaded = loadPersistedOperations(EXAMPLE, 'only');
    expect(loaded.operations.size).toBe(2);
    for (const [id, query] of loaded.operations)
      expect(createHash('sha256').update(query).digest('hex')).toBe(id);
  });

  it("Apollo's persisted query manifest is read too", () => {
    const file = writeManifest('apollo.json', {
      format: 'apollo-persisted-query-manifest',
      version: 1,
      operations: Object.entries(example).map(([id, body]) => ({
        id,
        body,
        name: body.split(/[ ({]/)[1],
        type: 'query',
      })),
    });
    expect(loadPersistedOperations(file, 'allow').operations).toEqual(new Map(Object.entries(example)));
  });

  it('a bad manifest stops the start with a message naming the variable and the problem', () => {
    const problem = (file: string) => {
      try {
        // The configuration only names the file; the server reads it when it starts.
        const { http } = load({
          NODE_ENV: 'production',
          FAIRWAY_PERSISTED_OPERATIONS: file,
          FAIRWAY_PERSISTED_OPERATIONS_MODE: 'only',
        });
        expect(http.persistedOperations).toEqual({ file, mode: 'only' });
        httpSecurityFromConfig(http);
      } catch (error) {
        expect(error).toBeInstanceOf(ConfigError);
        return (error as Error).message;
      }
      throw new Error(`accepted ${file}`);
    };
    expect(problem(path.join(tmp, 'missing.json'))).toMatch(
      /FAIRWAY_PERSISTED_OPERATIONS: cannot read .*missing\.json: no such file/,
    );
    expect(problem(writeManifest('not-json.json', '{ "a": '))).toMatch(
      /FAIRWAY_PERSISTED_OPERATIONS: cannot read .*: not JSON/,
    );
    expect(problem(writeManifest('list.json', ['query A { viewer { email } }']))).toMatch(
      /FAIRWAY_PERSISTED_OPERATIONS: .* is neither/,
    );
    expect(problem(writeManifest('number.json', { abc: 7 }))).toMatch(
      /FAIRWAY_PERSISTED_OPERATIONS: .* is neither .*abc/,
    );
    expect(
      problem(
        writeManifest('bad-apollo.json', {
          format: 'apollo-persisted-query-manifest',
          version: 1,
          operations: [{ id: 'x' }],
        }),
      ),
    ).toMatch(/FAIRWAY_PERSISTED_OPERATIONS: .*operations\.0\.body/);
    expect(problem(writeManifest('empty.json', {}))).toMatch(
      /FAIRWAY_PERSISTED_OPERATIONS: .* holds no operations/,
    );
    expect(
      problem(
        writeManifest('broken.json', { good: 'query A { viewer { email } }', b4d: 'query B { viewer { ' }),
      ),
    ).toMatch(/FAIRWAY_PERSISTED_OPERATIONS: .*: operation b4d does not parse: Syntax Error/);
  });
});

describe('over HTTP', () => {
  let allow: Awaited<ReturnType<typeof serve>>;
  let only: Awaited<ReturnType<typeof serve>>;
  beforeAll(async () => {
    [allow, only] = await Promise.all([serve('allow'), serve('only')]);
  }, 60_000);

  it('allow: a persisted id runs its operation, and text still runs', async () => {
    const member = allow.token('aurora-research', 'MEMBER');
    const persisted = await call(allow.url, member, byId(VIEWER));
    expect(persisted.body.errors).toBeUndefined();
    expect(persisted.body.data!.viewer.email).toBe('max@aurora.example');
    const text = await call(allow.url, member, { query: '{ viewer { name } }' });
    expect(text.body).toEqual({ data: { viewer: { name: 'Max Member' } } });
  });

  it('an unknown id is PERSISTED_QUERY_NOT_FOUND (400) in both modes', async () => {
    for (const served of [allow, only]) {
      const res = await call(served.url, served.token('aurora-research', 'MEMBER'), byId(UNKNOWN));
      expect(res.status).toBe(400);
      expect(res.body.data).toBeUndefined();
      expect(res.body.errors!.map((e) => e.extensions?.code)).toEqual(['PERSISTED_QUERY_NOT_FOUND']);
    }
  });

  it('only: ids run (with variables, as extensions.persistedQuery or documentId), the caller still authorized as usual', async () => {
    const admin = only.token('aurora-research', 'TENANT_ADMIN');
    const viewer = await call(only.url, admin, byId(VIEWER));
    expect(viewer.body.data!.viewer.email).toBe('ada@aurora.example');
    const tenantId = viewer.body.data!.viewer.memberships[0].tenant.id as string;
    const queues = await call(only.url, admin, byId(QUEUES, { tenantId }));
    expect(queues.body.errors).toBeUndefined();
    expect(queues.body.data!.queues.length).toBeGreaterThan(0);
    // The variable reached the operation: another tenant's id is refused for this admin.
    const borealis = (await call(only.url, only.token('borealis-inference', 'TENANT_ADMIN'), byId(VIEWER)))
      .body.data!.viewer.memberships[0].tenant.id as string;
    const refused = await call(only.url, admin, byId(QUEUES, { tenantId: borealis }));
    expect(refused.body.errors?.map((e) => e.extensions?.code)).toEqual([
      expect.stringMatching(/^(NOT_FOUND|FORBIDDEN)$/),
    ]);
    const asDocumentId = await call(only.url, admin, { documentId: VIEWER });
    expect(asDocumentId.body).toEqual(viewer.body);
    // The same persisted operation, another caller: their own answer, not the first one's.
    const other = await call(only.url, only.token('borealis-inference', 'MEMBER'), byId(VIEWER));
    expect(other.body.data!.viewer.email).not.toBe('ada@aurora.example');
    expect(JSON.stringify(other.body)).not.toContain('aurora');
  });

  it('only: text is refused with PERSISTED_QUERY_REQUIRED before anything runs, even the text of a persisted operation', async () => {
    const admin = only.token('aurora-research', 'TENANT_ADMIN');
    for (const body of [
      { query: '{ viewer { email } }' },
      { query: example[VIEWER] },
      { query: example[VIEWER], ...byId(VIEWER) },
      {},
    ]) {
      const res = await call(only.url, admin, body);
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.data, JSON.stringify(body)).toBeUndefined();
      expect(
        res.body.errors!.map((e) => e.extensions?.code),
        JSON.stringify(body),
      ).toEqual(['PERSISTED_QUERY_REQUIRED']);
      expect(res.body.errors![0]!.message).toMatch(/persisted/);
    }
    // A GET by id works (with the CSRF header), a GET with text does not.
    const get = (params: Record<string, string>) =>
      fetch(`${only.url}?${new URLSearchParams(params).toString()}`, {
        headers: {
          accept: 'application/graphql-response+json',
          authorization: `Bearer ${admin}`,
          'x-graphql-yoga-csrf': '1',
        },
      }).then((r) => r.json() as Promise<Body>);
    expect((await get({ extensions: JSON.stringify(byId(VIEWER).extensions) })).data!.viewer.email).toBe(
      'ada@aurora.example',
    );
    expect((await get({ query: '{ viewer { email } }' })).errors![0]!.extensions?.code).toBe(
      'PERSISTED_QUERY_REQUIRED',
    );
  });
});

describe('WebSocket operations (webSocketOperationCheck)', () => {
  const config = (mode: 'allow' | 'only' | null) =>
    httpSecurityFromConfig(
      load(
        mode
          ? {
              NODE_ENV: 'test',
              FAIRWAY_PERSISTED_OPERATIONS: EXAMPLE,
              FAIRWAY_PERSISTED_OPERATIONS_MODE: mode,
            }
          : { NODE_ENV: 'test' },
      ).http,
    );
  const persisted = { query: '', extensions: { persistedQuery: { version: 1, sha256Hash: VIEWER } } };
  const unknown = { extensions: { persistedQuery: { version: 1, sha256Hash: UNKNOWN } } };

  it('no manifest: nothing to check', () => {
    expect(webSocketOperationCheck(config(null))).toBeNull();
  });

  it('allow: text passes, an id becomes its text, an unknown id is refused', () => {
    const check = webSocketOperationCheck(config('allow'))!;
    expect(check({ query: 'subscription { x }' })).toEqual({ query: 'subscription { x }' });
    expect(check(persisted)).toEqual({ query: example[VIEWER] });
    expect(check(unknown)).toMatchObject({ code: 'PERSISTED_QUERY_NOT_FOUND' });
  });

  it('only: text is refused, an id becomes its text, an unknown id is refused', () => {
    const check = webSocketOperationCheck(config('only'))!;
    expect(check({ query: 'subscription { x }' })).toMatchObject({
      code: 'PERSISTED_QUERY_REQUIRED',
      error: expect.stringMatching(/persisted/),
    });
    expect(check({})).toMatchObject({ code: 'PERSISTED_QUERY_REQUIRED' });
    expect(check(persisted)).toEqual({ query: example[VIEWER] });
    expect(check(unknown)).toMatchObject({ code: 'PERSISTED_QUERY_NOT_FOUND' });
  });
});
