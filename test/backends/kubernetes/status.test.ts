// observeRun: a job's Kubernetes Jobs and pods → pending / running / succeeded / failed, with a reason.

import type { V1ContainerState, V1Job, V1JobCondition, V1Pod, V1PodCondition } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { notRunningMessage, observeRun, tenantSafeMessage } from '../../../src/backends/kubernetes/status.js';

function kubeJob(name: string, conditions: Partial<V1JobCondition>[] = [], suspend = false): V1Job {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, namespace: 'fairway-aurora' },
    spec: { suspend, template: { spec: { containers: [{ name: 'main', image: 'x' }] } } },
    status: { conditions: conditions.map((c) => ({ status: 'True', type: 'Complete', ...c })) },
  };
}

function pod(
  name: string,
  phase: string,
  opts: {
    state?: V1ContainerState;
    conditions?: Partial<V1PodCondition>[];
    node?: string;
    reason?: string;
    message?: string;
  } = {},
): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'fairway-aurora' },
    spec: { containers: [{ name: 'main', image: 'x' }], ...(opts.node ? { nodeName: opts.node } : {}) },
    status: {
      phase,
      ...(opts.reason ? { reason: opts.reason } : {}),
      ...(opts.message ? { message: opts.message } : {}),
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

const running = (name: string) => pod(name, 'Running', { node: 'n1', state: { running: {} } });

describe('observeRun', () => {
  it('pending: an unschedulable pod says why, reason first', () => {
    const unschedulable = pod('fw-a-0-0-xk2p9', 'Pending', {
      conditions: [
        {
          type: 'PodScheduled',
          status: 'False',
          reason: 'Unschedulable',
          message: '0/5 nodes are available: 5 Insufficient nvidia.com/gpu.',
        },
      ],
    });
    const seen = observeRun([kubeJob('fw-a-0')], [unschedulable], 1);
    expect(seen).toEqual({
      kind: 'pending',
      message: 'Unschedulable: 0/5 nodes are available: 5 Insufficient nvidia.com/gpu. (0/1 pods running)',
    });
  });

  it('pending: a container still being created, and pods not yet made', () => {
    const creating = pod('p0', 'Pending', {
      node: 'n1',
      state: { waiting: { reason: 'ContainerCreating' } },
    });
    expect(observeRun([kubeJob('j')], [creating], 1)).toEqual({
      kind: 'pending',
      message: 'ContainerCreating: container main of pod p0 (0/1 pods running)',
    });
    expect(observeRun([kubeJob('j')], [], 2)).toEqual({
      kind: 'pending',
      message: '0/2 pods created, 0 running',
    });
    expect(observeRun([], [], 2)).toMatchObject({ kind: 'pending' });
    expect(observeRun([kubeJob('j', [], true)], [], 1)).toEqual({
      kind: 'pending',
      message: 'Suspended: Job j is suspended',
    });
  });

  it('running: every expected pod Running (or already Succeeded); a pod deleted from outside is a disruption', () => {
    expect(observeRun([kubeJob('j')], [running('p0'), running('p1')], 2)).toEqual({ kind: 'running' });
    expect(
      observeRun(
        [kubeJob('j')],
        [
          running('p0'),
          pod('p1', 'Succeeded', { state: { terminated: { exitCode: 0, reason: 'Completed' } } }),
        ],
        2,
      ),
    ).toEqual({ kind: 'running' });
    const leaving = { ...running('p1'), metadata: { name: 'p1', deletionTimestamp: new Date() } };
    expect(observeRun([kubeJob('j')], [running('p0'), leaving], 2)).toEqual({
      kind: 'disrupted',
      reason: 'DeletedFromOutside: pod p1 was deleted while its job ran',
    });
  });

  it('a gang of 4 with 3 running is still pending, and says which pod waits', () => {
    const waiting = pod('w-3', 'Pending', {
      conditions: [
        {
          status: 'False',
          reason: 'Unschedulable',
          message: '0/2 nodes are available: 2 Insufficient nvidia.com/gpu.',
        },
      ],
    });
    const seen = observeRun([kubeJob('w')], [running('w-0'), running('w-1'), running('w-2'), waiting], 4);
    expect(seen).toEqual({
      kind: 'pending',
      message: 'Unschedulable: 0/2 nodes are available: 2 Insufficient nvidia.com/gpu. (3/4 pods running)',
    });
    expect(notRunningMessage([running('w-0'), running('w-1'), running('w-2'), waiting], 4)).toBe(
      seen.kind === 'pending' ? seen.message : '',
    );
  });

  it('succeeded: only when every Job is Complete', () => {
    expect(
      observeRun([kubeJob('a', [{ type: 'Complete' }]), kubeJob('b', [{ type: 'Complete' }])], [], 2),
    ).toEqual({ kind: 'succeeded' });
    expect(observeRun([kubeJob('a', [{ type: 'Complete' }]), kubeJob('b')], [running('b-0')], 2).kind).toBe(
      'pending',
    );
    expect(observeRun([kubeJob('a', [{ type: 'Complete', status: 'False' }])], [running('a-0')], 1)).toEqual({
      kind: 'running',
    });
  });

  it('failed: OOMKilled names the container and pod', () => {
    const oom = pod('p0', 'Failed', { state: { terminated: { exitCode: 137, reason: 'OOMKilled' } } });
    const seen = observeRun(
      [
        kubeJob('j', [
          {
            type: 'Failed',
            reason: 'BackoffLimitExceeded',
            message: 'Job has reached the specified backoff limit',
          },
        ]),
      ],
      [oom],
      1,
    );
    expect(seen).toEqual({
      kind: 'failed',
      reason: 'OOMKilled: container main of pod p0 ran out of memory (exit code 137)',
    });
    // Before the Job controller marks the Job: the failed pod already decides it (backoffLimit is 0).
    expect(
      observeRun(
        [kubeJob('j', [])].map((j) => ({ ...j, status: {} })),
        [oom],
        1,
      ),
    ).toEqual(seen);
  });

  it('failed: image pull errors are not left pending', () => {
    const pull = pod('p0', 'Pending', {
      node: 'n1',
      state: {
        waiting: {
          reason: 'ImagePullBackOff',
          message: 'Back-off pulling image "registry.example.com/does-not-exist:1"',
        },
      },
    });
    expect(observeRun([kubeJob('j')], [pull, running('p1')], 2)).toEqual({
      kind: 'failed',
      reason: 'ImagePullBackOff: Back-off pulling image "registry.example.com/does-not-exist:1"',
    });
    const config = pod('p0', 'Pending', {
      node: 'n1',
      state: {
        waiting: {
          reason: 'CreateContainerConfigError',
          message: 'container has runAsNonRoot and image will run as root',
        },
      },
    });
    expect(observeRun([kubeJob('j')], [config], 1)).toEqual({
      kind: 'failed',
      reason: 'CreateContainerConfigError: container has runAsNonRoot and image will run as root',
    });
  });

  it('failed: DeadlineExceeded comes from the Job condition', () => {
    const job = kubeJob('j', [
      {
        type: 'Failed',
        reason: 'DeadlineExceeded',
        message: 'Job was active longer than specified deadline',
      },
    ]);
    expect(observeRun([job], [], 1)).toEqual({
      kind: 'failed',
      reason: 'DeadlineExceeded: Job was active longer than specified deadline',
    });
  });

  it('failed: a non-zero exit code with the termination message; the Job reason when no pod tells more', () => {
    const crashed = pod('p0', 'Failed', {
      state: { terminated: { exitCode: 3, reason: 'Error', message: 'loss is NaN\n' } },
    });
    const failed = kubeJob('j', [
      {
        type: 'Failed',
        reason: 'BackoffLimitExceeded',
        message: 'Job has reached the specified backoff limit',
      },
    ]);
    expect(observeRun([failed], [running('p1'), crashed], 2)).toEqual({
      kind: 'failed',
      reason: 'Error: container main of pod p0 exited with code 3: loss is NaN',
    });
    expect(observeRun([failed], [], 2)).toEqual({
      kind: 'failed',
      reason: 'BackoffLimitExceeded: Job has reached the specified backoff limit',
    });
    const evicted = pod('p2', 'Failed', {
      reason: 'Evicted',
      message: 'The node was low on resource: memory.',
    });
    expect(observeRun([kubeJob('j')], [evicted], 1)).toEqual({
      kind: 'disrupted',
      reason: 'Evicted: The node was low on resource: memory.',
    });
  });

  it('disrupted: a pod the cluster marked DisruptionTarget (eviction, drain, preemption, a lost node), before any failure it causes', () => {
    for (const reason of [
      'EvictionByEvictionAPI',
      'PreemptionByScheduler',
      'DeletionByTaintManager',
      'DeletionByPodGC',
      'TerminationByKubelet',
    ]) {
      const target = pod('p1', 'Failed', {
        state: { terminated: { exitCode: 143, reason: 'Error' } },
        conditions: [{ type: 'DisruptionTarget', status: 'True', reason, message: `${reason}: stopped` }],
      } as never);
      expect(observeRun([kubeJob('j')], [running('p0'), target], 2)).toEqual({
        kind: 'disrupted',
        reason: `${reason}: ${reason}: stopped`,
      });
    }
    // The Job controller of a failed Job deletes its other pods: those are not disruptions.
    const failed = kubeJob('j', [{ type: 'Failed', reason: 'BackoffLimitExceeded', message: 'limit' }]);
    const crashed = pod('p0', 'Failed', { state: { terminated: { exitCode: 1, reason: 'Error' } } });
    const leaving = { ...running('p1'), metadata: { name: 'p1', deletionTimestamp: new Date() } };
    expect(observeRun([failed], [crashed, leaving], 2)).toEqual({
      kind: 'failed',
      reason: 'Error: container main of pod p0 exited with code 1',
    });
    // Its own deadline is a failure, whatever the pods it killed for it show.
    const late = kubeJob('j', [{ type: 'Failed', reason: 'DeadlineExceeded', message: 'too long' }]);
    expect(observeRun([late], [leaving], 2).kind).toBe('failed');
  });

  it('with retries left, a failed pod is the Job controller’s to replace; image errors still fail at once', () => {
    const crashed = pod('p0', 'Failed', { state: { terminated: { exitCode: 1, reason: 'Error' } } });
    expect(observeRun([kubeJob('j')], [crashed], 1, { retries: 2 }).kind).toBe('pending');
    expect(observeRun([kubeJob('j')], [crashed], 1).kind).toBe('failed');
    const pull = pod('p0', 'Pending', {
      state: { waiting: { reason: 'ImagePullBackOff', message: 'no such image' } },
    });
    expect(observeRun([kubeJob('j')], [pull], 1, { retries: 2 })).toEqual({
      kind: 'failed',
      reason: 'ImagePullBackOff: no such image',
    });
    const exhausted = kubeJob('j', [{ type: 'Failed', reason: 'BackoffLimitExceeded', message: 'limit' }]);
    expect(observeRun([exhausted], [crashed], 1, { retries: 2 }).kind).toBe('failed');
  });

  it('reasons stay one line of at most 500 characters', () => {
    const long = pod('p0', 'Failed', {
      state: { terminated: { exitCode: 1, reason: 'Error', message: 'trace\n'.repeat(200) } },
    });
    const seen = observeRun([kubeJob('j')], [long], 1);
    expect(seen.kind).toBe('failed');
    const reason = (seen as { reason: string }).reason;
    expect(reason.length).toBeLessThanOrEqual(500);
    expect(reason).not.toContain('\n');
  });
});

describe('tenantSafeMessage', () => {
  const own = '01a2300f-6900-72ef-a3c5-ef23360adcb8';
  const other = '01a23010-7f51-7082-929f-028dff15b716';
  it('drops taint values (a dedicated node’s is another tenant’s id) and any id but the job’s own', () => {
    const message = `Unschedulable: 0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) had untolerated taint {fairway.dev/dedicated: ${other}}. (0/1 pods running)`;
    const safe = tenantSafeMessage(message, [own]);
    expect(safe).not.toContain(other);
    expect(safe).toContain('1 node(s) had untolerated taint {fairway.dev/dedicated}');
    expect(tenantSafeMessage(`pod fw-${own}-0-abcde of ${other}`, [own])).toBe(
      `pod fw-${own}-0-abcde of <another id>`,
    );
  });
});
