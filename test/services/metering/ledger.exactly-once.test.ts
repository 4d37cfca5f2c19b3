import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/core';
import fc from 'fast-check';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Queue } from '../../../src/persistence/cluster/entities.js';
import { Job } from '../../../src/persistence/jobs/entities.js';
import { UsageHourly, UsageRecord } from '../../../src/persistence/metering/entities.js';
import { migrate, openDatabase } from '../../../src/persistence/orm.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { seedDemo } from '../../../src/server/demo/seed.js';
import { Metering } from '../../../src/services/metering/charging.js';
import {
  createTestDatabase,
  type Dialect,
  describeEachDialect,
  type TestDatabase,
} from '../../helpers/database.js';

/**
 * The ledger against a real database, driven by random sequences of what happens to a job:
 * start, checkpoint, preemption, restart, finish, cancel, and transactions that die after
 * charging (a crash or a failover in the middle of a write). Whatever the sequence, the
 * ledger holds exactly the time the job held GPUs, once, and the rollup sums the ledger.
 */

type Op = {
  kind: 'start' | 'checkpoint' | 'preempt' | 'finish' | 'cancel';
  advanceMs: number;
  crash: boolean;
};

const op: fc.Arbitrary<Op> = fc.record({
  kind: fc.constantFrom('start', 'checkpoint', 'checkpoint', 'preempt', 'finish', 'cancel'),
  advanceMs: fc.integer({ min: 0, max: 3 * 3_600_000 }),
  crash: fc.boolean(),
});

class Crash extends Error {}

describeEachDialect('ledger: exactly once over random holds, crashes included', (dialect: Dialect) => {
  let db: TestDatabase;
  let orm: MikroORM;
  let dataDir: string;
  let template: Job;
  const metering = new Metering({ timeScale: 1, currency: 'USD', dialect });

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-ledger-'));
    orm = await openDatabase({ database: db.database });
    await migrate(orm);
    await seedDemo(orm, dataDir, () => Date.UTC(2026, 11, 1));
    const em = systemEntityManager(orm);
    const queue = await em.findOneOrFail(
      Queue,
      { name: { $like: '%' } },
      { orderBy: { name: 'asc' }, populate: ['tenant'] },
    );
    template = em.create(Job, {
      tenant: queue.tenant,
      queue,
      name: 'ledger property',
      priorityClass: 'training',
      podSets: [{ name: 'main', count: 2, perPod: { gpu: 1, cpu: 4000, memory: 16384 } }],
      state: 'PENDING',
      requestHash: 'x'.repeat(64),
      submitTime: Date.UTC(2026, 11, 1),
    });
    await em.flush();
  });

  afterAll(async () => {
    await orm?.close(true);
    await db?.dispose();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('the ledger holds each held millisecond once; a dead transaction charges nothing', async () => {
    const flavor = (await systemEntityManager(orm).findOneOrFail(Queue, { id: template.queue.id })).quotas;
    const flavorName = Object.keys(flavor)[0]!;
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
        const jobId = template.id;
        const reset = systemEntityManager(orm);
        await reset.nativeDelete(UsageRecord, { job: jobId });
        await reset.nativeDelete(UsageHourly, {});
        await reset.nativeUpdate(
          Job,
          { id: jobId },
          { state: 'PENDING', meteredFrom: null, startedAt: null, admission: null, preemptionCount: 0 },
        );
        let now = Date.UTC(2026, 11, 1, 8, 17);
        let heldMs = 0;
        let runningSince: number | null = null;
        for (const step of ops) {
          now += step.advanceMs;
          const at = now;
          const apply = async () =>
            systemEntityManager(orm).transactional(async (em) => {
              const job = await em.findOneOrFail(
                Job,
                { id: jobId },
                { populate: ['queue'], ...metering.jobLock },
              );
              if (step.kind === 'start') {
                if (job.state === 'RUNNING') return false;
                job.state = 'RUNNING';
                job.startedAt = new Date(at);
                job.admission = {
                  jobId,
                  queue: job.queue.name,
                  at,
                  borrowed: false,
                  mode: 'fit',
                  podSets: [
                    { name: 'main', flavor: flavorName, count: 2, placements: [{ node: 'n', pods: 2 }] },
                  ],
                };
                job.meteredFrom = at;
              } else {
                if (job.state !== 'RUNNING') return false;
                const closedBy =
                  step.kind === 'checkpoint'
                    ? 'checkpoint'
                    : step.kind === 'preempt'
                      ? 'preempted'
                      : step.kind === 'finish'
                        ? 'succeeded'
                        : 'cancelled';
                await metering.charge(em, [job], at, closedBy);
                if (step.kind === 'preempt') {
                  job.state = 'PENDING';
                  job.preemptionCount += 1;
                } else if (step.kind !== 'checkpoint') job.state = 'PENDING'; // ends the hold; the next start is a new run
              }
              await em.flush();
              if (step.crash) throw new Crash('died before commit');
              return true;
            });
          let committed = false;
          try {
            committed = await apply();
          } catch (error) {
            if (!(error instanceof Crash)) throw error;
            // After the crash the same step is done again (a retried report, the next leader).
            step.crash = false;
            committed = await apply();
          }
          if (!committed) continue;
          if (step.kind === 'start') runningSince = at;
          else if (step.kind !== 'checkpoint' && runningSince !== null) {
            heldMs += at - runningSince;
            runningSince = null;
          }
        }
        const em = systemEntityManager(orm);
        const job = await em.findOneOrFail(Job, { id: jobId });
        // Whatever is still open is charged by one more checkpoint, as the leader would.
        if (runningSince !== null) {
          await em.transactional(async (tx) => {
            const open = await tx.findOneOrFail(Job, { id: jobId }, { populate: ['queue'] });
            await metering.charge(tx, [open], now, 'checkpoint');
          });
          heldMs += now - runningSince;
        }
        const rows = await systemEntityManager(orm).find(
          UsageRecord,
          { job: jobId },
          { orderBy: { startedAt: 'asc' } },
        );
        expect(rows.reduce((s, r) => s + r.durationMs, 0)).toBe(heldMs);
        for (let i = 1; i < rows.length; i++)
          expect(rows[i]!.startedAt.getTime()).toBeGreaterThanOrEqual(rows[i - 1]!.endedAt.getTime());
        expect(rows.filter((r) => r.firstOfJob).length).toBe(rows.length ? 1 : 0);
        const hourly = await systemEntityManager(orm).find(UsageHourly, {});
        const sum = (xs: { gpuSeconds: number }[]) => xs.reduce((s, r) => s + r.gpuSeconds, 0);
        expect(sum(hourly)).toBeCloseTo(sum(rows), 6);
        expect(sum(rows)).toBeCloseTo((heldMs / 1000) * 2, 6);
        expect(hourly.reduce((s, r) => s + r.jobs, 0)).toBe(rows.length ? 1 : 0);
        void job;
      }),
      {
        numRuns: dialect === 'sqlite' ? 60 : 25,
        // A run preempted at the instant it started charges nothing; the next run's charge is the first.
        examples: [
          [
            [
              { kind: 'start', advanceMs: 0, crash: false },
              { kind: 'preempt', advanceMs: 0, crash: false },
              { kind: 'start', advanceMs: 0, crash: false },
              { kind: 'start', advanceMs: 1, crash: false },
            ],
          ],
        ],
      },
    );
  }, 120_000);
});
