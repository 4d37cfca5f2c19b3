import type { EntityManager } from '@mikro-orm/core';
import { afterAll, expect, it } from 'vitest';
import { allBound, insertRows, runBound, tableOf } from '../../src/persistence/bound-sql.js';
import { Queue } from '../../src/persistence/cluster/entities.js';
import { uuidv7 } from '../../src/persistence/ids.js';
import { Job, JobEvent } from '../../src/persistence/jobs/entities.js';
import { UsageRecord } from '../../src/persistence/metering/entities.js';
import { migrate, openDatabase } from '../../src/persistence/orm.js';
import { OutboxEntry } from '../../src/persistence/scheduling/entities.js';
import { Tenant } from '../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../src/persistence/tenant-filter.js';
import type { Metering } from '../../src/services/metering/charging.js';
import { type FencedWriter, writeFenced } from '../../src/services/scheduling/cycle-writer.js';
import { LeaderEpochs, StaleLeaderError } from '../../src/services/scheduling/leader-epoch.js';
import { createTestDatabase, describeEachDialect } from '../helpers/database.js';

/**
 * The leader's per-job statements sent with bound parameters (src/persistence/bound-sql.ts):
 * they run inside the fenced transaction (a rollback or a stale epoch undoes them), and they
 * store exactly what the ORM stores (JSON, dates, bigints) on each dialect.
 */
describeEachDialect('bound SQL', (dialect) => {
  const cleanup: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
  });

  async function setup() {
    const db = await createTestDatabase(dialect);
    const orm = await openDatabase({ database: db.database });
    cleanup.push(
      () => db.dispose(),
      () => orm.close(true),
    );
    await migrate(orm);
    const em = () => systemEntityManager(orm);
    const seed = em();
    const tenant = seed.create(Tenant, { slug: 'bound', name: 'Bound' } as never);
    const queue = seed.create(Queue, {
      name: 'q',
      tenant,
      quotas: {},
      preemption: {},
      timeWindows: [],
    } as never);
    const jobs = [0, 1, 2].map((i) =>
      seed.create(Job, {
        tenant,
        queue,
        name: `j${i}`,
        priorityClass: 'default',
        podSets: [{ gpusPerPod: 1 }],
        requestHash: 'h',
        submitTime: 1,
      } as never),
    );
    await seed.flush();
    const epochs = new LeaderEpochs(dialect);
    const epoch = await epochs.takeOver(em());
    const writer = (e: number): FencedWriter => ({
      em: em(),
      dialect,
      epochs,
      epoch: e,
      metering: {} as Metering,
    });
    return { orm, em, tenant, jobs: jobs.map((j) => j.id), epochs, epoch, writer };
  }

  const admit = (em: EntityManager, id: string, admission: unknown, at: Date) => {
    const j = tableOf(em, 'Job');
    return runBound(
      em,
      `update ${j.table} set ${j.column('state')} = ?, ${j.column('admission')} = ?, ${j.column('admittedAt')} = ?, ${j.column('meteredFrom')} = ?, ${j.column('updatedAt')} = ? where ${j.column('id')} = ? and ${j.column('state')} = ?`,
      [
        'ADMITTED',
        j.value('admission', admission),
        j.value('admittedAt', at),
        j.value('meteredFrom', at.getTime()),
        j.value('updatedAt', at),
        id,
        'PENDING',
      ],
    );
  };

  it('runs inside writeFenced: a failure after it, or a stale epoch, leaves nothing behind', async () => {
    const { em, jobs, epochs, epoch, writer } = await setup();
    const at = new Date(1_700_000_000_123);
    const failing = writeFenced(writer(epoch), async (tx) => {
      expect(await admit(tx, jobs[0]!, { at: 1 }, at)).toBe(1);
      await insertRows(tx, 'OutboxEntry', [
        { id: uuidv7(), kind: 'job.admitted', payload: { jobId: jobs[0] }, createdAt: at, performedAt: null },
      ]);
      // Seen by the transaction itself …
      const [row] = await allBound<{ state: string }>(tx, `select state from jobs where id = ?`, [jobs[0]]);
      expect(row!.state).toBe('ADMITTED');
      throw new Error('boom');
    });
    await expect(failing).rejects.toThrow('boom');
    // … and undone by its rollback.
    expect((await em().findOneOrFail(Job, jobs[0]!)).state).toBe('PENDING');
    expect(await em().count(OutboxEntry, {})).toBe(0);

    const newer = await epochs.takeOver(em());
    const stale = writeFenced(writer(epoch), async (tx) => {
      await admit(tx, jobs[0]!, { at: 1 }, at);
    });
    await expect(stale).rejects.toBeInstanceOf(StaleLeaderError);
    expect((await em().findOneOrFail(Job, jobs[0]!)).state).toBe('PENDING');

    await writeFenced(writer(newer), async (tx) => {
      expect(await admit(tx, jobs[0]!, { at: 1 }, at)).toBe(1);
      // The state guard: already admitted, so the second UPDATE changes nothing.
      expect(await admit(tx, jobs[0]!, { at: 2 }, at)).toBe(0);
    });
    expect((await em().findOneOrFail(Job, jobs[0]!)).admission).toEqual({ at: 1 });
  });

  it('stores what the ORM stores: JSON, dates, bigints; multi-row inserts in fixed-size chunks', async () => {
    const { em, tenant, jobs } = await setup();
    const at = new Date(1_700_000_000_123);
    const admission = {
      at: 5,
      mode: 'Fit',
      podSets: [{ name: 'main', flavor: 'a100', nodes: ['n1'] }],
      borrowed: false,
    };
    await em().nativeUpdate(
      Job,
      { id: jobs[1]!, state: 'PENDING' },
      {
        state: 'ADMITTED',
        admission: admission as never,
        admittedAt: at,
        meteredFrom: at.getTime(),
        updatedAt: at,
      },
    );
    await em().transactional((tx) => admit(tx, jobs[2]!, admission, at));
    const columns = 'state, admission, admitted_at, metered_from, updated_at';
    const [byOrm] = await allBound<Record<string, unknown>>(
      em(),
      `select ${columns} from jobs where id = ?`,
      [jobs[1]],
    );
    const [bound] = await allBound<Record<string, unknown>>(
      em(),
      `select ${columns} from jobs where id = ?`,
      [jobs[2]],
    );
    expect(bound).toEqual(byOrm);
    const [orm1, bound1] = await Promise.all([
      em().findOneOrFail(Job, jobs[1]!),
      em().findOneOrFail(Job, jobs[2]!),
    ]);
    for (const job of [orm1, bound1]) {
      expect(job.admission).toEqual(admission);
      expect(job.admittedAt).toEqual(at);
      expect(job.meteredFrom).toBe(at.getTime());
    }

    // 63 events: chunks of 50, 10, 1, 1, 1; then one by the ORM to compare with.
    const event = (i: number) => ({
      id: uuidv7(),
      job: jobs[0]!,
      tenant: tenant.id,
      type: 'ADMITTED',
      reason: 'Fit',
      message: `m${i}`,
      data: { placements: [i] },
      at,
    });
    await em().transactional((tx) =>
      insertRows(
        tx,
        'JobEvent',
        Array.from({ length: 63 }, (_, i) => event(i)),
      ),
    );
    const ormEvent = event(99);
    await em().insertMany(JobEvent, [ormEvent as never]);
    const rows = await allBound<Record<string, unknown>>(
      em(),
      `select job_id, tenant_id, type, reason, message, data, at from job_events order by id`,
      [],
    );
    expect(rows).toHaveLength(64);
    expect(rows.map((r) => r.message)).toEqual([...Array.from({ length: 63 }, (_, i) => `m${i}`), 'm99']);
    const strip = (r: Record<string, unknown>) => ({ ...r, message: null, data: null });
    expect(strip(rows[0]!)).toEqual(strip(rows[63]!));
    expect(typeof rows[0]!.data).toBe(typeof rows[63]!.data);
    const read = await em().find(JobEvent, { message: 'm62' });
    expect(read[0]!.data).toEqual({ placements: [62] });
    expect(read[0]!.at).toEqual(at);

    // A ledger row (booleans, bigints, doubles, nulls): the same columns as the ORM's insert.
    const record = (startedAt: Date) => ({
      id: uuidv7(),
      job: jobs[0]!,
      tenant: tenant.id,
      projectId: null,
      queueId: 'q',
      userId: null,
      priorityClass: 'default',
      flavor: 'a100',
      startedAt,
      endedAt: new Date(startedAt.getTime() + 1500),
      durationMs: 1500,
      gpuUnits: 1,
      gpuSeconds: 1.5,
      cpuSeconds: 0.25,
      memoryGibSeconds: 3,
      usedGpuSeconds: null,
      unitPricePerHour: 2.5,
      cost: 0.001,
      closedBy: 'succeeded',
      firstOfJob: true,
    });
    await em().insertMany(UsageRecord, [record(at) as never]);
    await em().transactional((tx) =>
      insertRows(tx, 'UsageRecord', [record(new Date(at.getTime() + 10_000))]),
    );
    const ledger = await allBound<Record<string, unknown>>(
      em(),
      `select * from usage_records order by started_at`,
      [],
    );
    const same = (r: Record<string, unknown>) => ({
      ...r,
      id: null,
      started_at: null,
      ended_at: typeof r.ended_at,
    });
    expect(ledger).toHaveLength(2);
    expect(same(ledger[1]!)).toEqual(same(ledger[0]!));
    const records = await em().find(UsageRecord, {}, { orderBy: { startedAt: 'asc' } });
    expect(
      records.map((r) => [
        r.firstOfJob,
        r.durationMs,
        r.usedGpuSeconds,
        r.endedAt.getTime() - r.startedAt.getTime(),
      ]),
    ).toEqual([
      [true, 1500, null, 1500],
      [true, 1500, null, 1500],
    ]);
  });
});
