import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { MikroORM } from '@mikro-orm/core';
import Database from 'better-sqlite3';
import { createYoga } from 'graphql-yoga';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { useRoutes } from '../../plugins/useRoutes.js';
import { ConfigError, DEFAULT_DATABASE_TIMEOUTS, load } from '../../src/config/index.js';
import { isDatabaseUnavailable } from '../../src/persistence/database-unavailable.js';
import { openDatabase, ormConfig } from '../../src/persistence/orm.js';
import type { DemoCredential } from '../../src/server/demo/seed.js';
import { createMaskError, DATABASE_UNAVAILABLE_MESSAGE } from '../../src/server/errors.js';
import { NOT_READY_REASON, readinessRoute } from '../../src/server/routes/readiness.js';
import { methodNotAllowed } from '../../src/server/routes/route-errors.js';
import { createTestDatabase, describeNeeding, type TestDatabase } from '../helpers/database.js';
import {
  freePort,
  gqlData,
  killAllServers,
  type ServerProcess,
  startServer,
  tokenOf,
  waitFor,
} from '../helpers/process.js';
import { type ProxyMode, startTcpProxy, type TcpProxy } from '../helpers/tcp-proxy.js';

/**
 * Database outages against the real server process, through a TCP proxy between it and
 * PostgreSQL that the test can cut (refused, like a stopped server) or black-hole (packets
 * dropped: nothing errors, nothing answers). During each fault the process stays up,
 * requests fail fast with SERVICE_UNAVAILABLE and nothing of the database, `/ready` answers
 * 503 within a second; afterwards it recovers by itself (no restart) and admits again.
 *
 * The fault durations can be set with DB_FAULT_CUT_MS and DB_FAULT_BLACKHOLE_MS. The cut's
 * default outlasts the scheduler's 30 s periodic resync, whose failure used to kill the process.
 */
const CUT_MS = Number(process.env.DB_FAULT_CUT_MS ?? 32_000);
const BLACKHOLE_MS = Number(process.env.DB_FAULT_BLACKHOLE_MS ?? 20_000);
/** A shorter black-hole after which the held connections stay dead. */
const ABANDON_MS = Number(process.env.DB_FAULT_ABANDON_MS ?? 8000);
/** A request during an outage must be answered within this (the statement timeout is 4 s, +0.5 s client
 * grace).
 */
const FAIL_FAST_MS = 6000;
/** `/ready` must answer within a second. */
const READY_WITHIN_MS = 1000;
/** After the fault ends: ready again, and a new job admitted, within this. */
const RECOVERY_MS = 30_000;

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id state } }`;
const JOB_STATE = `query($id: ID!) { node(id: $id) { ... on Job { id state } } }`;
const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString('utf8').replace(/^Job:/, '');

interface Timed<T> {
  ms: number;
  status: number;
  text: string;
  body: T;
}

async function timedFetch<T = any>(url: string, init?: RequestInit): Promise<Timed<T>> {
  const t0 = performance.now();
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(60_000) });
  const text = await response.text();
  const ms = performance.now() - t0;
  let body: T;
  try {
    body = JSON.parse(text) as T;
  } catch {
    body = text as T;
  }
  return { ms, status: response.status, text, body };
}

const percentile = (values: number[], p: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length
    ? Math.round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!)
    : NaN;
};

describeNeeding(['postgresql'], 'database faults: the real server through a TCP proxy to PostgreSQL', () => {
  const run = randomBytes(4).toString('hex');
  let db: TestDatabase;
  let proxy: TcpProxy;
  let server: ServerProcess;
  let creds: DemoCredential[];
  let dataDir: string;
  let exitedDuringTest: string | null = null;
  /** Strings of the database's address that no client may ever see. */
  let secrets: string[];
  const queueIds = new Map<string, string>();
  /** Jobs the server acknowledged (an id came back), whatever happened afterwards. */
  const acknowledged: { id: string; key: string; tenant: string }[] = [];
  let submitCount = 0;

  const member = (t: string) => tokenOf(creds, t, 'MEMBER');
  const readyUrl = () => server.url.replace(/\/graphql$/, '/ready');

  async function submit(tenant: string, label: string) {
    const key = `faults-${run}-${label}-${submitCount++}`;
    const input = {
      queueId: queueIds.get(tenant),
      name: key,
      podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
      expectedDurationSeconds: 1e6,
      idempotencyKey: key,
    };
    const result = await timedFetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json',
        authorization: `Bearer ${member(tenant)}`,
      },
      body: JSON.stringify({ query: SUBMIT, variables: { in: input } }),
    });
    const id = (result.body as any)?.data?.submitJob?.id as string | undefined;
    if (id) acknowledged.push({ id: rawId(id), key, tenant });
    return { ...result, id };
  }

  function graph(query: string, token: string) {
    return timedFetch(server.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json',
        authorization: `Bearer ${token}`,
      },
      body: JSON.stringify({ query }),
    });
  }

  /** What the client saw of a failed request: the typed code and our message, nothing of the database. */
  function expectTypedUnavailable(what: string, r: Timed<any>) {
    const errors = r.body?.errors as { message: string; extensions?: { code?: string } }[] | undefined;
    expect(errors?.length, `${what}: expected errors, got ${r.text.slice(0, 300)}`).toBeGreaterThan(0);
    for (const e of errors!) {
      expect(e.extensions?.code, `${what}: ${r.text.slice(0, 300)}`).toBe('SERVICE_UNAVAILABLE');
      expect(e.message).toBe(DATABASE_UNAVAILABLE_MESSAGE);
    }
    expect(r.status, `${what}: HTTP status`).toBe(503);
    for (const secret of secrets) expect(r.text, `${what} shows "${secret}"`).not.toContain(secret);
    expect(r.text).not.toMatch(/\bat .*\.(ts|js):\d+|select |insert |update |ECONN|timeout|knex|pg_/i);
  }

  /**
   * Holds the fault for `ms` while probing like clients and a load balancer would, and
   * checks every answer. Returns the measured latencies.
   */
  async function duringFault(mode: ProxyMode, ms: number) {
    onTestFailed(() =>
      console.log(
        `[database-faults] the server's output (last 6000 characters):\n${server.output().slice(-6000)}`,
      ),
    );
    await proxy.setMode(mode);
    const started = Date.now();
    const requestMs: number[] = [];
    const readyMs: number[] = [];
    let round = 0;
    while (Date.now() - started < ms) {
      const roundStart = Date.now();
      const tenant = round % 2 === 0 ? 'aurora-research' : 'borealis-inference';
      // A read, a write and a readiness probe at once, as traffic would arrive.
      const [read, write, ready] = await Promise.all([
        graph(`{ queues { id name pendingCount } }`, member(tenant)),
        submit(tenant, `during-${mode}`),
        timedFetch(readyUrl()),
      ]);
      expectTypedUnavailable(`${mode}: a query (round ${round})`, read);
      expectTypedUnavailable(`${mode}: submitJob (round ${round})`, write);
      expect(write.id, `${mode}: a submit was acknowledged with the database unreachable`).toBeUndefined();
      expect(read.ms, `${mode}: a query took ${Math.round(read.ms)} ms`).toBeLessThan(FAIL_FAST_MS);
      expect(write.ms, `${mode}: submitJob took ${Math.round(write.ms)} ms`).toBeLessThan(FAIL_FAST_MS);
      requestMs.push(read.ms, write.ms);

      expect(ready.status, `${mode}: /ready answered ${ready.status} ${ready.text}`).toBe(503);
      expect(ready.body).toEqual({ status: 'not-ready', reason: NOT_READY_REASON });
      for (const secret of secrets) expect(ready.text).not.toContain(secret);
      readyMs.push(ready.ms);
      // A probe on its own too (the one above shared the machine with two requests).
      const alone = await timedFetch(readyUrl());
      expect(alone.status).toBe(503);
      readyMs.push(alone.ms);

      expect(exitedDuringTest, `the server exited during the ${mode}`).toBeNull();
      round++;
      await new Promise((r) => setTimeout(r, Math.max(0, 1500 - (Date.now() - roundStart))));
    }
    for (const latency of readyMs)
      expect(latency, `${mode}: /ready took ${Math.round(latency)} ms`).toBeLessThan(READY_WITHIN_MS);
    return { rounds: round, requestMs, readyMs };
  }

  /** Back to pass: ready again and a new job admitted, with the same process. */
  async function recovers(mode: ProxyMode) {
    const pid = server.pid;
    await proxy.setMode('pass');
    const t0 = Date.now();
    await waitFor(
      `/ready is 200 after the ${mode}`,
      async () => (await timedFetch(readyUrl())).status === 200,
      RECOVERY_MS,
      200,
    );
    const readyAfterMs = Date.now() - t0;
    const submitted = await waitFor(
      `submitJob answers after the ${mode}`,
      async () => {
        const r = await submit('aurora-research', `after-${mode}`);
        return r.id ? r : null;
      },
      RECOVERY_MS,
      500,
    );
    await waitFor(
      `a job submitted after the ${mode} is admitted (the scheduler resumed)`,
      async () => {
        const data: any = await gqlData(server.url, member('aurora-research'), JOB_STATE, {
          id: submitted.id,
        });
        return data.node?.state === 'ADMITTED' || data.node?.state === 'RUNNING';
      },
      RECOVERY_MS,
      250,
    );
    const admittedAfterMs = Date.now() - t0;
    expect(server.pid).toBe(pid);
    expect(exitedDuringTest).toBeNull();
    return { readyAfterMs, admittedAfterMs };
  }

  beforeAll(async () => {
    db = await createTestDatabase('postgresql');
    const direct = new URL(db.database.dialect === 'postgresql' ? db.database.url : '');
    proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
    const proxied = new URL(direct);
    proxied.hostname = '127.0.0.1';
    proxied.port = String(proxy.port);
    secrets = ['127.0.0.1', 'localhost', `:${proxy.port}`, String(proxy.port), direct.pathname.slice(1)];
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-faults-'));
    server = await startServer({
      dataDir,
      env: { DATABASE_URL: proxied.toString() },
      label: 'server behind the proxy',
    });
    void server.exited.then((exit) => {
      exitedDuringTest = JSON.stringify(exit);
    });
    creds = server.credentials();
    for (const t of ['aurora-research', 'borealis-inference']) {
      const data: any = await gqlData(server.url, member(t), `{ queues { id name } }`);
      queueIds.set(t, data.queues[0].id);
    }
    // Jobs acknowledged before any fault: all must still be there at the end.
    for (let i = 0; i < 6; i++) {
      const r = await submit(i % 2 ? 'borealis-inference' : 'aurora-research', 'before');
      expect(r.id, r.text).toBeDefined();
    }
    expect((await timedFetch(readyUrl())).status).toBe(200);
  }, 90_000);

  afterAll(async () => {
    exitedDuringTest = exitedDuringTest ?? 'stopped by the test';
    await killAllServers();
    await proxy?.close();
    await db?.dispose().catch(() => undefined);
    if (dataDir) fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it(
    `cut (connections refused and closed for ${CUT_MS / 1000} s): the process stays up, requests fail fast and typed, /ready 503 within 1 s, then recovers without a restart`,
    async () => {
      const fault = await duringFault('cut', CUT_MS);
      const recovery = await recovers('cut');
      console.log(
        `[database-faults] cut ${CUT_MS} ms, ${fault.rounds} rounds: request fail-fast p50 ${percentile(fault.requestMs, 50)} ms, max ${percentile(fault.requestMs, 100)} ms; /ready p50 ${percentile(fault.readyMs, 50)} ms, max ${percentile(fault.readyMs, 100)} ms; after restore: ready in ${recovery.readyAfterMs} ms, new job admitted in ${recovery.admittedAfterMs} ms`,
      );
      expect(fault.rounds).toBeGreaterThanOrEqual(2);
    },
    CUT_MS + 3 * RECOVERY_MS + 30_000,
  );

  it(
    `black-hole (nothing answers for ${BLACKHOLE_MS / 1000} s): requests fail fast and typed, /ready 503 within 1 s, then recovers without a restart`,
    async () => {
      const fault = await duringFault('black-hole', BLACKHOLE_MS);
      const recovery = await recovers('black-hole');
      console.log(
        `[database-faults] black-hole ${BLACKHOLE_MS} ms, ${fault.rounds} rounds: request fail-fast p50 ${percentile(fault.requestMs, 50)} ms, max ${percentile(fault.requestMs, 100)} ms; /ready p50 ${percentile(fault.readyMs, 50)} ms, max ${percentile(fault.readyMs, 100)} ms; after restore: ready in ${recovery.readyAfterMs} ms, new job admitted in ${recovery.admittedAfterMs} ms`,
      );
      expect(fault.rounds).toBeGreaterThanOrEqual(2);
    },
    BLACKHOLE_MS + 3 * RECOVERY_MS + 30_000,
  );

  let afterAbandon: { id: string; ready: number; acknowledged: number } | null = null;

  it(
    'black-hole whose held connections never come back (a firewall lost their flows): the pool replaces them by itself',
    async () => {
      const fault = await duringFault('black-hole', ABANDON_MS);
      const held = proxy.stats().open;
      const pid = server.pid;
      await proxy.setMode('pass', { abandonHeld: true });
      const t0 = Date.now();
      // Every pooled connection of the black-hole is dead for good: each must be found out
      // (read timeout) and replaced, or requests keep failing on them.
      await waitFor(
        '/ready is 200 with only new connections',
        async () => (await timedFetch(readyUrl())).status === 200,
        RECOVERY_MS,
        200,
      );
      const ready = Date.now() - t0;
      const submitted = await waitFor(
        'submitJob answers with only new connections',
        async () => {
          const r = await submit('aurora-research', 'after-abandon');
          return r.id ? r : null;
        },
        RECOVERY_MS,
        500,
      );
      afterAbandon = { id: submitted.id!, ready, acknowledged: Date.now() - t0 };
      for (let i = 0; i < 5; i++)
        expect((await graph(`{ queues { id } }`, member('borealis-inference'))).body.errors).toBeUndefined();
      expect(server.pid).toBe(pid);
      expect(exitedDuringTest).toBeNull();
      console.log(
        `[database-faults] black-hole ${ABANDON_MS} ms, then ${held} proxied connections never come back: request fail-fast max ${percentile(fault.requestMs, 100)} ms; after restore: ready in ${ready} ms, a submit acknowledged in ${afterAbandon.acknowledged} ms`,
      );
    },
    ABANDON_MS + 2 * RECOVERY_MS + 30_000,
  );

  it(
    '…and the scheduler admits again although its old lock session never hears from it (PostgreSQL must end that session)',
    async () => {
      expect(afterAbandon, 'the previous test recovered').not.toBeNull();
      onTestFailed(() =>
        console.log(
          `[database-faults] the server's output (last 4000 characters):\n${server.output().slice(-4000)}`,
        ),
      );
      const t0 = Date.now();
      await waitFor(
        'a job submitted after the abandoned black-hole is admitted (a leader again)',
        async () => {
          const data: any = await gqlData(server.url, member('aurora-research'), JOB_STATE, {
            id: afterAbandon!.id,
          });
          return data.node?.state === 'ADMITTED' || data.node?.state === 'RUNNING';
        },
        RECOVERY_MS,
        250,
      );
      console.log(
        `[database-faults] after the abandoned black-hole: admitted ${Date.now() - t0 + afterAbandon!.acknowledged} ms after the restore`,
      );
    },
    RECOVERY_MS + 10_000,
  );

  it('nothing acknowledged is lost, and nothing escaped as an unhandled error', async () => {
    const direct = new pg.Client({
      connectionString: db.database.dialect === 'postgresql' ? db.database.url : '',
    });
    await direct.connect();
    try {
      const { rows } = await direct.query('select id, idempotency_key as key from jobs');
      const stored = new Map(rows.map((r) => [String(r.id), String(r.key)]));
      expect(acknowledged.length).toBeGreaterThanOrEqual(9); // 6 before, one after each fault
      for (const a of acknowledged)
        expect(stored.get(a.id), `acknowledged job ${a.id} (${a.key})`).toBe(a.key);
    } finally {
      await direct.end();
    }
    // The graph agrees, through the recovered server.
    for (const a of acknowledged) {
      const data: any = await gqlData(server.url, member(a.tenant), JOB_STATE, {
        id: Buffer.from(`Job:${a.id}`).toString('base64'),
      });
      expect(data.node?.id, a.key).toBeDefined();
    }
    expect(exitedDuringTest).toBeNull();
    // The last-resort handlers in main.ts keep the process up; each source must handle its own failures.
    expect(server.output()).not.toMatch(/unhandled rejection|uncaught/i);
  });
});

describeNeeding(
  ['postgresql'],
  'a PostgreSQL connection that stops answering is replaced, not reused',
  () => {
    it('after a read timeout the pool opens a new connection instead of queueing behind the dead one', async () => {
      const db = await createTestDatabase('postgresql');
      const direct = new URL(db.database.dialect === 'postgresql' ? db.database.url : '');
      const proxy = await startTcpProxy({ host: direct.hostname, port: Number(direct.port || 5432) });
      const proxied = new URL(direct);
      proxied.hostname = '127.0.0.1';
      proxied.port = String(proxy.port);
      const config = ormConfig({
        database: { dialect: 'postgresql', url: proxied.toString() },
        timeouts: { connectMs: 1000, acquireMs: 1000, statementMs: 300 },
      });
      // One connection only: if the dead one went back into the pool, every later query would get it.
      const orm = await MikroORM.init({
        ...config,
        pool: { ...config.pool, min: 0, max: 1 },
        entities: [],
        discovery: { warnWhenNoEntities: false },
        allowGlobalContext: true,
      });
      try {
        const connection = orm.em.getConnection();
        expect(await connection.execute('select 1 as x')).toEqual([{ x: 1 }]);
        await proxy.setMode('black-hole');
        const t0 = performance.now();
        const lost = await connection.execute('select 2 as x').then(
          () => null,
          (e: unknown) => e,
        );
        expect(isDatabaseUnavailable(lost), String(lost)).toBe(true);
        expect(performance.now() - t0).toBeLessThan(3000);
        // The held connection never comes back; new ones pass.
        await proxy.setMode('pass', { abandonHeld: true });
        for (let i = 0; i < 5; i++) {
          const t1 = performance.now();
          expect(await connection.execute(`select ${i} as x`)).toEqual([{ x: i }]);
          expect(performance.now() - t1, `query ${i} after the restore`).toBeLessThan(1500);
        }
      } finally {
        await orm.close(true);
        await proxy.close();
        await db.dispose();
      }
    }, 30_000);
  },
);

describe('/ready never shows where the database is', () => {
  it('answers 503 with a fixed reason, within its timeout, when the database refuses or never answers', async () => {
    const port = await freePort(); // nothing listens here: connections are refused
    const url = `postgres://fairway:hunter2@127.0.0.1:${port}/secret_db_name`;
    const orm = await MikroORM.init({
      ...ormConfig({ database: { dialect: 'postgresql', url } }),
      connect: false,
    });
    // A listener that accepts and never answers: a black-holed database.
    const silent = net.createServer(() => undefined);
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const silentPort = (silent.address() as net.AddressInfo).port;
    const silentOrm = await MikroORM.init({
      ...ormConfig({
        database: { dialect: 'postgresql', url: `postgres://fairway@127.0.0.1:${silentPort}/secret_db_name` },
      }),
      connect: false,
    });
    try {
      for (const [label, target, hidden] of [
        ['refused', orm, port],
        ['black-holed', silentOrm, silentPort],
      ] as const) {
        const failures: unknown[] = [];
        const yoga = createYoga({
          plugins: [
            useRoutes({
              routes: [
                readinessRoute({
                  check: () =>
                    target.em
                      .getConnection()
                      .execute('select 1')
                      .then(() => undefined),
                  timeoutMs: 300,
                  onFailure: (e) => failures.push(e),
                }),
              ],
              methodNotAllowed,
            }),
          ],
        });
        const t0 = performance.now();
        const response = await yoga.fetch('http://gateway.test/ready');
        const ms = performance.now() - t0;
        const text = await response.text();
        expect(response.status, label).toBe(503);
        expect(JSON.parse(text)).toEqual({ status: 'not-ready', reason: 'database unavailable' });
        expect(ms, `${label}: /ready took ${Math.round(ms)} ms`).toBeLessThan(1000);
        for (const secret of [
          '127.0.0.1',
          String(hidden),
          'secret_db_name',
          'hunter2',
          'fairway',
          'ECONNREFUSED',
        ])
          expect(text, label).not.toContain(secret);
        if (label === 'refused') {
          // The real driver error does name the address: that is what must not leak.
          await waitFor('the check fails', async () => failures.length > 0, 5000, 20);
          expect(String((failures[0] as Error).message)).toContain(String(hidden));
          expect(isDatabaseUnavailable(failures[0])).toBe(true);
        }
      }
    } finally {
      await orm.close(true);
      await silentOrm.close(true);
      silent.close();
    }
  }, 20_000);
});

describe('database errors reaching a client', () => {
  it('a refused connection becomes SERVICE_UNAVAILABLE with a fixed message; a bug stays INTERNAL_SERVER_ERROR', () => {
    const logged: unknown[] = [];
    const mask = createMaskError((e) => logged.push(e));
    const refused = Object.assign(new Error('connect ECONNREFUSED 10.9.8.7:6543'), { code: 'ECONNREFUSED' });
    const masked = mask(refused) as any;
    expect(masked.message).toBe(DATABASE_UNAVAILABLE_MESSAGE);
    expect(masked.extensions.code).toBe('SERVICE_UNAVAILABLE');
    expect(JSON.stringify(masked)).not.toMatch(/10\.9\.8\.7|6543|ECONNREFUSED/);
    expect(logged).toEqual([refused]); // the server's log has the real error
    for (const e of [
      new Error('Query read timeout'),
      new Error('select "a0".* from "api_tokens" as "a0" limit 1 - Query read timeout'),
      new Error('select 1 - Client was closed and is not queryable'),
      new Error('Knex: Timeout acquiring a connection. The pool is probably full.'),
      Object.assign(new Error('canceling statement due to statement timeout'), { code: '57014' }),
      Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' }),
    ]) {
      expect((mask(e) as any).extensions.code, e.message).toBe('SERVICE_UNAVAILABLE');
    }
    for (const e of [
      new TypeError('x is undefined'),
      Object.assign(new Error('duplicate key'), { code: '23505' }),
    ]) {
      expect((mask(e) as any).extensions.code, e.message).toBe('INTERNAL_SERVER_ERROR');
    }
  });
});

describe('database timeout settings', () => {
  it('default to a few seconds and are read from the environment', () => {
    expect(load({}).database.timeouts).toEqual(DEFAULT_DATABASE_TIMEOUTS);
    expect(load({}).server.readyTimeoutMs).toBeLessThan(1000);
    const config = load({
      FAIRWAY_DB_CONNECT_TIMEOUT_MS: '1500',
      FAIRWAY_DB_ACQUIRE_TIMEOUT_MS: '2500',
      FAIRWAY_DB_STATEMENT_TIMEOUT_MS: '9000',
      FAIRWAY_READY_TIMEOUT_MS: '400',
    });
    expect(config.database.timeouts).toEqual({ connectMs: 1500, acquireMs: 2500, statementMs: 9000 });
    expect(config.server.readyTimeoutMs).toBe(400);
  });

  it.each([
    [{ FAIRWAY_DB_CONNECT_TIMEOUT_MS: 'soon' }, /FAIRWAY_DB_CONNECT_TIMEOUT_MS/],
    [{ FAIRWAY_DB_ACQUIRE_TIMEOUT_MS: '0' }, /FAIRWAY_DB_ACQUIRE_TIMEOUT_MS: must be at least/],
    [{ FAIRWAY_DB_STATEMENT_TIMEOUT_MS: '2.5' }, /FAIRWAY_DB_STATEMENT_TIMEOUT_MS: must be a whole number/],
    [{ FAIRWAY_READY_TIMEOUT_MS: '120000' }, /FAIRWAY_READY_TIMEOUT_MS: must be at most/],
  ])('%o is refused with a message naming the setting', (env, message) => {
    expect(() => load(env)).toThrow(ConfigError);
    expect(() => load(env)).toThrow(message);
  });

  it('reach the PostgreSQL driver: connect, acquire, statement (server side) and read (client side) timeouts', () => {
    const options = ormConfig({
      database: { dialect: 'postgresql', url: 'postgres://u@h:5432/db' },
      timeouts: { connectMs: 1111, acquireMs: 2222, statementMs: 3333 },
    }) as any;
    expect(options.pool.acquireTimeoutMillis).toBe(2222);
    expect(options.driverOptions.connection).toMatchObject({
      connectionTimeoutMillis: 1111,
      statement_timeout: 3333,
    });
    expect(options.driverOptions.connection.query_timeout).toBeGreaterThan(3333);
    expect(options.driverOptions.connection.query_timeout).toBeLessThan(5000);
  });

  it('reach SQLite as its busy timeout: a write blocked by another writer fails after it, typed as unavailable', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-busy-'));
    const file = path.join(dir, 'busy.db');
    const orm = await openDatabase({
      database: { dialect: 'sqlite', file },
      timeouts: { connectMs: 1000, acquireMs: 300, statementMs: 4000 },
    });
    const other = new Database(file);
    try {
      const connection = orm.em.getConnection();
      expect(await connection.execute('pragma busy_timeout')).toEqual([{ timeout: 300 }]);
      await connection.execute('create table t (x integer)');
      other.exec('begin immediate'); // another process holds the write lock
      const t0 = performance.now();
      const error = await connection.execute('insert into t values (1)').then(
        () => null,
        (e: unknown) => e,
      );
      const ms = performance.now() - t0;
      expect(isDatabaseUnavailable(error), String(error)).toBe(true);
      expect(ms).toBeGreaterThanOrEqual(250);
      expect(ms).toBeLessThan(3000);
    } finally {
      other.exec('rollback');
      other.close();
      await orm.close(true);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
