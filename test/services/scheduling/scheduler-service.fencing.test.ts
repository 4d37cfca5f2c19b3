import { afterAll, expect, it } from 'vitest';
import { migrate, openDatabase } from '../../../src/persistence/orm.js';
import { LeaderEpoch, OutboxEntry } from '../../../src/persistence/scheduling/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { LeaderEpochs, StaleLeaderError } from '../../../src/services/scheduling/leader-epoch.js';
import { createTestDatabase, describeEachDialect, type TestDatabase } from '../../helpers/database.js';
import { waitFor } from '../../helpers/process.js';
import { startSchedulerApp } from '../../helpers/scheduler-app.js';

/**
 * Leader-epoch fencing: each takeover bumps the epoch; a scheduling write made under an
 * older epoch is refused inside its own transaction (nothing of it is stored), and the
 * service that made it steps down instead of going on admitting.
 */

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const rawId = (globalId: string) => Buffer.from(globalId, 'base64').toString('utf8').replace(/^Job:/, '');

describeEachDialect('leader epoch', (dialect) => {
  const cleanup: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
  });

  it('a takeover bumps the epoch; a write under the old epoch is refused and rolled back in the same transaction', async () => {
    const db: TestDatabase = await createTestDatabase(dialect);
    const orm = await openDatabase({ database: db.database });
    cleanup.push(
      () => db.dispose(),
      () => orm.close(true),
    );
    await migrate(orm);
    const epochs = new LeaderEpochs(dialect);
    const em = () => systemEntityManager(orm);
    const first = await epochs.takeOver(em());
    const second = await epochs.takeOver(em());
    expect([first, second]).toEqual([1, 2]);
    expect(await epochs.current(em())).toBe(2);

    // The current leader's write goes through …
    await em().transactional(async (tx) => {
      await epochs.assertCurrent(tx, second);
      tx.create(OutboxEntry, {
        kind: 'job.admitted',
        payload: { jobId: 'current', epoch: second },
        performedAt: null,
      });
    });
    // … the old leader's write, with the row created before the check in the same
    // transaction, is refused and leaves nothing behind.
    const refused = em().transactional(async (tx) => {
      tx.create(OutboxEntry, {
        kind: 'job.admitted',
        payload: { jobId: 'stale', epoch: first },
        performedAt: null,
      });
      await tx.flush();
      await epochs.assertCurrent(tx, first);
    });
    await expect(refused).rejects.toBeInstanceOf(StaleLeaderError);
    const stored = (await em().find(OutboxEntry, {})).map((o) => o.payload.jobId);
    expect(stored).toEqual(['current']);
    expect(await em().count(LeaderEpoch, {})).toBe(1);
  });

  if (dialect === 'postgresql') {
    it("a takeover waits for the old leader's write in flight, and the old leader's next write is refused", async () => {
      const db: TestDatabase = await createTestDatabase(dialect);
      const orm = await openDatabase({ database: db.database });
      cleanup.push(
        () => db.dispose(),
        () => orm.close(true),
      );
      await migrate(orm);
      const epochs = new LeaderEpochs(dialect);
      const em = () => systemEntityManager(orm);
      const old = await epochs.takeOver(em());
      let releaseWrite!: () => void;
      const holding = new Promise<void>((r) => (releaseWrite = r));
      let checked!: () => void;
      const checkedOnce = new Promise<void>((r) => (checked = r));
      const order: string[] = [];
      const write = em().transactional(async (tx) => {
        await epochs.assertCurrent(tx, old);
        checked();
        await holding;
        tx.create(OutboxEntry, {
          kind: 'job.admitted',
          payload: { jobId: 'in-flight', epoch: old },
          performedAt: null,
        });
        await tx.flush();
        order.push('old leader committed');
      });
      await checkedOnce;
      const takeover = epochs.takeOver(em()).then((epoch) => {
        order.push('takeover');
        return epoch;
      });
      await new Promise((r) => setTimeout(r, 300));
      expect(order).toEqual([]); // the takeover waits on the epoch row
      releaseWrite();
      await write;
      const next = await takeover;
      expect(order).toEqual(['old leader committed', 'takeover']);
      expect(next).toBe(old + 1);
      await expect(em().transactional((tx) => epochs.assertCurrent(tx, old))).rejects.toBeInstanceOf(
        StaleLeaderError,
      );
    });
  }

  it("a service whose epoch was taken over refuses its cycle's admissions and steps down; the job is admitted once, under a newer epoch", async () => {
    const t = await startSchedulerApp({ dialect, scheduler: { leaderRetryMs: 300 } });
    cleanup.push(() => t.close());
    expect(t.app.scheduler.isLeader).toBe(true);
    const epochs = new LeaderEpochs(dialect);
    const em = () => systemEntityManager(t.app.orm);
    const mine = await epochs.current(em());
    // Another replica takes over behind this one's back (its lock was lost unnoticed).
    const theirs = await epochs.takeOver(em());
    const token = t.token('aurora-research', 'MEMBER');
    const queues = await t.gql(token, `{ queues { id } }`);
    const res = await t.gql(token, SUBMIT, {
      in: {
        queueId: queues.data.queues[0].id,
        name: 'fenced',
        podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 1e6,
      },
    });
    expect(res.errors).toBeUndefined();
    const jobId = rawId(res.data.submitJob.id);
    // The stale cycle was refused; the service stepped down and, as SQLite's sole leader
    // or the lock's holder, took over again with a newer epoch and admitted the job.
    const admissions = await waitFor(
      'the job is admitted',
      async () => {
        const rows = (await em().find(OutboxEntry, { kind: 'job.admitted' })).filter(
          (o) => o.payload.jobId === jobId,
        );
        return rows.length ? rows : null;
      },
      15_000,
    );
    expect(admissions.map((o) => o.payload.epoch)).toEqual([theirs + 1]);
    expect(theirs).toBe(mine + 1);
    expect(t.app.scheduler.isLeader).toBe(true);
    expect(t.errors).toEqual([]);
  }, 30_000);
});
