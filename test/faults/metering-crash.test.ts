import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/core';
import { afterAll, expect, it } from 'vitest';
import { Job } from '../../src/persistence/jobs/entities.js';
import { UsageHourly, UsageRecord } from '../../src/persistence/metering/entities.js';
import { openDatabase } from '../../src/persistence/orm.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import type { DemoCredential } from '../../src/server/demo/seed.js';
import { createTestDatabase, describeEachDialect, type TestDatabase } from '../helpers/database.js';
import {
  gql,
  gqlData,
  killAllServers,
  type ServerProcess,
  startServer,
  tokenOf,
  waitFor,
} from '../helpers/process.js';

/**
 * The real server, metering running jobs every 250 ms, is killed with SIGKILL between (or
 * during) checkpoints. SQLite: the same server starts again on the same file. PostgreSQL: a
 * second replica, already running, takes the leadership over. Then the jobs are cancelled:
 * each job's ledger rows must tile exactly its run, from the backend's start to the cancel,
 * with no gap (nothing dropped) and no overlap (nothing charged twice).
 */

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString('utf8').replace(/^Job:/, '');
const JOBS = 3;

describeEachDialect('metering across a crash and a failover', (dialect) => {
  let db: TestDatabase;
  let orm: MikroORM | undefined;
  const dirs: string[] = [];

  afterAll(async () => {
    await killAllServers();
    await orm?.close(true);
    await db?.dispose();
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('nothing charged twice, nothing dropped', async () => {
    db = await createTestDatabase(dialect);
    const env = {
      DATABASE_URL: db.database.dialect === 'postgresql' ? db.database.url : `sqlite:${db.database.file}`,
      FAIRWAY_METERING_INTERVAL_MS: '250',
    };
    const dir = () => {
      const d = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-meter-'));
      dirs.push(d);
      return d;
    };
    const leader: ServerProcess = await startServer({
      dataDir: dir(),
      env,
      label: `metering leader (${dialect})`,
    });
    // PostgreSQL: a follower is running before the leader dies, and takes over from it.
    const follower =
      dialect === 'postgresql'
        ? await startServer({ dataDir: dir(), env, label: 'metering follower' })
        : null;
    const creds: DemoCredential[] = leader.credentials();
    const member = tokenOf(creds, 'aurora-research', 'MEMBER');
    const { queues } = await gqlData(leader.url, member, `{ queues { id } }`);
    const ids: string[] = [];
    for (let i = 0; i < JOBS; i++) {
      const res = await gql(leader.url, member, SUBMIT, {
        in: {
          queueId: queues[0].id,
          name: `metered-${i}`,
          podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
          expectedDurationSeconds: 1e6,
        },
      });
      expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
      ids.push(rawId(res.data.submitJob.id));
    }
    orm = await openDatabase({ database: db.database });
    const em = () => systemEntityManager(orm!);
    const rowsPerJob = async () => {
      const rows = await em().find(UsageRecord, { job: { $in: ids } });
      return ids.map((id) => rows.filter((r) => r.job.id === id).length);
    };
    await waitFor(
      'every job running and checkpointed twice',
      async () => (await rowsPerJob()).every((n) => n >= 2),
      20_000,
      50,
    );
    // Somewhere between two checkpoints, or during one.
    await new Promise((r) => setTimeout(r, Math.floor(Math.random() * 250)));
    const before = await rowsPerJob();
    expect((await leader.kill('SIGKILL')).signal).toBe('SIGKILL');

    const survivor =
      follower ?? (await startServer({ dataDir: leader.dataDir, env, label: 'metering restarted' }));
    await waitFor(
      'the survivor leads',
      async () => /leading the scheduler/.test(survivor.output()),
      20_000,
      50,
    );
    await waitFor(
      'checkpoints go on after the crash',
      async () => (await rowsPerJob()).every((n, i) => n >= before[i]! + 3),
      20_000,
      50,
    );
    for (const id of ids) {
      const res = await gql(survivor.url, member, `mutation($id: ID!) { cancelJob(id: $id) { state } }`, {
        id: Buffer.from(`Job:${id}`).toString('base64'),
      });
      expect(res.errors, JSON.stringify(res.errors)).toBeUndefined();
    }

    for (const id of ids) {
      const job = await em().findOneOrFail(Job, { id });
      const rows = await em().find(UsageRecord, { job: id }, { orderBy: { startedAt: 'asc' } });
      expect(job.state).toBe('CANCELLED');
      expect(job.meteredFrom).toBeNull();
      // The job ran once (the survivor adopted the run, did not start it again) …
      expect(job.preemptionCount).toBe(0);
      // … and its rows tile that run exactly: from the backend's start to the cancel.
      expect(rows[0]!.startedAt.getTime()).toBe(job.startedAt!.getTime());
      for (let i = 1; i < rows.length; i++)
        expect(rows[i]!.startedAt.getTime(), `row ${i} of ${id}`).toBe(rows[i - 1]!.endedAt.getTime());
      expect(rows.at(-1)!.endedAt.getTime()).toBe(job.finishedAt!.getTime());
      expect(rows.at(-1)!.closedBy).toBe('cancelled');
      expect(rows.reduce((s, r) => s + r.durationMs, 0)).toBe(
        job.finishedAt!.getTime() - job.startedAt!.getTime(),
      );
      expect(rows.filter((r) => r.firstOfJob)).toHaveLength(1);
    }
    const ledger = await em().find(UsageRecord, {});
    const hourly = await em().find(UsageHourly, {});
    expect(hourly.reduce((s, r) => s + r.gpuSeconds, 0)).toBeCloseTo(
      ledger.reduce((s, r) => s + r.gpuSeconds, 0),
      3,
    );
    expect(hourly.reduce((s, r) => s + r.jobs, 0)).toBe(JOBS);
  }, 90_000);
});
