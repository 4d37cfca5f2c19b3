// Each workload kind's status and pods → the run's state and reason (disruptions first, as for Jobs);
// the pod-set rules refused at submit; where each controller's pods sit in their pod set.
import type { V1ContainerState, V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { LABEL_POD_SET } from '../../../src/backends/kubernetes/naming.js';
import {
  CUSTOM_WORKLOADS,
  type CustomWorkloadKind,
} from '../../../src/backends/kubernetes/workload-kinds.js';
import { build, KINDS, kindJob, mergePatch, NAME, SHAPES, wire } from './workload-fixtures.js';

// --- status → run state ------------------------------------------------------------------------

function pod(
  name: string,
  phase: string,
  opts: {
    labels?: Record<string, string>;
    state?: V1ContainerState;
    conditions?: Partial<V1PodCondition>[];
    deleting?: boolean;
    reason?: string;
  } = {},
): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: 'fairway-aurora',
      labels: opts.labels ?? {},
      ...(opts.deleting ? { deletionTimestamp: new Date('2024-01-01T00:00:00Z') } : {}),
    },
    spec: { containers: [{ name: 'main', image: 'x' }], nodeName: 'n0-0' },
    status: {
      phase,
      ...(opts.reason ? { reason: opts.reason } : {}),
      conditions: (opts.conditions ?? []).map((c) => ({ type: 'PodScheduled', status: 'True', ...c })),
      ...(opts.state
        ? {
            containerStatuses: [
              {
                name: 'main',
                image: 'x',
                imageID: '',
                ready: phase === 'Running',
                restartCount: 0,
                state: opts.state,
              },
            ],
          }
        : {}),
    },
  };
}

const up = (name: string) => pod(name, 'Running', { state: { running: {} } });
const crashed = (name: string) =>
  pod(name, 'Failed', { state: { terminated: { exitCode: 1, reason: 'Error', message: 'loss is NaN' } } });
const evicted = (name: string) =>
  pod(name, 'Failed', {
    conditions: [
      {
        type: 'DisruptionTarget',
        status: 'True',
        reason: 'EvictionByEvictionAPI',
        message: 'Eviction API: evicting',
      },
    ],
  });
const condition = (type: string, reason?: string, message?: string) => ({
  type,
  status: 'True',
  lastTransitionTime: '2024-01-01T00:00:00Z',
  ...(reason ? { reason } : {}),
  ...(message ? { message } : {}),
});

function withStatus(kind: CustomWorkloadKind, status: unknown, suspended = false): any {
  const obj = wire(build(kind).obj);
  obj.status = status;
  return suspended ? mergePatch(obj, CUSTOM_WORKLOADS[kind].suspendPatch()) : obj;
}

describe('observe', () => {
  it('JobSet: Completed, Failed with the pod’s reason or its own, the deadline, running, pending', () => {
    const w = CUSTOM_WORKLOADS.JOBSET;
    const six = Array.from({ length: 6 }, (_v, i) => up(`p${i}`));
    expect(
      w.observe(withStatus('JOBSET', { conditions: [condition('Completed', 'AllJobsCompleted')] }), [], 6),
    ).toEqual({
      kind: 'succeeded',
    });
    const failed = withStatus('JOBSET', {
      conditions: [
        condition('Failed', 'ReachedMaxRestarts', 'jobset failed due to reaching max number of restarts'),
      ],
    });
    expect(w.observe(failed, [up('p0'), crashed('p1')], 6)).toEqual({
      kind: 'failed',
      reason: 'Error: container main of pod p1 exited with code 1: loss is NaN',
    });
    expect(w.observe(failed, [], 6)).toEqual({
      kind: 'failed',
      reason: 'ReachedMaxRestarts: jobset failed due to reaching max number of restarts',
    });
    const overdue = wire(build('JOBSET', kindJob('JOBSET', { maxRunMs: 60_000 })).obj);
    overdue.status = {
      conditions: [
        condition('Failed', 'FailJobSetFailurePolicyAction', 'applying FailJobSet failure policy action'),
      ],
    };
    expect(w.observe(overdue, [crashed('p1')], 6)).toEqual({
      kind: 'failed',
      reason: `DeadlineExceeded: a Job of JobSet ${NAME} ran longer than the job's maximum run time`,
    });
    expect(w.observe(withStatus('JOBSET', {}), six, 6)).toEqual({ kind: 'running' });
    expect(w.observe(withStatus('JOBSET', {}), six.slice(0, 4), 6)).toEqual({
      kind: 'pending',
      message: '4/6 pods created, 4 running',
    });
    expect(w.observe(withStatus('JOBSET', {}, true), [], 6)).toEqual({
      kind: 'pending',
      message: `Suspended: JobSet ${NAME} is suspended`,
    });
    // A failed pod with retries left is replaced by its Job: not a failure yet.
    const retrying = wire(build('JOBSET', kindJob('JOBSET', { maxRetries: 2 })).obj);
    expect(w.observe(retrying, [...six.slice(0, 5), crashed('p5')], 6).kind).toBe('pending');
    expect(w.observe(withStatus('JOBSET', {}), [...six.slice(0, 5), crashed('p5')], 6).kind).toBe('failed');
  });

  it('a disrupted pod comes first, before another pod’s failure; the controller’s deletions after a failure do not count', () => {
    for (const kind of KINDS) {
      const w = CUSTOM_WORKLOADS[kind];
      expect(w.observe(withStatus(kind, {}), [evicted('p0'), crashed('p1')], 3), kind).toEqual({
        kind: 'disrupted',
        reason: 'EvictionByEvictionAPI: Eviction API: evicting',
      });
    }
    const failed = withStatus('PYTORCH_JOB', {
      conditions: [
        condition('Failed', 'PyTorchJobFailed', 'PyTorchJob x is failed because 1 Master replica(s) failed.'),
      ],
    });
    expect(
      CUSTOM_WORKLOADS.PYTORCH_JOB.observe(failed, [pod('p1', 'Running', { deleting: true })], 4),
    ).toEqual({
      kind: 'failed',
      reason: 'PyTorchJobFailed: PyTorchJob x is failed because 1 Master replica(s) failed.',
    });
    // While it runs, a pod deleted from outside is a disruption (the operator deletes none then).
    expect(
      CUSTOM_WORKLOADS.PYTORCH_JOB.observe(
        withStatus('PYTORCH_JOB', {}),
        [pod('p1', 'Running', { deleting: true })],
        4,
      ),
    ).toEqual({ kind: 'disrupted', reason: 'DeletedFromOutside: pod p1 was deleted while its job ran' });
  });

  it('PyTorchJob: Succeeded, the deadline, Running with all pods, pending while restarting', () => {
    const w = CUSTOM_WORKLOADS.PYTORCH_JOB;
    const four = ['m', 'w0', 'w1', 'w2'].map(up);
    expect(
      w.observe(
        withStatus('PYTORCH_JOB', { conditions: [condition('Succeeded', 'PyTorchJobSucceeded')] }),
        [],
        4,
      ),
    ).toEqual({ kind: 'succeeded' });
    const overdue = withStatus('PYTORCH_JOB', {
      conditions: [
        condition(
          'Failed',
          'PyTorchJobFailed',
          `Job ${NAME} has failed because it was active longer than specified deadline`,
        ),
      ],
    });
    expect(w.observe(overdue, [], 4)).toEqual({
      kind: 'failed',
      reason: `DeadlineExceeded: Job ${NAME} has failed because it was active longer than specified deadline`,
    });
    expect(
      w.observe(
        withStatus('PYTORCH_JOB', { conditions: [condition('Running', 'PyTorchJobRunning')] }),
        four,
        4,
      ),
    ).toEqual({
      kind: 'running',
    });
    const restarting = withStatus('PYTORCH_JOB', {
      conditions: [
        condition(
          'Restarting',
          'PyTorchJobRestarting',
          'PyTorchJob x is restarting because 1 Worker replica(s) failed.',
        ),
      ],
    });
    expect(w.observe(restarting, four.slice(0, 3), 4)).toEqual({
      kind: 'pending',
      message:
        '3/4 pods created, 3 running; Restarting: PyTorchJob x is restarting because 1 Worker replica(s) failed.',
    });
    expect(w.observe(withStatus('PYTORCH_JOB', {}, true), [], 4)).toEqual({
      kind: 'pending',
      message: `Suspended: PyTorchJob ${NAME} is suspended`,
    });
  });

  it('RayJob: Complete and SUCCEEDED, Failed with its message, the deadline, running, initializing', () => {
    const w = CUSTOM_WORKLOADS.RAY_JOB;
    const three = ['head', 'w0', 'w1'].map(up);
    const st = (status: object) => withStatus('RAY_JOB', status);
    expect(w.observe(st({ jobDeploymentStatus: 'Complete', jobStatus: 'SUCCEEDED' }), [], 3)).toEqual({
      kind: 'succeeded',
    });
    expect(
      w.observe(
        st({
          jobDeploymentStatus: 'Failed',
          jobStatus: 'FAILED',
          reason: 'AppFailed',
          message: 'Job entrypoint command failed with exit code 1',
        }),
        [],
        3,
      ),
    ).toEqual({ kind: 'failed', reason: 'AppFailed: Job entrypoint command failed with exit code 1' });
    expect(w.observe(st({ jobDeploymentStatus: 'Complete', jobStatus: 'FAILED' }), [], 3)).toEqual({
      kind: 'failed',
      reason: `AppFailed: RayJob ${NAME} ended Complete with Ray job status FAILED`,
    });
    expect(
      w.observe(
        st({
          jobDeploymentStatus: 'Failed',
          reason: 'DeadlineExceeded',
          message: 'The RayJob has passed the activeDeadlineSeconds.',
        }),
        three,
        3,
      ),
    ).toEqual({
      kind: 'failed',
      reason: 'DeadlineExceeded: The RayJob has passed the activeDeadlineSeconds.',
    });
    expect(w.observe(st({ jobDeploymentStatus: 'Running', jobStatus: 'RUNNING' }), three, 3)).toEqual({
      kind: 'running',
    });
    expect(w.observe(st({ jobDeploymentStatus: 'Initializing' }), three.slice(0, 1), 3)).toEqual({
      kind: 'pending',
      message: '1/3 pods created, 1 running; RayJob Initializing',
    });
    // KubeRay deletes and replaces pods itself (a retry, a failed worker): not a disruption.
    expect(
      w.observe(
        st({ jobDeploymentStatus: 'Running' }),
        [...three, pod('old', 'Running', { deleting: true })],
        3,
      ),
    ).toEqual({
      kind: 'running',
    });
    // A failed worker is replaced by KubeRay: pending, not failed; an image that cannot be pulled fails.
    expect(
      w.observe(st({ jobDeploymentStatus: 'Running' }), [...three.slice(0, 2), crashed('w1')], 3).kind,
    ).toBe('pending');
    const noImage = pod('w1', 'Pending', {
      state: { waiting: { reason: 'ImagePullBackOff', message: 'Back-off pulling image' } },
    });
    expect(w.observe(st({ jobDeploymentStatus: 'Running' }), [...three.slice(0, 2), noImage], 3)).toEqual({
      kind: 'failed',
      reason: 'ImagePullBackOff: Back-off pulling image',
    });
  });

  it('RayCluster: running when ready with all pods, never succeeded, pending otherwise', () => {
    const w = CUSTOM_WORKLOADS.RAY_CLUSTER;
    const four = ['head', 'g0', 'g1', 'c0'].map(up);
    expect(w.observe(withStatus('RAY_CLUSTER', { state: 'ready' }), four, 4)).toEqual({ kind: 'running' });
    expect(w.observe(withStatus('RAY_CLUSTER', {}), four, 4)).toEqual({
      kind: 'pending',
      message: `RayCluster ${NAME} is not ready yet`,
    });
    expect(w.observe(withStatus('RAY_CLUSTER', { state: 'ready' }), four.slice(0, 3), 4).kind).toBe(
      'pending',
    );
    const refused = withStatus('RAY_CLUSTER', {
      conditions: [condition('RayClusterReplicaFailure', 'FailedCreateWorkerPod', 'pods "x" is forbidden')],
    });
    expect(w.observe(refused, [], 4)).toEqual({
      kind: 'pending',
      message: '0/4 pods created, 0 running; FailedCreateWorkerPod: pods "x" is forbidden',
    });
    expect(w.observe(withStatus('RAY_CLUSTER', {}, true), [], 4)).toEqual({
      kind: 'pending',
      message: `Suspended: RayCluster ${NAME} is suspended`,
    });
  });

  it('a fresh object with no pods yet has not ended', () => {
    for (const kind of KINDS) {
      const seen = CUSTOM_WORKLOADS[kind].observe(wire(build(kind).obj), [], 0).kind;
      expect(['running', 'pending'], kind).toContain(seen);
    }
  });
});

// --- submit-time rules and pod positions --------------------------------------------------------

describe('problems', () => {
  const sets = (...s: [string, number, number?][]) =>
    s.map(([name, count, gpu]) => ({ name, count, perPod: { gpu } }));
  const cmd = { command: ['python', 'run.py'] };

  it('what each kind takes passes', () => {
    for (const kind of KINDS)
      expect(
        CUSTOM_WORKLOADS[kind].problems(
          SHAPES[kind].map((s) => ({ name: s.name, count: s.count, perPod: { gpu: s.gpu } })),
          kind === 'RAY_CLUSTER' ? {} : cmd,
        ),
        kind,
      ).toBeNull();
  });

  it('a JobSet without pods', () => {
    expect(CUSTOM_WORKLOADS.JOBSET.problems(sets(['a', 0]), null)).toBe('a JOBSET needs at least one pod');
    expect(CUSTOM_WORKLOADS.JOBSET.problems(sets(['a', 2]), null)).toBeNull();
  });

  it('a PyTorchJob without master, with a master of 0 or 2 pods, another pod set, uneven GPUs', () => {
    const p = (s: ReturnType<typeof sets>) => CUSTOM_WORKLOADS.PYTORCH_JOB.problems(s, cmd);
    expect(p(sets(['worker', 4, 8]))).toMatch(/needs a pod set "master"/);
    expect(p(sets(['master', 0, 8], ['worker', 4, 8]))).toMatch(/exactly 1 pod \(got 0\)/);
    expect(p(sets(['master', 2, 8]))).toMatch(/exactly 1 pod \(got 2\)/);
    expect(p(sets(['master', 1, 8], ['launcher', 1]))).toMatch(/"launcher" is neither/);
    expect(p(sets(['master', 1, 8], ['worker', 2, 4]))).toMatch(/same GPUs per pod \(got 8 and 4\)/);
    expect(p(sets(['master', 1, 0], ['worker', 2, 4]))).toBeNull();
    expect(p(sets(['master', 1, 8]))).toBeNull();
  });

  it('Ray: two heads, no head, a head of 0 pods; a RayJob without command; a RayCluster with one or no image', () => {
    for (const kind of ['RAY_JOB', 'RAY_CLUSTER'] as const) {
      const p = (s: ReturnType<typeof sets>) =>
        CUSTOM_WORKLOADS[kind].problems(s, kind === 'RAY_JOB' ? cmd : {});
      expect(p(sets(['head', 1], ['head', 1]))).toBe(`a ${kind} has one "head" pod set, not 2`);
      expect(p(sets(['workers', 2, 8]))).toMatch(/needs a pod set "head"/);
      expect(p(sets(['head', 0], ['workers', 2, 8]))).toMatch(/exactly 1 pod \(got 0\)/);
      expect(p(sets(['head', 1], ['workers', 0, 8]))).toBeNull();
    }
    const rayJob = CUSTOM_WORKLOADS.RAY_JOB;
    expect(rayJob.problems(sets(['head', 1]), { command: [] })).toMatch(/needs a command/);
    expect(rayJob.problems(sets(['head', 1]), null)).toMatch(/needs a command/);
    expect(rayJob.problems(sets(['head', 1]), { args: ['python', 'x.py'] })).toBeNull();
    const cluster = CUSTOM_WORKLOADS.RAY_CLUSTER;
    expect(cluster.problems(sets(['head', 1]), null)).toMatch(/needs a container image with Ray/);
    expect(cluster.problems(sets(['head', 1]), cmd)).toMatch(/takes no command/);
  });
});

describe('podPosition', () => {
  const labelled = (labels: Record<string, string>) => pod('p', 'Pending', { labels });

  it('JobSet and PyTorchJob pods say their index; a Ray head is index 0, its workers are the caller’s', () => {
    expect(
      CUSTOM_WORKLOADS.JOBSET.podPosition(
        labelled({ [LABEL_POD_SET]: 'trainer', 'batch.kubernetes.io/job-completion-index': '3' }),
      ),
    ).toEqual({ podSet: 'trainer', index: 3 });
    expect(CUSTOM_WORKLOADS.JOBSET.podPosition(labelled({ [LABEL_POD_SET]: 'trainer' }))).toBeNull();
    expect(
      CUSTOM_WORKLOADS.PYTORCH_JOB.podPosition(
        labelled({ [LABEL_POD_SET]: 'worker', 'training.kubeflow.org/replica-index': '2' }),
      ),
    ).toEqual({ podSet: 'worker', index: 2 });
    for (const kind of ['RAY_JOB', 'RAY_CLUSTER'] as const) {
      const w = CUSTOM_WORKLOADS[kind];
      expect(w.podPosition(labelled({ [LABEL_POD_SET]: 'head', 'ray.io/node-type': 'head' }))).toEqual({
        podSet: 'head',
        index: 0,
      });
      expect(
        w.podPosition(labelled({ [LABEL_POD_SET]: 'gpu-workers', 'ray.io/node-type': 'worker' })),
      ).toBeNull();
    }
  });
});
