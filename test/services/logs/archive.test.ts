// The log archive on both databases: a pod's output kept once however often it is reported (a
// replay, another replica), its last bytes only, and pruned by the leader after the retention.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EntityManager, MikroORM } from '@mikro-orm/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Queue } from '../../../src/persistence/cluster/index.js';
import { Job } from '../../../src/persistence/jobs/index.js';
import { PodLogArchive } from '../../../src/persistence/logs/index.js';
import { migrate, openDatabase } from '../../../src/persistence/orm.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { seedDemo } from '../../../src/server/demo/seed.js';
import { archivePodLogs, logRetentionTask } from '../../../src/services/logs/archive.js';
import { createTestDatabase, describeEachDialect, type TestDatabase } from '../../helpers/database.js';

describeEachDialect('the pod log archive', (dialect) => {
  let db: TestDatabase;
  let orm: MikroORM;
  let dataDir: string;
  let jobId: string;
  const DAY = 86_400_000;
  const T = Date.UTC(2026, 11, 2);

  beforeAll(async () => {
    db = await createTestDatabase(dialect);
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fairway-archive-'));
    orm = await openDatabase({ database: db.database });
    await migrate(orm);
    await seedDemo(orm, dataDir, () => T);
    const em = systemEntityManager(orm);
    const queue = await em.findOneOrFail(Queue, { name: { $like: '%' } }, { populate: ['tenant'] });
    const job = em.create(Job, {
      tenant: queue.tenant,
      queue,
      name: 'archived',
      priorityClass: 'training',
      podSets: [{ name: 'main', count: 1, perPod: { gpu: 1 } }],
      state: 'SUCCEEDED',
      requestHash: 'x'.repeat(64),
      submitTime: T,
    });
    await em.flush();
    jobId = job.id;
  });
  afterAll(async () => {
    await orm?.close(true);
    await db?.dispose();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const event = (admissionAt: number, at: number, n: number) => ({
    type: 'pod-log' as const,
    jobId,
    at,
    admissionAt,
    pod: { podSet: 'main', index: 0 },
    lines: Array.from({ length: n }, (_, i) => ({
      at: at - n + i,
      stream: 'stdout' as const,
      text: `line ${i}`,
      cursor: String(i).padStart(6, '0'),
    })),
    truncated: false,
  });

  it('keeps one copy per pod of a run, its last bytes only, whoever reports it again', async () => {
    await archivePodLogs(orm, [event(T, T + 1000, 100)], 10 * 1024);
    await archivePodLogs(orm, [event(T, T + 2000, 5)], 10 * 1024); // a replay: ignored
    await archivePodLogs(orm, [event(T + 5000, T - 40 * DAY, 1000)], 200); // another run, over the size
    const rows = await systemEntityManager(orm).find(
      PodLogArchive,
      { job: jobId },
      { orderBy: { admissionAt: 'asc' } },
    );
    expect(rows).toHaveLength(2);
    expect(rows[0]!.lines).toHaveLength(100);
    expect(rows[0]!.truncated).toBe(false);
    expect(rows[0]!.tenant.id).toBeTruthy();
    expect(rows[1]!.truncated).toBe(true);
    expect(rows[1]!.bytes).toBeLessThanOrEqual(200);
    expect(rows[1]!.lines.at(-1)!.text).toBe('line 999');
  });

  it('writes the pods that ended together in one statement, and keeps them when one job is gone', async () => {
    const em = systemEntityManager(orm);
    const first = await em.findOneOrFail(Job, { id: jobId }, { populate: ['queue', 'tenant'] });
    const other = em.create(Job, {
      tenant: first.tenant,
      queue: first.queue,
      name: 'archived-too',
      priorityClass: 'training',
      podSets: [{ name: 'main', count: 2, perPod: { gpu: 1 } }],
      state: 'SUCCEEDED',
      requestHash: 'y'.repeat(64),
      submitTime: T,
    });
    await em.flush();
    const pod = (id: string, index: number) => ({
      ...event(T + 9000, T + 9500, 3),
      jobId: id,
      pod: { podSet: 'main', index },
    });
    // Two pods of one job, a pod of a job that does not exist (skipped), and a replay of the first pod.
    await archivePodLogs(
      orm,
      [pod(other.id, 0), pod(other.id, 1), pod('00000000-0000-7000-8000-000000000000', 0), pod(other.id, 0)],
      10 * 1024,
    );
    const rows = await systemEntityManager(orm).find(
      PodLogArchive,
      { job: other.id },
      { orderBy: { podIndex: 'asc' } },
    );
    expect(rows.map((r) => r.podIndex)).toEqual([0, 1]);
    expect(rows.every((r) => r.tenant.id === first.tenant.id && r.lines.length === 3)).toBe(true);
  });

  it('the leader prunes archives whose pod ended before the retention, and only those', async () => {
    const task = logRetentionTask(30);
    await task.run({
      now: T,
      ended: () => false,
      write: (work: (em: EntityManager) => Promise<void>) => systemEntityManager(orm).transactional(work),
    } as never);
    const left = await systemEntityManager(orm).find(PodLogArchive, { job: jobId });
    expect(left.map((r) => Number(r.admissionAt))).toEqual([T]);
  });
});
