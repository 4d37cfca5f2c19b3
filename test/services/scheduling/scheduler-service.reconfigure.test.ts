// A configuration change that only alters queue and cohort specs (a quota) reaches the leader's live
// core in place (LeaderSession.reconfigure, config-reload.ts): the same core object, its jobs kept,
// the pending ones evaluated again by the next cycle. Other changes (a new flavor) still rebuild.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Scheduler } from '../../../src/core/scheduling/index.js';
import { Queue } from '../../../src/persistence/cluster/entities.js';
import { Tenant } from '../../../src/persistence/tenancy/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../../helpers/database.js';
import { expectOk, startTestApp, type TestApp } from '../../helpers/harness.js';
import { waitFor } from '../../helpers/process.js';

const enc = (type: string, id: string) => Buffer.from(`${type}:${id}`).toString('base64');
const SET_QUOTA =
  'mutation($q: ID!, $n: Float!, $b: Float) { setQuota(queueId: $q, quota: { flavor: "h100-80g", nominal: $n, borrowingLimit: $b }) { id } }';

describeEachDialect('a quota change on the live core', (dialect) => {
  let t: TestApp;
  let queue: Queue;
  const core = () => (t.app.scheduler as unknown as { core: Scheduler }).core;
  const platform = () => t.token(null, 'PLATFORM_ADMIN');
  const h100 = () =>
    t.app.scheduler
      .queueStatus(queue.name)
      ?.resources.find((r) => r.flavor === 'h100-80g' && r.resource === 'gpu');

  beforeAll(async () => {
    t = await startTestApp({ dialect });
    const em = systemEntityManager(t.app.orm);
    const aurora = await em.findOneOrFail(Tenant, { slug: 'aurora-research' });
    queue = await em.findOneOrFail(Queue, { tenant: aurora.id, name: 'aurora-training' });
  }, 60_000);
  afterAll(async () => t?.close());

  it('is applied in place, and the pending job it makes room for is admitted by the next cycle', async () => {
    const before = core();
    await expectOk(t, platform(), SET_QUOTA, { q: enc('Queue', queue.id), n: 0, b: 0 });
    await waitFor('the core holds nominal 0', async () => h100()?.nominal === 0);
    const submitted = await expectOk(
      t,
      t.token('aurora-research', 'MEMBER'),
      'mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }',
      {
        in: {
          queueId: enc('Queue', queue.id),
          name: 'waits-for-quota',
          podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
          expectedDurationSeconds: 1e6,
        },
      },
    );
    const jobId = Buffer.from(submitted.submitJob.id, 'base64').toString().replace(/^Job:/, '');
    await waitFor('the job waits', async () => t.app.scheduler.explain(jobId)?.reason === 'ExceedsMaxQuota');
    await expectOk(t, platform(), SET_QUOTA, { q: enc('Queue', queue.id), n: 8, b: null });
    await waitFor('the job is admitted', async () => t.app.scheduler.explain(jobId)?.state === 'admitted');
    expect(h100()?.nominal).toBe(8);
    // Both changes were taken by the core that was there before them.
    expect(core()).toBe(before);
  });

  it('a new flavor still rebuilds the core', async () => {
    const before = core();
    await expectOk(t, platform(), 'mutation($in: CreateFlavorInput!) { createFlavor(input: $in) { id } }', {
      in: { name: 'l40s-new', kind: 'GPU', gpuModel: 'L40S', pricePerUnitHour: 1 },
    });
    await waitFor('a new core', async () => core() !== before);
    expect(t.app.scheduler.queueStatus(queue.name)).not.toBeNull();
  });
});
