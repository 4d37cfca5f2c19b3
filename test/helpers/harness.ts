import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type CryptoKey, exportSPKI, generateKeyPair, SignJWT } from 'jose';
import { expect } from 'vitest';
import { type DatabaseConfig, type FairwayConfig, load } from '../../src/config/index.js';
import { AuditEvent } from '../../src/persistence/audit/entities.js';
import { Cohort, Flavor, NodePool, PriorityClassRow, Queue } from '../../src/persistence/cluster/entities.js';
import { InferenceService } from '../../src/persistence/inference/entities.js';
import { Job } from '../../src/persistence/jobs/entities.js';
import { BreakGlassGrant, ProjectMembership } from '../../src/persistence/tenancy/access-entities.js';
import { ApiToken, Membership, Project, Tenant, User } from '../../src/persistence/tenancy/entities.js';
import { TENANT_FILTER } from '../../src/persistence/tenant-filter.js';
import { type BuildAppOptions, buildApp, type FairwayApp } from '../../src/server/app.js';
import { type DemoCredential, seedDemo } from '../../src/server/demo/seed.js';
import { createTestDatabase, type Dialect, type TestDatabase } from './database.js';
import { testRateLimits } from './rate-limits.js';

export const TEST_ISSUER = 'https://idp.test.fairway';
export const TEST_AUDIENCE = 'fairway-gateway';

/**
 * The configuration tests run with, loaded like a server's: a random port, no demo, a fast
 * simulated cluster, the test identity provider, and the test suite's rate-limit budgets
 * (test/helpers/rate-limits.ts). `database` may leave out what the configuration adds (its
 * timeouts, SQLite's synchronous mode): the defaults.
 */
export function testConfig(parts: {
  dataDir: string;
  database: DatabaseConfig | FairwayConfig['database'];
  oidc:
    | { publicKeyPem: string }
    | { jwksUrl: string; issuer?: string; audience?: string; consoleClientId?: string };
}): FairwayConfig {
  const base = load({
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    FAIRWAY_DATA_DIR: parts.dataDir,
    FAIRWAY_DEMO: 'false',
    FAIRWAY_DEMO_TRICKLE: 'false',
    FAIRWAY_SIM_TIME_SCALE: '1000',
    FAIRWAY_GRAPHIQL: 'false',
    // A disrupted job's backoff (5 s, doubling) shortened: long enough for the inventory to see a drained node.
    FAIRWAY_DISRUPTION_BACKOFF_MS: '300',
    // `FAIRWAY_GRAPHQL_JIT=false npx vitest run …` runs a suite on the standard executor (its default: on).
    ...(process.env.FAIRWAY_GRAPHQL_JIT ? { FAIRWAY_GRAPHQL_JIT: process.env.FAIRWAY_GRAPHQL_JIT } : {}),
  });
  return {
    ...base,
    database: testDatabaseSettings(parts.database),
    auth: {
      ...base.auth,
      oidc: {
        issuer: TEST_ISSUER,
        audience: TEST_AUDIENCE,
        userClaim: 'email',
        rolesClaim: 'fairway_roles',
        consoleScopes: 'openid email profile',
        ...parts.oidc,
      },
    },
    rateLimits: testRateLimits(),
  };
}

/** A test database as the configuration's database section: loaded from its URL, so what it leaves out
 * (timeouts, SQLite's synchronous mode) gets the defaults.
 */
export function testDatabaseSettings(
  database: DatabaseConfig | FairwayConfig['database'],
): FairwayConfig['database'] {
  if ('timeouts' in database) return database;
  const url = database.dialect === 'postgresql' ? database.url : `sqlite:${database.file}`;
  const synchronous =
    database.dialect === 'sqlite' && database.synchronous
      ? { FAIRWAY_SQLITE_SYNCHRONOUS: database.synchronous }
      : {};
  return load({ DATABASE_URL: url, ...synchronous }).database;
}

export interface GqlResponse<T = Record<string, unknown>> {
  status: number;
  headers: Headers;
  body: {
    data?: T | null;
    errors?: {
      message: string;
      path?: (string | number)[];
      extensions?: { code?: string; [k: string]: unknown };
    }[];
  };
}

export interface TestApp {
  app: FairwayApp;
  url: string;
  credentials: DemoCredential[];
  /** The demo API token of someone with this role in that tenant. */
  token(tenant: string | null, role: DemoCredential['role']): string;
  /** A JWT signed by the test identity provider (a user session, not an API token). */
  jwt(
    email: string,
    options?: { roles?: string[]; expiresIn?: string; issuer?: string; audience?: string; key?: CryptoKey },
  ): Promise<string>;
  gql<T = Record<string, any>>(
    bearer: string | null,
    query: string,
    variables?: Record<string, unknown>,
    headers?: Record<string, string>,
  ): Promise<GqlResponse<T>>;
  /** Row counts of every table, to prove a refused request changed nothing. */
  rowCounts(options?: { ignoreAudit?: boolean }): Promise<Record<string, number>>;
  /**
   * Global IDs of a tenant's things, read straight from the database (a job, an audit event and
   * a closed break-glass grant are made when missing).
   */
  idsOf(tenantSlug: string): Promise<Record<string, string>>;
  now: { value: number };
  close(): Promise<void>;
}

export interface TestAppOptions {
  dialect?: Dialect;
  /** A real OpenID provider instead of the harness's own key (its issuer, JWKS and the console's client). */
  oidc?: { issuer: string; jwksUrl: string; audience?: string; consoleClientId?: string };
  /** Every SQL statement the app runs (see ormConfig). */
  onQuery?: (sql: string) => void;
  /** A database prepared by the test (e.g. migrated half-way and filled the old way); the app migrates it up
   * and disposes it on close.
   */
  database?: TestDatabase;
  /** Seed the demo tenants (default true; only into an empty database). */
  seed?: boolean;
  /** Server errors a fault test provokes on purpose (matched against their text); any other still fails the
   * test at close.
   */
  expectedServerErrors?: RegExp;
  /** Governance loop settings passed to buildApp (short periods for tests). */
  governance?: BuildAppOptions['governance'];
  /** Inference autoscaler settings passed to buildApp. */
  inference?: BuildAppOptions['inference'];
  /** The execution backend, made with the harness's clock (default: the configuration's simulated cluster).
   *
   */
  backend?: (now: () => number) => NonNullable<BuildAppOptions['backend']>;
  /** Rate limits instead of the test suite's budgets (test/helpers/rate-limits.ts). */
  rateLimits?: FairwayConfig['rateLimits'];
  /** Compiled execution on or off (default: the configuration's, FAIRWAY_GRAPHQL_JIT). */
  jit?: boolean;
}

export async function startTestApp(options: TestAppOptions = {}): Promise<TestApp> {
  const db: TestDatabase = options.database ?? (await createTestDatabase(options.dialect ?? 'sqlite'));
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-data-'));
  const { publicKey, privateKey } = await generateKeyPair('RS256');
  let config = testConfig({
    dataDir,
    database: db.database,
    oidc: options.oidc ?? { publicKeyPem: await exportSPKI(publicKey) },
  });
  if (options.rateLimits) config = { ...config, rateLimits: options.rateLimits };
  if (options.jit !== undefined) config = { ...config, execution: { jit: options.jit } };
  const now = { value: Date.now() };
  const errors: unknown[] = [];
  // Idle reclaim acts on the governed demo queues: off unless a test asks for it (its own tests do).
  const governance = { idleCheckIntervalMs: 0, ...options.governance };
  const app = await buildApp({
    config,
    now: () => now.value,
    logError: (e) => (options.expectedServerErrors?.test(String(e)) ? undefined : errors.push(e)),
    reauthCacheMs: 0,
    ...(options.onQuery ? { onQuery: options.onQuery } : {}),
    governance,
    // The autoscaler writes on its own timer: tests that check "nothing changed" must not see it, so tests
    // run it themselves (scheduler.runLeaderTask) unless they ask for a period.
    inference: { intervalMs: 3_600_000, ...options.inference },
    ...(options.backend ? { backend: options.backend(() => now.value) } : {}),
  });
  const credentials =
    options.seed === false ? [] : ((await seedDemo(app.orm, dataDir, () => now.value)) ?? []);
  await app.scheduler.rebuild();
  const { url } = await app.listen(0, '127.0.0.1');

  const harness: TestApp = {
    app,
    url,
    credentials,
    now,
    token(tenant, role) {
      return demoToken(credentials, tenant, role);
    },
    async jwt(email, opts = {}) {
      const claims: Record<string, unknown> = { email, name: email.split('@')[0] };
      if (opts.roles) claims.fairway_roles = opts.roles;
      return new SignJWT(claims)
        .setProtectedHeader({ alg: 'RS256' })
        .setIssuer(opts.issuer ?? TEST_ISSUER)
        .setAudience(opts.audience ?? TEST_AUDIENCE)
        .setIssuedAt(Math.floor(now.value / 1000))
        .setSubject(email)
        .setExpirationTime(opts.expiresIn ?? '1h')
        .sign(opts.key ?? privateKey);
    },
    async gql(bearer, query, variables, headers = {}) {
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/graphql-response+json',
          ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
          ...headers,
        },
        body: JSON.stringify({ query, variables }),
      });
      return {
        status: response.status,
        headers: response.headers,
        body: (await response.json()) as GqlResponse['body'],
      } as never;
    },
    async rowCounts(opts = {}) {
      // One statement for every table: the matrices call this twice per case, thousands of times.
      const tables = {
        Tenant,
        Project,
        Membership,
        ProjectMembership,
        BreakGlassGrant,
        ApiToken,
        User,
        AuditEvent,
        Queue,
        Job,
        Flavor,
        NodePool,
        Cohort,
        PriorityClassRow,
      };
      const names = Object.keys(tables).filter((name) => !(opts.ignoreAudit && name === 'AuditEvent'));
      const metadata = app.orm.getMetadata();
      const select = names
        .map((name) => `(select count(*) from ${metadata.find(name)!.tableName}) as "${name}"`)
        .join(', ');
      const [row] = await app.orm.em
        .getConnection()
        .execute<Record<string, number | string>[]>(`select ${select}`);
      return Object.fromEntries(names.map((name) => [name, Number(row![name])]));
    },
    async idsOf(slug) {
      const em = app.orm.em.fork({ clear: true });
      em.setFilterParams(TENANT_FILTER, { all: true });
      const tenant = await em.findOneOrFail(Tenant, { slug });
      const project = await em.findOneOrFail(Project, { tenant: tenant.id });
      const member = await em.findOneOrFail(Membership, { tenant: tenant.id, role: 'MEMBER' });
      const adminMember = await em.findOneOrFail(Membership, { tenant: tenant.id, role: 'TENANT_ADMIN' });
      const token = await em.findOneOrFail(ApiToken, { tenant: tenant.id }, { orderBy: { id: 'asc' } });
      const audit = em.create(AuditEvent, {
        tenant,
        actor: null,
        actorTokenId: null,
        action: 'test.fixture',
        targetType: null,
        targetId: null,
        input: {},
        outcome: 'SUCCESS',
        errorCode: null,
        requestId: 'fixture',
      });
      const existing = await em.findOne(AuditEvent, { tenant: tenant.id, action: 'test.fixture' });
      if (!existing) await em.flush();
      const auditId = existing?.id ?? audit.id;
      const enc = (type: string, id: string) => Buffer.from(`${type}:${id}`).toString('base64');
      const queue = await em.findOneOrFail(Queue, { tenant: tenant.id });
      let job = await em.findOne(Job, { tenant: tenant.id }, { orderBy: { id: 'asc' } });
      if (!job) {
        const admin = credentials.find((c) => c.tenant === slug && c.role === 'TENANT_ADMIN')!.token;
        const res = await harness.gql(
          admin,
          `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`,
          {
            in: {
              queueId: enc('Queue', queue.id),
              name: `fixture job ${slug}`,
              podSets: [{ gpusPerPod: 1 }],
              expectedDurationSeconds: 3600,
            },
          },
        );
        if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
        job = await em
          .fork()
          .findOneOrFail(Job, { tenant: tenant.id }, { orderBy: { id: 'asc' }, filters: false });
      }
      const projectMember = await em.findOneOrFail(
        ProjectMembership,
        { tenant: tenant.id },
        { orderBy: { id: 'asc' } },
      );
      // A closed grant: it exists (an ID to attack) but gives the platform admin nothing.
      let grant = await em.findOne(BreakGlassGrant, {
        tenant: tenant.id,
        reason: `closed test fixture grant in ${slug}`,
      });
      if (!grant) {
        const operator = await em.findOneOrFail(User, { isPlatformAdmin: true }, { orderBy: { id: 'asc' } });
        grant = em.create(BreakGlassGrant, {
          tenant,
          operator,
          reason: `closed test fixture grant in ${slug}`,
          expiresAt: new Date(now.value + 3_600_000),
          closedAt: new Date(now.value),
        });
        await em.flush();
      }
      // A service that sleeps at zero replicas: an ID to attack that holds no GPU.
      let service = await em.findOne(InferenceService, { tenant: tenant.id }, { orderBy: { id: 'asc' } });
      if (!service) {
        const admin = credentials.find((c) => c.tenant === slug && c.role === 'TENANT_ADMIN')!.token;
        const res = await harness.gql(
          admin,
          `mutation($in: CreateInferenceServiceInput!) { createInferenceService(input: $in) { id } }`,
          {
            in: {
              queueId: enc('Queue', queue.id),
              name: `fixture-${slug}`,
              container: { image: `registry.${slug.split('-')[0]}.example/fixture-service:1` },
              port: 8080,
              replica: { gpusPerPod: 1 },
              minReplicas: 0,
              maxReplicas: 1,
              scaling: { signal: 'IN_FLIGHT', target: 4, scaleToZeroAfterSeconds: 600 },
            },
          },
        );
        if (res.body.errors) throw new Error(JSON.stringify(res.body.errors));
        service = await em
          .fork()
          .findOneOrFail(InferenceService, { tenant: tenant.id }, { orderBy: { id: 'asc' }, filters: false });
      }
      return {
        Queue: enc('Queue', queue.id),
        Job: enc('Job', job.id),
        InferenceService: enc('InferenceService', service.id),
        Tenant: enc('Tenant', tenant.id),
        Project: enc('Project', project.id),
        Member: enc('Member', member.id),
        AdminMember: enc('Member', adminMember.id),
        ApiToken: enc('ApiToken', token.id),
        AuditEvent: enc('AuditEvent', auditId),
        ProjectMember: enc('ProjectMember', projectMember.id),
        BreakGlassGrant: enc('BreakGlassGrant', grant.id),
        slug: tenant.slug,
      };
    },
    async close() {
      await app.close();
      await db.dispose();
      fs.rmSync(dataDir, { recursive: true, force: true });
      // An error the server had to mask is a bug, whatever the test asserted.
      if (errors.length)
        throw new Error(
          `unexpected server errors during test: ${errors.map((e) => (e instanceof Error && e.stack) || String(e)).join('\n')}`,
        );
    },
  };
  return harness;
}

/** The demo API token of someone with this role in that tenant (null: the platform admin's). */
export function demoToken(
  credentials: DemoCredential[],
  tenant: string | null,
  role: DemoCredential['role'],
): string {
  const found = credentials.find((c) => c.tenant === tenant && c.role === role);
  if (!found) throw new Error(`no demo credential for ${tenant}/${role}`);
  return found.token;
}

export function codesOf(response: GqlResponse): string[] {
  return (response.body.errors ?? []).map((e) => e.extensions?.code ?? 'NONE');
}

/** Runs a call that must be refused with exactly `code`, and proves it wrote nothing (row counts of every table, audit aside). */
export async function expectRefusedUnchanged(
  t: TestApp,
  bearer: string | null,
  query: string,
  variables: Record<string, unknown>,
  code: string,
): Promise<GqlResponse> {
  const before = await t.rowCounts({ ignoreAudit: true });
  const res = await t.gql(bearer, query, variables);
  expect(codesOf(res), JSON.stringify(res.body)).toEqual([code]);
  expect(await t.rowCounts({ ignoreAudit: true })).toEqual(before);
  return res;
}

/** Runs a call that must succeed and returns its data. */
export async function expectOk(
  t: TestApp,
  bearer: string | null,
  query: string,
  variables: Record<string, unknown> = {},
): Promise<Record<string, any>> {
  const res = await t.gql(bearer, query, variables);
  expect(res.body.errors, JSON.stringify(res.body)).toBeUndefined();
  return res.body.data!;
}
