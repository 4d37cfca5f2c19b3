import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
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
 * Split brain: two real server processes on one PostgreSQL database (Redis between them).
 * In the middle of a burst of submits the leader's advisory-lock connection is killed by
 * PostgreSQL (pg_terminate_backend), so another replica may take the lock while the old
 * leader is still running. Fencing must keep them from both admitting: the old leader
 * demotes itself, every admission is written under one leader epoch at a time, no GPU is
 * shared, no acknowledged job is lost, and the new leader admits what comes after.
 */

const TEST_REDIS_URL = process.env.TEST_REDIS_URL;

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString('utf8').replace(/^Job:/, '');
const TENANTS = ['aurora-research', 'borealis-inference'] as const;
/** Per tenant: within each queue's 16 H100 nominal, so every acknowledged job must end up admitted. */
const BURST_PER_TENANT = 12;

const title = "split brain: the leader's lock connection is killed mid-burst (PostgreSQL, two processes)";
describeNeeding(['postgresql', 'redis'], title, () => {
  const run = randomBytes(4).toString('hex');
  const appName = { A: `fairway-split-a-${run}`, B: `fairway-split-b-${run}` };
  let db: TestDatabase;
  let sql: pg.Client;
  const servers: Record<'A' | 'B', ServerProcess> = {} as never;
  let creds: DemoCredential[];
  const dirs: string[] = [];
  const queueIds = new Map<string, string>();
  /** Acknowledged submits: idempotency key → job id. */
  const acked = new Map<string, string>();
  /** Every GPU-sharing seen by the sampler, with when. */
  const sharingSeen: string[] = [];
  let sampling = true;
  let sampler: Promise<void> = Promise.resolve();

  async function jobRows() {
    const { rows } = await sql.query(`select id, state, admission, idempotency_key from jobs`);
    return rows as {
      id: string;
      state: string;
      idempotency_key: string | null;
      admission: { podSets: { placements: { node: string; gpuIndices?: number[] }[] }[] } | null;
    }[];
  }

  const lockHolder = () => schedulerLockHolders(sql);

  /** Epochs each process says it led with ("leading the scheduler (epoch N)"). */
  function epochsLedBy(server: ServerProcess): number[] {
    return [...server.output().matchAll(/leading the scheduler \(epoch (\d+)\)/g)].map((m) => Number(m[1]));
  }

  async function submit(server: ServerProcess, tenant: string, key: string): Promise<void> {
    const res = await gql(server.url, tokenOf(creds, tenant, 'MEMBER'), SUBMIT, {
      in: {
        queueId: queueIds.get(tenant),
        name: key,
        podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 1e6,
        idempotencyKey: key,
      },
    });
    expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    acked.set(key, rawId(res.data.submitJob.id));
  }

  beforeAll(async () => {
    db = await createTestDatabase('postgresql');
    if (db.database.dialect !== 'postgresql') throw new Error('expected PostgreSQL');
    const url = db.database.url;
    sql = new pg.Client({ connectionString: url, application_name: `fairway-split-observer-${run}` });
    await sql.connect();
    for (const _ of [0, 1]) dirs.push(fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-split-')));
    servers.A = await startServer({
      dataDir: dirs[0]!,
      label: 'replica A',
      env: { DATABASE_URL: url, REDIS_URL: TEST_REDIS_URL, PGAPPNAME: appName.A },
    });
    servers.B = await startServer({
      dataDir: dirs[1]!,
      label: 'replica B',
      env: { DATABASE_URL: url, REDIS_URL: TEST_REDIS_URL, PGAPPNAME: appName.B },
    });
    creds = servers.A.credentials();
    for (const t of TENANTS) {
      const data: any = await gqlData(servers.B.url, tokenOf(creds, t, 'MEMBER'), `{ queues { id } }`);
      queueIds.set(t, data.queues[0].id);
    }
    sampler = (async () => {
      while (sampling) {
        const shared = sharedGpus(await jobRows());
        if (shared.length) sharingSeen.push(`${new Date().toISOString()} ${shared.join('; ')}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    })();
  }, 90_000);

  afterAll(async () => {
    sampling = false;
    await sampler.catch(() => undefined);
    await killAllServers();
    await sql?.end().catch(() => undefined);
    await db?.dispose().catch(() => undefined);
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('after the lock is lost exactly one process admits, no GPU is shared, no acknowledged job is lost', async () => {
    const holders = await lockHolder();
    expect(holders.map((h) => h.app)).toEqual([appName.A]);

    // The burst: both tenants, through both replicas, a few at a time; the lock's
    // connection is terminated once a third of it is acknowledged.
    const keys = TENANTS.flatMap((t) =>
      Array.from({ length: BURST_PER_TENANT }, (_, i) => ({ tenant: t, key: `${run}-${t}-${i}` })),
    );
    keys.sort((x, y) => Number(x.key.split('-').pop()) - Number(y.key.split('-').pop()));
    let next = 0;
    let terminated = 0;
    const killAfter = Math.floor(keys.length / 3);
    await Promise.all(
      Array.from({ length: 4 }, async (_, worker) => {
        while (next < keys.length) {
          const { tenant, key } = keys[next++]!;
          await submit(worker % 2 === 0 ? servers.A : servers.B, tenant, key);
          if (acked.size === killAfter && !terminated) {
            const { rows } = await sql.query(`select pg_terminate_backend($1) as done`, [holders[0]!.pid]);
            terminated = rows.filter((r) => r.done).length;
          }
        }
      }),
    );
    expect(terminated, "the leader's lock backend was terminated").toBe(1);

    // A noticed and stepped down; someone took the lock with a newer epoch.
    await waitFor(
      'A noticed the lost lock and stepped down',
      async () => /stopped leading the scheduler/.test(servers.A.output()),
      10_000,
    );
    const epochBefore = epochsLedBy(servers.A)[0]!;
    expect(epochBefore, 'the epoch A led with before').toBeGreaterThan(0);
    const newLeader = await waitFor(
      'a new epoch is led',
      async () => {
        const [holder] = await lockHolder();
        if (!holder) return null;
        const name = holder.app === appName.A ? 'A' : 'B';
        const epoch = Math.max(0, ...epochsLedBy(servers[name]));
        return epoch > epochBefore ? { name, epoch } : null;
      },
      15_000,
    );

    // Every acknowledged job exists once and is admitted (all fit within quota).
    await waitFor(
      'every acknowledged job is admitted',
      async () => {
        const rows = await jobRows();
        const mine = rows.filter((r) => r.idempotency_key?.startsWith(run));
        return (
          mine.length === acked.size && mine.every((r) => r.state === 'ADMITTED' || r.state === 'RUNNING')
        );
      },
      20_000,
    ).catch(async (error) => {
      const rows = (await jobRows()).filter((r) => r.idempotency_key?.startsWith(run));
      throw new Error(
        `${String(error)}: ${rows.length} rows for ${acked.size} acks, states ${JSON.stringify(rows.map((r) => r.state))}\nA:\n${servers.A.output()}\nB:\n${servers.B.output()}`,
      );
    });
    const rows = await jobRows();
    for (const [key, id] of acked) {
      const found = rows.filter((r) => r.idempotency_key === key);
      expect(
        found.map((r) => r.id),
        key,
      ).toEqual([id]);
    }

    // A job submitted after the takeover is admitted, by the new leader.
    const lateKey = `${run}-after-takeover`;
    await submit(servers[newLeader.name === 'A' ? 'B' : 'A'], 'aurora-research', lateKey);
    await waitFor(
      'the job submitted after the takeover is admitted',
      async () => {
        const { rows: late } = await sql.query(`select state from jobs where id = $1`, [acked.get(lateKey)]);
        return late[0]?.state === 'ADMITTED' || late[0]?.state === 'RUNNING';
      },
      10_000,
    );

    // Exactly one process admits at a time. Each admission's outbox row carries the epoch it
    // was decided under; every epoch was led by exactly one process; and in the order the
    // writes took the epoch row's lock (transaction ids), epochs never go back: nothing was
    // admitted under the old epoch once the new one existed.
    const { rows: admissions } = await sql.query(
      `select payload, xmin::text::bigint as tx from outbox where kind = 'job.admitted' order by xmin::text::bigint, id`,
    );
    expect(admissions.length).toBeGreaterThanOrEqual(acked.size);
    const epochs = admissions.map((r) => r.payload.epoch as number | undefined);
    expect(
      epochs.filter((e) => typeof e !== 'number'),
      'admissions without an epoch',
    ).toEqual([]);
    for (let i = 1; i < epochs.length; i++)
      expect(epochs[i]!, `admission #${i} went back from epoch ${epochs[i - 1]}`).toBeGreaterThanOrEqual(
        epochs[i - 1]!,
      );
    const ledA = new Set(epochsLedBy(servers.A));
    const ledB = new Set(epochsLedBy(servers.B));
    for (const epoch of new Set(epochs as number[]))
      expect(Number(ledA.has(epoch)) + Number(ledB.has(epoch)), `processes that led epoch ${epoch}`).toBe(1);
    const lastEpoch = epochs.at(-1)!;
    expect(lastEpoch).toBeGreaterThan(epochBefore);
    const { rows: stored } = await sql.query(`select epoch from fairway_leader_epoch where id = 1`);
    expect(Number(stored[0].epoch)).toBe(Math.max(...ledA, ...ledB));
    expect((await lockHolder()).map((h) => h.app)).toEqual([appName[newLeader.name as 'A' | 'B']]);

    // No GPU was shared by two live jobs at any sampled moment, nor at the end.
    sampling = false;
    await sampler;
    expect(sharingSeen).toEqual([]);
    expect(sharedGpus(await jobRows())).toEqual([]);
    console.log(
      `[split-brain] A led epoch ${epochBefore}; after its lock backend was terminated ${newLeader.name} leads epoch ${newLeader.epoch}; ${admissions.length} admissions, epochs in write order: ${[...new Set(epochs)].join(' → ')}`,
    );
  }, 90_000);

  it('neither process exited or logged an unexpected error', async () => {
    for (const [name, server] of Object.entries(servers)) {
      expect(
        await Promise.race([
          server.exited.then(() => 'exited'),
          new Promise((r) => setTimeout(() => r('alive'), 100)),
        ]),
        name,
      ).toBe('alive');
      const problems = server
        .output()
        .split('\n')
        .filter(
          (l) =>
            /unexpected error|Unhandled|Error:/.test(l) &&
            !/StaleLeaderError|scheduler write refused/.test(l),
        );
      expect(problems, `replica ${name}`).toEqual([]);
    }
  });
});
