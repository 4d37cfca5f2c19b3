// What the cluster said about a run (port.ts BackendLogs.events) against the test API server: the
// kubelet's and scheduler's Events about the run's pods, named by pod set and index, and its Job's,
// oldest first; a FailedScheduling for a pod that cannot fit, as the scheduler wrote it; nothing of
// another run or another tenant's namespace; the watch of a tenant that goes is stopped.
import { afterEach, describe, expect, it } from 'vitest';
import {
  AURORA,
  admitted,
  allRunning,
  BOREALIS,
  eventually,
  FLAVORS,
  type LogCluster,
  runOf,
  startLogCluster,
} from './log-fixtures.js';

let c: LogCluster | null = null;
afterEach(async () => {
  await c?.close();
  c = null;
});

const id = (n: number) => `0190f0a0-0000-7000-8000-0000000002${String(n).padStart(2, '0')}`;

describe('Kubernetes cluster events of a run', () => {
  it('maps the Events about the run’s pods and Job, oldest first', async () => {
    c = await startLogCluster();
    const job = admitted(id(1), [{ name: 'workers', count: 2, gpu: 1 }], {});
    await c.backend.start(job);
    await allRunning(c.kube, job.jobId, 2);
    const run = runOf(job);
    const events = await eventually(async () => {
      const all = await c!.backend.logs.events(run);
      return all.filter((e) => e.reason === 'Started').length === 2 && all;
    }, 'both pods’ Started');
    const ofPod1 = events.filter((e) => e.object === 'Pod 1 of workers').map((e) => e.reason);
    expect(ofPod1).toEqual(['Scheduled', 'Pulling', 'Pulled', 'Created', 'Started']);
    const scheduled = events.find((e) => e.reason === 'Scheduled' && e.object === 'Pod 0 of workers');
    expect(scheduled).toMatchObject({
      type: 'Normal',
      count: 1,
      pod: { podSet: 'workers', index: 0 },
      message: expect.stringMatching(/^Successfully assigned fairway-aurora\/fw-.* to gpu-h100-1$/),
    });
    expect(events.filter((e) => e.object === 'Job').map((e) => e.reason)).toContain('SuccessfulCreate');
    const times = events.map((e) => e.firstSeen);
    expect(times).toEqual([...times].sort((a, b) => a - b));
    for (const e of events) expect(e.lastSeen).toBeGreaterThanOrEqual(e.firstSeen);
  });

  it('says why a pod cannot be placed (FailedScheduling, as the scheduler wrote it), for that run only', async () => {
    c = await startLogCluster();
    const first = admitted(id(2), [{ name: 'main', count: 1, gpu: 8 }], {});
    await c.backend.start(first);
    await allRunning(c.kube, first.jobId, 1);
    // Admitted onto the same full node: its pod waits.
    const second = admitted(id(3), [{ name: 'main', count: 1, gpu: 8 }], {});
    second.admission.podSets[0]!.placements = [{ node: 'gpu-h100-1', pods: 1 }];
    await c.backend.start(second);
    const run = runOf(second);
    const failed = await eventually(async () => {
      const events = await c!.backend.logs.events(run);
      return events.find((e) => e.reason === 'FailedScheduling');
    }, 'FailedScheduling');
    expect(failed).toMatchObject({
      type: 'Warning',
      object: 'Pod 0 of main',
      pod: { podSet: 'main', index: 0 },
      message: expect.stringMatching(/^0\/2 nodes are available: .*Insufficient nvidia\.com\/gpu/),
    });
    const ofSecond = await c.backend.logs.events(run);
    expect(ofSecond.map((e) => e.reason)).not.toContain('Started');
    // The first run's events are its own.
    const ofFirst = await c.backend.logs.events(runOf(first));
    expect(ofFirst.map((e) => e.reason)).toContain('Started');
    expect(ofFirst.map((e) => e.reason)).not.toContain('FailedScheduling');
    // The same job id as another tenant's run: nothing of Aurora's namespace.
    expect(await c.backend.logs.events(runOf(second, { tenant: BOREALIS.id }))).toEqual([]);
  });

  it('leaves out the events of the job’s earlier runs and stops watching a tenant that goes', async () => {
    c = await startLogCluster();
    const job = admitted(id(4), [{ name: 'main', count: 1, gpu: 1 }], { FAIRWAY_TEST_RUN_MS: '200' });
    await c.backend.start(job);
    await eventually(() => c!.events.find((e) => e.type === 'succeeded'), 'succeeded');
    const earlier = runOf(job, { endedAt: Date.now() });
    expect((await c.backend.logs.events(earlier)).map((e) => e.reason)).toContain('Started');
    // A later run (another admission) of the same job, long after: the earlier pod's events are not its.
    const later = runOf(job, { admissionAt: Date.now() + 120_000, run: 2 });
    expect(await c.backend.logs.events(later)).toEqual([]);
    const watchesBefore = c.kube.openWatches;
    await c.backend.syncTenants([AURORA], FLAVORS);
    await eventually(() => c!.kube.openWatches === watchesBefore - 1, 'the Borealis events watch stopped');
  });
});
