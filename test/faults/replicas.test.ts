import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type Client, createClient } from 'graphql-ws';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { DemoCredential } from '../../src/server/demo/seed.js';
import { createTestDatabase, describeNeeding, type TestDatabase } from '../helpers/database.js';
import {
  gql,
  gqlData,
  killAllServers,
  type ServerProcess,
  startServer,
  tokenOf,
  waitFor,
} from '../helpers/process.js';
import { schedulerLockHolders, sharedGpus } from '../helpers/scheduler-lock.js';

/**
 * Two real server processes on one PostgreSQL database with Redis between them: only one
 * schedules (the advisory lock), a subscriber on one replica hears what a mutation on the
 * other caused, and when the leader dies the other takes over.
 */

const TEST_REDIS_URL = process.env.TEST_REDIS_URL;

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString('utf8').replace(/^Job:/, '');

describeNeeding(['postgresql', 'redis'], 'two replicas on one PostgreSQL with Redis', () => {
  const run = randomBytes(4).toString('hex');
  const appName = { A: `fairway-replica-a-${run}`, B: `fairway-replica-b-${run}` };
  let db: TestDatabase;
  let sql: pg.Client;
  let a: ServerProcess;
  let b: ServerProcess;
  let creds: DemoCredential[];
  const dirs: string[] = [];
  const clients: Client[] = [];
  const queueIds = new Map<string, string>();
  const tenantIds = new Map<string, string>();
  /** Tenant events heard by subscribers on replica B, per tenant. */
  const heardOnB = new Map<string, { kind: string; jobId: string | null }[]>();
  const submitted: { id: string; tenant: string; via: 'A' | 'B' }[] = [];

  const member = (t: string) => tokenOf(creds, t, 'MEMBER');

  const lockHolders = async () => (await schedulerLockHolders(sql)).map((h) => h.app);

  async function advisoryLocksGranted(): Promise<number> {
    const { rows } = await sql.query(
      `select count(*)::int as n from pg_locks where locktype = 'advisory' and granted and database = (select oid from pg_database where datname = current_database())`,
    );
    return rows[0].n;
  }

  async function jobRows() {
    const { rows } = await sql.query(`select j.id, j.state, j.admission,
        (select count(*)::int from job_events e where e.job_id = j.id and e.type = 'ADMITTED') as admitted,
        (select count(*)::int from job_events e where e.job_id = j.id and e.type = 'PREEMPTED') as preempted
      from jobs j`);
    return rows as {
      id: string;
      state: string;
      admission: { podSets: { placements: { node: string; gpuIndices?: number[] }[] }[] } | null;
      admitted: number;
      preempted: number;
    }[];
  }

  function ws(server: ServerProcess, token: string): Client {
    const client = createClient({
      url: server.url.replace('http', 'ws'),
      webSocketImpl: WebSocket,
      connectionParams: { authorization: `Bearer ${token}` },
      retryAttempts: 0,
    });
    clients.push(client);
    return client;
  }

  async function submit(server: ServerProcess, tenant: string, name: string) {
    const res = await gql(server.url, member(tenant), SUBMIT, {
      in: {
        queueId: queueIds.get(tenant),
        name,
        podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 1e6,
        idempotencyKey: `${run}-${name}`,
      },
    });
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    return res.data.submitJob.id as string;
  }

  beforeAll(async () => {
    db = await createTestDatabase('postgresql');
    if (db.database.dialect !== 'postgresql') throw new Error('expected PostgreSQL');
    const url = db.database.url;
    sql = new pg.Client({ connectionString: url, application_name: `fairway-test-observer-${run}` });
    await sql.connect();
    for (const _ of [0, 1]) dirs.push(fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-replica-')));
    a = await startServer({
      dataDir: dirs[0]!,
      label: 'replica A',
      env: { DATABASE_URL: url, REDIS_URL: TEST_REDIS_URL, PGAPPNAME: appName.A },
    });
    b = await startServer({
      dataDir: dirs[1]!,
      label: 'replica B',
      env: { DATABASE_URL: url, REDIS_URL: TEST_REDIS_URL, PGAPPNAME: appName.B },
    });
    // A seeded the demo; B found tenants and seeded nothing (so it has no credentials file).
    creds = a.credentials();
    expect(fs.existsSync(path.join(dirs[1]!, 'demo-credentials.json'))).toBe(false);
    for (const t of ['aurora-research', 'borealis-inference']) {
      const data: any = await gqlData(
        b.url,
        member(t),
        `query($s: String!) { tenant(slug: $s) { id } queues { id } }`,
        { s: t },
      );
      tenantIds.set(t, data.tenant.id);
      queueIds.set(t, data.queues[0].id);
    }
  }, 60_000);

  afterAll(async () => {
    for (const client of clients) await client.dispose();
    await killAllServers();
    await sql?.end().catch(() => undefined);
    await db?.dispose().catch(() => undefined);
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('only one replica holds the scheduler lock: the one that started first', async () => {
    // Both replicas are connected to the database …
    const { rows } = await sql.query(
      `select application_name, count(*)::int as n from pg_stat_activity where application_name in ($1, $2) group by application_name`,
      [appName.A, appName.B],
    );
    expect(rows.map((r) => r.application_name).sort()).toEqual([appName.A, appName.B]);
    // … and exactly one advisory lock is granted in this database, Fairway's, to A.
    expect(await lockHolders()).toEqual([appName.A]);
    expect(await advisoryLocksGranted()).toBe(1);
  });

  it("jobs submitted alternately to A and B are each admitted exactly once, on distinct GPUs; B hears A's admissions", async () => {
    for (const t of ['aurora-research', 'borealis-inference']) {
      const heard: { kind: string; jobId: string | null }[] = [];
      heardOnB.set(t, heard);
      ws(b, member(t)).subscribe<{ tenantEvents: { kind: string; jobId: string | null } }>(
        {
          query: `subscription($t: ID!) { tenantEvents(tenantId: $t) { kind jobId } }`,
          variables: { t: tenantIds.get(t) },
        },
        {
          next: (m) => m.data && heard.push(m.data.tenantEvents),
          error: (e) => heard.push({ kind: `ERROR ${JSON.stringify(e)}`, jobId: null }),
          complete: () => undefined,
        },
      );
    }
    await new Promise((r) => setTimeout(r, 300)); // the subscriptions are in place
    // 30 one-GPU jobs, 15 per tenant (within each queue's 16 H100 nominal): all fit at once.
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: 30 }, async (_, i) => {
        const via = i % 2 === 0 ? 'A' : 'B';
        const tenant = i < 15 ? 'aurora-research' : 'borealis-inference';
        const id = await submit(via === 'A' ? a : b, tenant, `alt-${i}`);
        submitted.push({ id, tenant, via });
      }),
    );
    const ours = new Set(submitted.map((s) => rawId(s.id)));
    await waitFor(
      'all 30 jobs admitted',
      async () =>
        (await jobRows()).filter((r) => ours.has(r.id) && (r.state === 'ADMITTED' || r.state === 'RUNNING'))
          .length === 30,
      15_000,
    ).catch(async (error) => {
      const rows = new Map((await jobRows()).map((r) => [r.id, r]));
      const left = submitted.filter(
        (s) => !['ADMITTED', 'RUNNING'].includes(rows.get(rawId(s.id))?.state ?? ''),
      );
      const reasons = await Promise.all(
        left.map(async (s) => {
          const d: any = await gqlData(
            a.url,
            member(s.tenant),
            `query($id: ID!) { node(id: $id) { ... on Job { state pendingReason { code message } } } }`,
            { id: s.id },
          );
          return `${s.via}/${s.tenant}: ${d.node.state} ${d.node.pendingReason?.code}`;
        }),
      );
      const quiet = (out: string) =>
        out
          .split('\n')
          .filter((l) => !/fwt_|curl|-d '|Try:/.test(l))
          .join('\n');
      throw new Error(
        `${String(error)}; not admitted: ${reasons.join('; ')}\nreplica A said:\n${quiet(a.output())}\nreplica B said:\n${quiet(b.output())}`,
      );
    });
    console.log(
      `[replicas] 30 jobs (15 via A, 15 via B) admitted ${Date.now() - t0} ms after the first submit`,
    );

    const rows = (await jobRows()).filter((r) => ours.has(r.id));
    for (const r of rows)
      expect({ id: r.id, admitted: r.admitted, preempted: r.preempted }).toEqual({
        id: r.id,
        admitted: 1,
        preempted: 0,
      });
    expect(sharedGpus(await jobRows())).toEqual([]);
    // Still one lock, still A's.
    expect(await lockHolders()).toEqual([appName.A]);

    // B's subscribers heard the admission of every job of their tenant, including those
    // submitted on A and admitted by A (foreign events from other test runs are ignored).
    await waitFor(
      'B heard every admission',
      async () =>
        submitted.every((s) =>
          heardOnB.get(s.tenant)!.some((e) => e.kind === 'ADMITTED' && e.jobId === s.id),
        ),
      5_000,
    );
    for (const s of submitted) {
      const mine = heardOnB.get(s.tenant)!.filter((e) => e.jobId === s.id);
      expect(
        mine.filter((e) => e.kind === 'ADMITTED'),
        `admissions of ${s.id} heard on B`,
      ).toHaveLength(1);
    }
    // No subscriber heard the other tenant's jobs.
    for (const [tenant, heard] of heardOnB) {
      const others = new Set(submitted.filter((s) => s.tenant !== tenant).map((s) => s.id));
      expect(heard.filter((e) => e.jobId && others.has(e.jobId))).toEqual([]);
      expect(heard.filter((e) => e.kind.startsWith('ERROR'))).toEqual([]);
    }
  }, 40_000);

  it('a jobUpdated subscriber on B sees a cancel made on A', async () => {
    const target = submitted.find((s) => s.via === 'A' && s.tenant === 'aurora-research')!;
    const states: string[] = [];
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`no CANCELLED on B; heard ${JSON.stringify(states)}`)),
        8_000,
      );
      ws(b, member('aurora-research')).subscribe<{ jobUpdated: { id: string; state: string } }>(
        {
          query: `subscription($id: ID!) { jobUpdated(id: $id) { id state } }`,
          variables: { id: target.id },
        },
        {
          next: (m) => {
            if (!m.data) return reject(new Error(JSON.stringify(m.errors)));
            expect(m.data.jobUpdated.id).toBe(target.id);
            states.push(m.data.jobUpdated.state);
            if (m.data.jobUpdated.state === 'CANCELLED') {
              clearTimeout(timer);
              resolve();
            }
          },
          error: (e) => reject(e instanceof Error ? e : new Error(JSON.stringify(e))),
          complete: () => undefined,
        },
      );
    });
    await new Promise((r) => setTimeout(r, 300));
    const res = await gql(
      a.url,
      tokenOf(creds, 'aurora-research', 'TENANT_ADMIN'),
      `mutation($id: ID!) { cancelJob(id: $id) { state } }`,
      { id: target.id },
    );
    expect(res.errors).toBeUndefined();
    await done;
    expect(states.at(-1)).toBe('CANCELLED');
  });

  it("a quota change made on the leader shows in the follower's read model", async () => {
    expect(await lockHolders()).toEqual([appName.A]);
    const queueId = queueIds.get('aurora-research')!;
    const admin = tokenOf(creds, 'aurora-research', 'TENANT_ADMIN');
    const USAGE = 'query($id: ID!) { node(id: $id) { ... on Queue { usage { flavor resource nominal } } } }';
    const nominalOn = async (server: ServerProcess): Promise<number | undefined> => {
      const data: any = await gqlData(server.url, admin, USAGE, { id: queueId });
      return data.node.usage.find((u: any) => u.flavor === 'h100-80g' && u.resource === 'GPU')?.nominal;
    };
    const next = ((await nominalOn(b)) ?? 0) + 3;
    await gqlData(
      a.url,
      tokenOf(creds, null, 'PLATFORM_ADMIN'),
      'mutation($q: ID!, $n: Float!) { setQuota(queueId: $q, quota: { flavor: "h100-80g", nominal: $n }) { id } }',
      { q: queueId, n: next },
    );
    await waitFor("B's read model has the new nominal", async () => (await nominalOn(b)) === next);
    expect(await nominalOn(a)).toBe(next);
  });

  it('when the leader is killed, the other replica takes the lock and admits new jobs', async () => {
    expect(await lockHolders()).toEqual([appName.A]);
    const killedAt = Date.now();
    await a.kill('SIGKILL');
    const id = await submit(b, 'aurora-research', 'after-failover');
    const admitted = await waitFor(
      'the job submitted after the kill is admitted',
      async () => {
        const d: any = await gqlData(
          b.url,
          member('aurora-research'),
          `query($id: ID!) { node(id: $id) { ... on Job { state placement { node gpuIndices } } } }`,
          { id },
        );
        return d.node.state === 'ADMITTED' || d.node.state === 'RUNNING' ? d.node : null;
      },
      10_000,
      100,
    );
    const tookMs = Date.now() - killedAt;
    console.log(`[replicas] leader A killed; job submitted to B admitted ${tookMs} ms later`);
    expect(tookMs).toBeLessThan(10_000);
    expect(admitted.placement).toHaveLength(1);
    expect(await lockHolders()).toEqual([appName.B]);
    expect(await advisoryLocksGranted()).toBe(1);
    // The new leader rebuilt from the database: nothing admitted twice, no GPU shared,
    // the jobs A admitted are still admitted where A put them.
    const rows = await jobRows();
    for (const r of rows) {
      const net = r.admitted - r.preempted;
      if (r.state === 'ADMITTED' || r.state === 'RUNNING') expect(net, `${r.id} (${r.state})`).toBe(1);
      else if (r.state === 'PENDING') expect(net, `${r.id} (${r.state})`).toBe(0);
      else expect([0, 1], `${r.id} (${r.state}): ${net}`).toContain(net); // finished: admitted at most once
    }
    expect(sharedGpus(rows)).toEqual([]);
    const live = rows.filter((r) => r.state === 'ADMITTED' || r.state === 'RUNNING').length;
    expect(live).toBe(30); // 30 admitted − 1 cancelled + 1 new
    // And B's own subscriber hears B's admission too.
    await waitFor(
      'B heard the admission of the job it scheduled',
      async () => heardOnB.get('aurora-research')!.some((e) => e.kind === 'ADMITTED' && e.jobId === id),
      5_000,
    );

    // B now leads: a job submitted to it from here on is admitted promptly too (through the
    // wake-up, not the 30 s resync). Aurora holds 15 of its 16 H100s (15 − 1 cancelled + 1).
    const lockHoldersSeen = await lockHolders();
    const t1 = Date.now();
    const next = await submit(b, 'aurora-research', 'after-takeover');
    let seen: unknown = null;
    await waitFor(
      'a job submitted to the new leader is admitted',
      async () => {
        const d: any = await gqlData(
          b.url,
          member('aurora-research'),
          `query($id: ID!) { node(id: $id) { ... on Job { state pendingReason { code message } } } }`,
          { id: next },
        );
        seen = d.node;
        return d.node.state === 'ADMITTED' || d.node.state === 'RUNNING';
      },
      5_000,
      100,
    ).catch((error) => {
      throw new Error(
        `${String(error)}; the job: ${JSON.stringify(seen)}; lock holders: ${JSON.stringify(lockHoldersSeen)}`,
      );
    });
    console.log(`[replicas] job submitted to the new leader B admitted ${Date.now() - t1} ms later`);
  });

  it('neither replica logged an unexpected error (Redis or otherwise)', () => {
    for (const [name, server] of [
      ['A', a],
      ['B', b],
    ] as const) {
      const problems = server
        .output()
        .split('\n')
        .filter((l) => /unexpected error|Unhandled error|Error:/.test(l));
      expect(problems, `replica ${name}`).toEqual([]);
    }
  });
});
