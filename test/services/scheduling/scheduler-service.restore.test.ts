import { afterAll, describe, expect, it } from 'vitest';
import type { Admission, JobSpec, RestoredAdmission } from '../../../src/core/scheduling/types.js';
import { Job, JobEvent } from '../../../src/persistence/jobs/entities.js';
import { OutboxEntry } from '../../../src/persistence/scheduling/entities.js';
import { systemEntityManager } from '../../../src/persistence/tenant-filter.js';
import { findDoubleBookings } from '../../../src/services/scheduling/restore-check.js';
import { describeEachDialect } from '../../helpers/database.js';
import { waitFor } from '../../helpers/process.js';
import { type SchedulerTestApp, startSchedulerApp } from '../../helpers/scheduler-app.js';

/**
 * The restore check: when the core is loaded from the database, two stored admissions on
 * the same GPU (beyond its capacity) are never both loaded. The earliest keeps it; the later
 * one goes back to pending in the database, its run is suspended, and the error is reported.
 */

const flavors = [
  { name: 'h100', kind: 'gpu' as const },
  { name: 'mig', kind: 'mig' as const, slicesPerGpu: 7 },
];

function stored(
  id: string,
  at: number,
  flavor: string,
  perPodGpu: number,
  placements: { node: string; pods: number; gpuIndices: number[] }[],
): RestoredAdmission {
  const job: JobSpec = {
    id,
    tenant: 't',
    queue: 'q',
    priorityClass: 'training',
    submitTime: 0,
    podSets: [
      { name: 'main', count: placements.reduce((n, p) => n + p.pods, 0), perPod: { gpu: perPodGpu } },
    ],
  };
  const admission: Admission = {
    jobId: id,
    queue: 'q',
    at,
    borrowed: false,
    mode: 'fit',
    podSets: [{ name: 'main', flavor, count: job.podSets[0]!.count, placements }],
  };
  return { job, admission };
}

describe('findDoubleBookings', () => {
  it('keeps the earliest admission of a whole GPU and reports the later one, with the GPUs and the holder', () => {
    const early = stored('job-b', 100, 'h100', 2, [{ node: 'n1', pods: 1, gpuIndices: [0, 1] }]);
    const late = stored('job-a', 200, 'h100', 2, [{ node: 'n1', pods: 1, gpuIndices: [1, 2] }]);
    const other = stored('job-c', 300, 'h100', 1, [{ node: 'n2', pods: 1, gpuIndices: [1] }]);
    const { load, conflicts } = findDoubleBookings([late, other, early], flavors);
    expect(load.map((l) => l.job.id)).toEqual(['job-b', 'job-c']);
    expect(conflicts).toEqual([{ jobId: 'job-a', gpus: ['n1#1'], heldBy: ['job-b'] }]);
  });

  it('lets fractional pods share a GPU up to a whole one, not beyond', () => {
    const half1 = stored('h1', 1, 'h100', 0.5, [{ node: 'n1', pods: 1, gpuIndices: [3] }]);
    const half2 = stored('h2', 2, 'h100', 0.5, [{ node: 'n1', pods: 1, gpuIndices: [3] }]);
    const quarter = stored('q1', 3, 'h100', 0.25, [{ node: 'n1', pods: 1, gpuIndices: [3] }]);
    const { load, conflicts } = findDoubleBookings([half1, half2, quarter], flavors);
    expect(load.map((l) => l.job.id)).toEqual(['h1', 'h2']);
    expect(conflicts).toEqual([{ jobId: 'q1', gpus: ['n1#3'], heldBy: ['h1', 'h2'] }]);
  });

  it("counts MIG slices against the GPU's slicesPerGpu, one unit per gpuIndices entry", () => {
    // 7 slices per GPU: 3 + 4 fit on GPU 0; one more slice does not.
    const three = stored('m3', 1, 'mig', 3, [{ node: 'n1', pods: 1, gpuIndices: [0, 0, 0] }]);
    const four = stored('m4', 2, 'mig', 2, [{ node: 'n1', pods: 2, gpuIndices: [0, 0, 0, 0] }]);
    const one = stored('m1', 3, 'mig', 1, [{ node: 'n1', pods: 1, gpuIndices: [0] }]);
    const elsewhere = stored('m1b', 4, 'mig', 1, [{ node: 'n1', pods: 1, gpuIndices: [1] }]);
    const { load, conflicts } = findDoubleBookings([three, four, one, elsewhere], flavors);
    expect(load.map((l) => l.job.id)).toEqual(['m3', 'm4', 'm1b']);
    expect(conflicts.map((c) => c.jobId)).toEqual(['m1']);
  });

  it('orders equal admission times by job id, and passes admissions without GPUs', () => {
    const x = stored('x', 5, 'h100', 1, [{ node: 'n1', pods: 1, gpuIndices: [0] }]);
    const y = stored('y', 5, 'h100', 1, [{ node: 'n1', pods: 1, gpuIndices: [0] }]);
    const cpuOnly = stored('cpu', 1, 'h100', 0, [{ node: 'n1', pods: 1, gpuIndices: [] }]);
    const { load, conflicts } = findDoubleBookings([y, x, cpuOnly], flavors);
    expect(load.map((l) => l.job.id)).toEqual(['cpu', 'x']);
    expect(conflicts.map((c) => c.jobId)).toEqual(['y']);
  });
});

describeEachDialect('restoring double-booked admissions', (dialect) => {
  let t: SchedulerTestApp;
  afterAll(async () => t?.close());

  it('loads the earliest, puts the later one back to pending (event, suspend, report) and admits it again elsewhere', async () => {
    t = await startSchedulerApp({ dialect });
    const token = t.token('aurora-research', 'MEMBER');
    const queueId = (await t.gql(token, `{ queues { id } }`)).data.queues[0].id;
    const ids: string[] = [];
    for (const name of ['first', 'second']) {
      const res = await t.gql(token, `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id } }`, {
        in: {
          queueId,
          name,
          podSets: [{ gpusPerPod: 2, flavors: ['h100-80g'] }],
          expectedDurationSeconds: 1e6,
        },
      });
      expect(res.errors).toBeUndefined();
      ids.push(Buffer.from(res.data.submitJob.id, 'base64').toString().replace(/^Job:/, ''));
    }
    const em = () => systemEntityManager(t.app.orm);
    const admitted = await waitFor('both admitted', async () => {
      const jobs = await em().find(Job, { id: { $in: ids } }, { orderBy: { admittedAt: 'asc', id: 'asc' } });
      return jobs.length === 2 && jobs.every((j) => j.state === 'ADMITTED' || j.state === 'RUNNING')
        ? jobs
        : null;
    });
    // Forge what two leaders would have left: the later admission on the earlier one's GPUs.
    const [early, late] = [...admitted].sort(
      (a, b) => a.admission!.at - b.admission!.at || (a.id < b.id ? -1 : 1),
    );
    const forged = structuredClone(late!.admission!);
    forged.podSets[0]!.placements = structuredClone(early!.admission!.podSets[0]!.placements);
    await em().nativeUpdate(Job, { id: late!.id }, { admission: forged });

    await t.app.scheduler.rebuild();

    const back = await em().findOneOrFail(Job, { id: late!.id });
    expect(back.state).toBe('PENDING');
    const events = await em().find(JobEvent, { job: late!.id, type: 'PREEMPTED' });
    expect(events.map((e) => e.reason)).toEqual(['DoubleBooked']);
    const outbox = (await em().find(OutboxEntry, { kind: 'job.requeued' })).map((o) => o.payload.jobId);
    expect(outbox).toEqual([late!.id]);
    expect(t.errors.map(String)).toEqual([
      expect.stringContaining(`restore: job ${late!.id} was admitted onto GPUs`),
    ]);
    // The core loaded only the earliest on those GPUs; the next cycle places the other elsewhere.
    expect(t.app.scheduler.explain(early!.id)?.state).toBe('admitted');
    t.app.scheduler.wake();
    const again = await waitFor('re-admitted on other GPUs', async () => {
      const j = await em().findOneOrFail(Job, { id: late!.id });
      return j.state === 'ADMITTED' || j.state === 'RUNNING' ? j : null;
    });
    const gpus = (j: Job) =>
      j.admission!.podSets.flatMap((ps) =>
        ps.placements.flatMap((p) => (p.gpuIndices ?? []).map((i) => `${p.node}#${i}`)),
      );
    // The suspend was performed (the backend stopped the double-booked run).
    await waitFor(
      'the requeue is performed',
      async () => (await em().find(OutboxEntry, { kind: 'job.requeued' }))[0]?.performedAt != null,
    );
    const earlyGpus = new Set(gpus(early!));
    expect(gpus(again).filter((g) => earlyGpus.has(g))).toEqual([]);
  }, 30_000);
});
