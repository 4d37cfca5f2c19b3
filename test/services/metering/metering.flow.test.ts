import { IsolationLevel } from '@mikro-orm/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Job } from '../../../src/persistence/jobs/entities.js';
import { UsageHourly, UsageRecord } from '../../../src/persistence/metering/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { describeEachDialect } from '../../helpers/database.js';
import { startTestApp, type TestApp } from '../../helpers/harness.js';

/**
 * The ledger through the running gateway: the backend's start opens a hold, checkpoints write
 * it while the job runs, a preemption and a cancel close it with their own state change; each
 * job is charged for exactly the time it held GPUs (the test's clock is frozen between steps).
 */

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`;
const MIN = 60_000;
const decodeId = (global: string) => Buffer.from(global, 'base64').toString().split(':')[1]!;

describeEachDialect('metering through the gateway', (dialect) => {
  let t: TestApp;
  let aurora: Record<string, string>;
  let borealis: Record<string, string>;

  beforeAll(async () => {
    t = await startTestApp({ dialect });
    aurora = await t.idsOf('aurora-research');
    borealis = await t.idsOf('borealis-inference');
  });
  afterAll(async () => {
    await t?.close();
  });

  const em = () => systemEntityManager(t.app.orm);
  const rowsOf = (jobId: string) => em().find(UsageRecord, { job: jobId }, { orderBy: { startedAt: 'asc' } });
  const heldMs = async (jobId: string) => (await rowsOf(jobId)).reduce((s, r) => s + r.durationMs, 0);
  async function until(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error('condition not reached in time');
      await new Promise((r) => setTimeout(r, 25));
    }
  }

  it('checkpoints charge running jobs once; a preemption and a cancel close their holds exactly', async () => {
    const borealisMember = t.token('borealis-inference', 'MEMBER');
    const auroraMember = t.token('aurora-research', 'MEMBER');
    // Borealis borrows aurora's idle H100s with more jobs than fit, so a reclaim must preempt.
    const submitted = await Promise.all(
      [1, 2, 3, 4, 5].map((i) =>
        t.gql(borealisMember, SUBMIT, {
          in: {
            queueId: borealis.Queue,
            name: `borrower-${i}`,
            priorityClass: 'experiment',
            podSets: [{ gpusPerPod: 8, flavors: ['h100-80g'] }],
            expectedDurationSeconds: 1e6,
          },
        }),
      ),
    );
    const ids = submitted.map((r) => decodeId(r.body.data!.submitJob.id));
    await until(async () => (await em().count(Job, { id: { $in: ids }, state: 'RUNNING' })) >= 3);
    const running = await em().find(Job, { id: { $in: ids }, state: 'RUNNING' });
    for (const job of running) expect(job.meteredFrom).toBe(job.startedAt!.getTime());
    const start = t.now.value;

    t.now.value += 90 * MIN;
    await t.app.scheduler.checkpointUsage();
    await t.app.scheduler.checkpointUsage(); // nothing more has passed: nothing more is charged
    for (const job of running) {
      expect(await heldMs(job.id)).toBe(90 * MIN);
      expect((await rowsOf(job.id)).every((r) => r.closedBy === 'checkpoint' && r.gpuUnits === 8)).toBe(true);
    }

    t.now.value += 30 * MIN;
    const reclaim = await t.gql(auroraMember, SUBMIT, {
      in: {
        queueId: aurora.Queue,
        name: 'reclaimer',
        priorityClass: 'training',
        podSets: [{ gpusPerPod: 8, flavors: ['h100-80g'] }],
        expectedDurationSeconds: 1e6,
      },
    });
    expect(reclaim.body.errors).toBeUndefined();
    await until(async () => (await em().count(Job, { id: { $in: ids }, preemptionCount: { $gt: 0 } })) > 0);
    const victim = (await em().find(Job, { id: { $in: ids }, preemptionCount: { $gt: 0 } }))[0]!;
    const victimRows = (await rowsOf(victim.id)).filter((r) => r.startedAt.getTime() < start + 120 * MIN);
    expect(victimRows.reduce((s, r) => s + r.durationMs, 0)).toBe(120 * MIN);
    expect(victimRows.at(-1)!.closedBy).toBe('preempted');

    const survivor = running.find((j) => j.id !== victim.id)!;
    t.now.value += 10 * MIN;
    const cancel = await t.gql(borealisMember, `mutation($id: ID!) { cancelJob(id: $id) { state } }`, {
      id: Buffer.from(`Job:${survivor.id}`).toString('base64'),
    });
    expect(cancel.body.errors).toBeUndefined();
    expect(await heldMs(survivor.id)).toBe(130 * MIN);
    expect((await rowsOf(survivor.id)).at(-1)!.closedBy).toBe('cancelled');
    expect((await em().findOneOrFail(Job, { id: survivor.id })).meteredFrom).toBeNull();

    // The rollup sums the ledger; each job counts once. Both read from one snapshot: the leader may
    // commit a checkpoint (ledger rows and their rollup together) between two separate reads.
    const [ledger, hourly] = await em().transactional(
      async (tx) => [await tx.find(UsageRecord, {}), await tx.find(UsageHourly, {})] as const,
      { isolationLevel: IsolationLevel.REPEATABLE_READ },
    );
    const sum = (xs: { gpuSeconds: number; cost: number }[]) => [
      xs.reduce((s, r) => s + r.gpuSeconds, 0),
      xs.reduce((s, r) => s + r.cost, 0),
    ];
    expect(sum(hourly)[0]).toBeCloseTo(sum(ledger)[0]!, 3);
    expect(sum(hourly)[1]).toBeCloseTo(sum(ledger)[1]!, 6);
    expect(hourly.reduce((s, r) => s + r.jobs, 0)).toBe(new Set(ledger.map((r) => r.job.id)).size);
    // Priced from the price book: 8 H100s at the demo's 2.49 per GPU-hour, no class multiplier (the demo
    // sets none), for exactly the time each held them, in the cluster's declared time (the harness runs the
    // simulated cluster at FAIRWAY_SIM_TIME_SCALE 1000: a second held is charged as 1000).
    const scale = 1000;
    const costOf = async (jobId: string) => (await rowsOf(jobId)).reduce((s, r) => s + r.cost, 0);
    expect(await costOf(survivor.id)).toBeCloseTo(8 * (130 / 60) * scale * 2.49, 6);
    expect(victimRows.reduce((s, r) => s + r.cost, 0)).toBeCloseTo(8 * (120 / 60) * scale * 2.49, 6);
    for (const r of await rowsOf(survivor.id))
      expect(r.gpuSeconds).toBeCloseTo((8 * r.durationMs * scale) / 1000, 6);
  });
});
