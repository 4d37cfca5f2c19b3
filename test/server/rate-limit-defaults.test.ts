import { afterAll, beforeAll, expect, it } from 'vitest';
import { load } from '../../src/config/index.js';
import { Queue } from '../../src/persistence/cluster/entities.js';
import { scopedEntityManager } from '../../src/persistence/tenant-filter.js';
import { startTestApp, type TestApp } from '../helpers/harness.js';
import { TEST_PROCESS_PREFIX } from '../helpers/rate-limits.js';

/**
 * The production budgets (not the test suite's larger ones): one token submits a sweep one by one at a
 * useful rate, and a batch stays the cheap path. The old defaults (50 points/s, burst 200) refused the
 * 67th submit of a quick loop.
 */
let t: TestApp;
let queueId: string;
beforeAll(async () => {
  t = await startTestApp({
    rateLimits: { ...load({}).rateLimits, keyPrefix: `${TEST_PROCESS_PREFIX}:defaults` },
  });
  const queue = await scopedEntityManager(t.app.orm, { all: true }).findOneOrFail(Queue, {
    name: 'aurora-training',
  });
  queueId = Buffer.from(`Queue:${queue.id}`).toString('base64');
}, 60_000);
afterAll(async () => {
  await t?.close();
});

const job = (i: number) => ({
  queueId,
  name: `sweep-${i}`,
  podSets: [{ gpusPerPod: 1, flavors: ['a100-1g.10gb'] }],
  expectedDurationSeconds: 600,
});

it('one token submits 200 jobs one by one without a refusal; another of the tenant then 1,000 in one call', async () => {
  const token = t.token('aurora-research', 'MEMBER');
  const refused: string[] = [];
  for (let i = 0; i < 200; i++) {
    const res = await t.gql(token, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
      in: job(i),
    });
    const code = (res.body.errors?.[0]?.extensions as { code?: string } | undefined)?.code;
    if (code) refused.push(`${i}: ${code}`);
  }
  expect(refused).toEqual([]);
  // A window of the tenant's budget holds both: the 200 submits (600 points) and a batch of 1,000 (103).
  const batch = await t.gql(
    t.token('aurora-research', 'TENANT_ADMIN'),
    `mutation($in: [SubmitJobInput!]!) { submitJobs(jobs: $in) { id } }`,
    {
      in: Array.from({ length: 1000 }, (_, i) => job(1000 + i)),
    },
  );
  expect(batch.body.errors).toBeUndefined();
  expect((batch.body.data as { submitJobs: unknown[] }).submitJobs).toHaveLength(1000);
}, 120_000);
