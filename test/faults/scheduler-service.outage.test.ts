import pg from 'pg';
import { afterAll, expect, it } from 'vitest';
import { Job } from '../../src/persistence/jobs/entities.js';
import { OutboxEntry } from '../../src/persistence/scheduling/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import { describeNeeding } from '../helpers/database.js';
import { waitFor } from '../helpers/process.js';
import { type SchedulerTestApp, startSchedulerApp } from '../helpers/scheduler-app.js';

/**
 * PostgreSQL refusing every connection for a while (all sessions terminated, new ones not
 * allowed): the scheduler service must not let a rejection escape (the process would exit),
 * must not admit while it cannot store, and must take up scheduling again by itself.
 */

const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL;
const title = 'the scheduler service through a PostgreSQL outage';

describeNeeding(['postgresql'], title, () => {
  let t: SchedulerTestApp;
  let admin: pg.Client;
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown) => unhandled.push(reason);

  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    await t?.close().catch(() => undefined);
    await admin?.end().catch(() => undefined);
  });

  it('pauses while the database refuses connections, throws nothing unhandled, and resumes by itself', async () => {
    process.on('unhandledRejection', onUnhandled);
    // Short intervals so the periodic work (resync, campaign) runs many times during the outage.
    t = await startSchedulerApp({
      dialect: 'postgresql',
      scheduler: { resyncIntervalMs: 200, leaderRetryMs: 200, debounceMs: 5 },
    });
    expect(t.app.scheduler.isLeader).toBe(true);
    const name = new URL((t.db.database as { url: string }).url).pathname.slice(1);
    admin = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await admin.connect();
    const token = t.token('aurora-research', 'MEMBER');
    const queueId = (await t.gql(token, `{ queues { id } }`)).data.queues[0].id;
    const submit = async (jobName: string) => {
      const res = await t.gql(token, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
        in: {
          queueId,
          name: jobName,
          podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
          expectedDurationSeconds: 1e6,
        },
      });
      expect(res.errors).toBeUndefined();
      return Buffer.from(res.data.submitJob.id, 'base64').toString().replace(/^Job:/, '');
    };
    const em = () => systemEntityManager(t.app.orm);
    const admittedCount = async () => (await em().find(OutboxEntry, { kind: 'job.admitted' })).length;
    const before = await submit('before');
    await waitFor('the first job is admitted', async () =>
      ['ADMITTED', 'RUNNING'].includes((await em().findOneOrFail(Job, { id: before })).state),
    );

    // The outage: every session of the database terminated, new ones refused, for 6 s.
    await admin.query(`alter database "${name}" with allow_connections false`);
    await admin.query(
      `select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> pg_backend_pid()`,
      [name],
    );
    await new Promise((r) => setTimeout(r, 1500));
    expect(t.app.scheduler.isLeader, 'the leader stepped down with its lock').toBe(false);
    await new Promise((r) => setTimeout(r, 4500));
    await admin.query(`alter database "${name}" with allow_connections true`);

    // Back: the service leads again by itself and admits a job submitted now.
    await waitFor('the service leads again', async () => t.app.scheduler.isLeader, 20_000);
    const after = await submit('after');
    await waitFor(
      'a job submitted after the outage is admitted',
      async () => ['ADMITTED', 'RUNNING'].includes((await em().findOneOrFail(Job, { id: after })).state),
      20_000,
    );
    expect(await admittedCount()).toBe(2);
    expect(unhandled.map(String)).toEqual([]);

    // Again, but the lock's own connection survives (it holds the lock and answers its
    // heartbeat): the leader stays leader, its database work fails or waits, and it goes
    // on scheduling when the database answers — without a restart and without a takeover.
    const [lock] = (
      await admin.query(
        `select l.pid from pg_locks l join pg_database d on d.oid = l.database where l.locktype = 'advisory' and l.granted and d.datname = $1`,
        [name],
      )
    ).rows;
    expect(lock, 'the leader holds the advisory lock').toBeTruthy();
    const epochBefore = await t.app.orm.em
      .fork()
      .getConnection()
      .execute(`select epoch from fairway_leader_epoch`);
    await admin.query(`alter database "${name}" with allow_connections false`);
    await admin.query(
      `select pg_terminate_backend(pid) from pg_stat_activity where datname = $1 and pid <> $2`,
      [name, lock.pid],
    );
    const leaderDuring: boolean[] = [];
    for (let i = 0; i < 25; i++) {
      leaderDuring.push(t.app.scheduler.isLeader);
      await new Promise((r) => setTimeout(r, 200));
    }
    await admin.query(`alter database "${name}" with allow_connections true`);
    expect(leaderDuring.every(Boolean), 'still the leader while only the pool was cut').toBe(true);
    const third = await submit('after the second outage');
    await waitFor(
      'a job submitted after the second outage is admitted',
      async () => ['ADMITTED', 'RUNNING'].includes((await em().findOneOrFail(Job, { id: third })).state),
      20_000,
    );
    const epochAfter = await t.app.orm.em
      .fork()
      .getConnection()
      .execute(`select epoch from fairway_leader_epoch`);
    expect(epochAfter).toEqual(epochBefore);
    expect(await admittedCount()).toBe(3);
    expect(unhandled.map(String)).toEqual([]);
  }, 90_000);
});
