// live-jobs.ts: the live jobs a core is rebuilt with, read as plain rows in pages, are exactly the
// specs the entities gave, in the same order; and a rebuild's work gives the event loop its turns.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Queue } from '../../../src/persistence/cluster/entities.js';
import { Job } from '../../../src/persistence/jobs/entities.js';
import { Tenant } from '../../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { inChunks, readLiveJobs } from '../../../src/services/scheduling/live-jobs.js';
import { jobSpec } from '../../../src/services/scheduling/specs.js';
import { describeEachDialect } from '../../helpers/database.js';
import { expectOk, startTestApp, type TestApp } from '../../helpers/harness.js';

const enc = (type: string, id: string) => Buffer.from(`${type}:${id}`).toString('base64');

describeEachDialect('live jobs as plain rows', (dialect) => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ dialect });
    const em = systemEntityManager(t.app.orm);
    const aurora = await em.findOneOrFail(Tenant, { slug: 'aurora-research' });
    const queue = await em.findOneOrFail(Queue, { tenant: aurora.id, name: 'aurora-training' });
    for (let i = 0; i < 12; i++)
      await expectOk(
        t,
        t.token('aurora-research', 'MEMBER'),
        'mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }',
        {
          in: {
            queueId: enc('Queue', queue.id),
            name: `row-${i}`,
            podSets: [{ gpusPerPod: 1 + (i % 3), flavors: ['h100-80g'] }],
            expectedDurationSeconds: 1e6,
            ...(i % 4 === 0 ? { checkpoint: { intervalSeconds: 600 } } : {}),
          },
        },
      );
  }, 60_000);
  afterAll(async () => t?.close());

  it('pages give the specs, states and admissions the entities give, in (submit time, id) order', async () => {
    const fresh = () => systemEntityManager(t.app.orm).fork({ clear: true });
    const names = new Map((await fresh().find(Queue, {})).map((q) => [q.id, q.name]));
    const entities = async () => {
      const jobs = await fresh().find(
        Job,
        { state: { $in: ['PENDING', 'ADMITTED', 'RUNNING'] } },
        { orderBy: { submitTime: 'asc', id: 'asc' }, populate: ['queue'] },
      );
      return jobs.map((j) => ({
        id: j.id,
        state: j.state,
        spec: jobSpec(j, j.queue.name, 60),
        admission: j.admission ?? null,
      }));
    };
    // The leader admits the jobs meanwhile: compare at a moment when nothing changed around the read.
    for (let attempt = 0; ; attempt++) {
      const before = await entities();
      const rows = await readLiveJobs(fresh(), names, 60, { pageSize: 5 });
      const pending = await readLiveJobs(fresh(), names, 60, { pageSize: 5, pendingOnly: true });
      const after = await entities();
      if (JSON.stringify(before) !== JSON.stringify(after) && attempt < 50) {
        await new Promise((r) => setTimeout(r, 50));
        continue;
      }
      expect(before.length).toBeGreaterThanOrEqual(12);
      expect(rows.map((r) => ({ id: r.id, state: r.state, spec: r.spec, admission: r.admission }))).toEqual(
        before,
      );
      expect(pending.map((r) => r.id)).toEqual(before.filter((j) => j.state === 'PENDING').map((j) => j.id));
      return;
    }
  });
});

it('inChunks gives the event loop a turn between chunks', async () => {
  let turned = false;
  setImmediate(() => {
    turned = true;
  });
  const seen: boolean[] = [];
  await inChunks([1, 2, 3, 4, 5, 6, 7], () => seen.push(turned), 3);
  expect(seen).toEqual([false, false, false, true, true, true, true]);
});
