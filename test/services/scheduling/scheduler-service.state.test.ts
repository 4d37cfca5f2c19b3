import { afterAll, describe, expect, it } from 'vitest';
import { Job } from '../../../src/persistence/jobs/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { waitFor } from '../../helpers/process.js';
import { type SchedulerTestApp, startSchedulerApp } from '../../helpers/scheduler-app.js';

/**
 * onStateChange (what position and ETA streams recompute on) fires once at the end of each
 * admission cycle, from the state the cycle left — never between an input and the cycle
 * that handles it, when subscribers would see a half-updated state.
 */
describe('scheduler state notifications', () => {
  let t: SchedulerTestApp;
  afterAll(async () => t?.close());

  it('listeners see only end-of-cycle states, and are called once for a cycle that admitted nothing', async () => {
    t = await startSchedulerApp({ dialect: 'sqlite', scheduler: { debounceMs: 20 } });
    const token = t.token('aurora-research', 'MEMBER');
    const queue = (await t.gql(token, `{ queues { id name } }`)).data.queues[0];
    const queueId = queue.id;
    const ids: string[] = [];
    /**
     * At each notification: the queue's pending and admitted counts, and the state of each
     * job whose id the test knows yet (a cycle can end before the submit's response arrives).
     */
    const seen: { pending: number; admitted: number; jobs: Record<string, string> }[] = [];
    t.app.scheduler.onStateChange(() => {
      const jobs: Record<string, string> = {};
      for (const id of ids) {
        const state = t.app.scheduler.explain(id)?.state;
        if (state) jobs[id] = state;
      }
      const status = t.app.scheduler.queueStatus(queue.name)!;
      seen.push({ pending: status.pendingCount, admitted: status.admittedCount, jobs });
    });
    // One-GPU jobs, well within the queue's quota: each is admitted by the cycle that sees it.
    // (Long runs: the simulated cluster runs 1000× fast, and a finish is a notification too.)
    for (let i = 0; i < 4; i++) {
      const res = await t.gql(token, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
        in: {
          queueId,
          name: `n${i}`,
          podSets: [{ gpusPerPod: 1, flavors: ['h100-80g'] }],
          expectedDurationSeconds: 1e6,
        },
      });
      expect(res.errors).toBeUndefined();
      ids.push(Buffer.from(res.data.submitJob.id, 'base64').toString().replace(/^Job:/, ''));
    }
    const em = () => systemEntityManager(t.app.orm);
    await waitFor('all admitted', async () =>
      (await em().find(Job, { id: { $in: ids } })).every(
        (j) => j.state === 'ADMITTED' || j.state === 'RUNNING',
      ),
    );
    await new Promise((r) => setTimeout(r, 200)); // the follow-up cycles are done
    expect(seen.length).toBeGreaterThan(0);
    const pendingSeen = seen.filter((s) => s.pending > 0 || Object.values(s.jobs).includes('pending'));
    expect(pendingSeen, 'notifications that showed a job before its cycle ran').toEqual([]);
    expect(seen.at(-1)!.admitted, JSON.stringify(seen)).toBe(4);

    // A cycle with nothing to admit still ends with exactly one notification.
    const before = seen.length;
    t.app.scheduler.wake();
    await new Promise((r) => setTimeout(r, 300));
    expect(seen.length - before).toBe(1);
    expect(t.errors).toEqual([]);
  }, 30_000);
});
