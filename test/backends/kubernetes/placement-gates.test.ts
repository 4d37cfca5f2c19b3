// Exact placement: pods are created gated and each is released to the node its admission gave its
// completion index; the release patch adds only a hostname to the nodeSelector and removes only
// Fairway's gate.
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import {
  completionIndexOf,
  nodeOfIndex,
  PLACEMENT_GATE,
  releaseGatedPods,
  releasePatch,
} from '../../../src/backends/kubernetes/placement-gates.js';

const admitted = {
  name: 'workers',
  flavor: 'h100',
  count: 4,
  placements: [
    { node: 'n1', pods: 2 },
    { node: 'n2', pods: 0 },
    { node: 'n3', pods: 2 },
  ],
};

const pod = (name: string, index: number, gates = [{ name: PLACEMENT_GATE }], admission = '1'): V1Pod => ({
  metadata: {
    name,
    uid: `uid-${name}`,
    labels: { 'fairway.dev/pod-set': 'workers' },
    annotations: {
      'batch.kubernetes.io/job-completion-index': String(index),
      'fairway.dev/admission-at': admission,
    },
  },
  spec: { containers: [{ name: 'main' }], schedulingGates: gates },
});

describe('exact placement through scheduling gates', () => {
  it('index → node follows the placements in order, each node as many times as its pods', () => {
    expect([0, 1, 2, 3, 4].map((i) => nodeOfIndex(admitted, i))).toEqual(['n1', 'n1', 'n3', 'n3', undefined]);
    expect(completionIndexOf(pod('p', 3))).toBe(3);
    expect(completionIndexOf({ metadata: { name: 'single' } })).toBe(0);
  });

  it('the release adds the hostname and drops only Fairway’s gate', () => {
    const p = pod('p', 0, [{ name: 'other.example/gate' }, { name: PLACEMENT_GATE }]);
    expect(releasePatch(p, 'n1')).toEqual({
      spec: {
        nodeSelector: { 'kubernetes.io/hostname': 'n1' },
        schedulingGates: [{ name: 'other.example/gate' }],
      },
    });
  });

  it('releases each gated pod of the current admission once, leaves the rest', async () => {
    const patched: [string, unknown][] = [];
    const patch = async (p: V1Pod, body: Record<string, unknown>) =>
      void patched.push([p.metadata!.name!, body]);
    const asked = new Map<string, string>();
    const run = { jobId: 'j', admissionAt: '1', admissions: [admitted] };
    const pods = [
      pod('a', 0),
      pod('b', 3),
      pod('released', 1, []),
      pod('old', 2, undefined, '0'),
      pod('extra', 9),
    ];
    const { stuck, unavailable } = await releaseGatedPods(
      patch,
      run,
      pods,
      asked,
      (p) => p.metadata?.labels?.['fairway.dev/pod-set'],
    );
    expect(unavailable).toBeNull();
    expect(
      patched.map(([name, body]) => [name, (body as any).spec.nodeSelector['kubernetes.io/hostname']]),
    ).toEqual([
      ['a', 'n1'],
      ['b', 'n3'],
    ]);
    expect(stuck.map((p) => p.metadata!.name)).toEqual(['extra']);
    await releaseGatedPods(patch, run, pods, asked, (p) => p.metadata?.labels?.['fairway.dev/pod-set']);
    expect(patched).toHaveLength(2);
  });

  it('a pod whose node was drained or lost since the admission is not released: the reason says why', async () => {
    const patched: string[] = [];
    const outcome = await releaseGatedPods(
      async (p) => void patched.push(p.metadata!.name!),
      { jobId: 'j', admissionAt: '1', admissions: [admitted] },
      [pod('a', 0), pod('b', 2)],
      new Map(),
      (p) => p.metadata?.labels?.['fairway.dev/pod-set'],
      (node) => (node === 'n3' ? 'node n3 is cordoned' : null),
    );
    expect(patched).toEqual(['a']);
    expect(outcome.unavailable).toBe('node n3 is cordoned');
  });

  it('pods that carry no index (Ray workers) fill the planned nodes, each node as many pods as planned', async () => {
    const patched: [string, string][] = [];
    const noIndex = (name: string): V1Pod => {
      const p = pod(name, 0);
      delete p.metadata!.annotations!['batch.kubernetes.io/job-completion-index'];
      return p;
    };
    const already = {
      ...pod('placed', 0, []),
      spec: { containers: [{ name: 'main' }], nodeSelector: { 'kubernetes.io/hostname': 'n1' } },
    };
    await releaseGatedPods(
      async (p, body) =>
        void patched.push([p.metadata!.name!, (body as any).spec.nodeSelector['kubernetes.io/hostname']]),
      { jobId: 'j', admissionAt: '1', admissions: [admitted] },
      [already, noIndex('w1'), noIndex('w2'), noIndex('w3')],
      new Map(),
      (p) => p.metadata?.labels?.['fairway.dev/pod-set'],
      () => null,
      () => null,
    );
    expect(patched).toEqual([
      ['w1', 'n1'],
      ['w2', 'n3'],
      ['w3', 'n3'],
    ]);
  });

  it('a pod asked for but still gated in the cache counts where it goes: the next pod takes another node', async () => {
    const patched: [string, string][] = [];
    const patch = async (p: V1Pod, body: Record<string, unknown>) =>
      void patched.push([p.metadata!.name!, (body as any).spec.nodeSelector['kubernetes.io/hostname']]);
    const bare = (name: string): V1Pod => {
      const p = pod(name, 0);
      delete p.metadata!.annotations!['batch.kubernetes.io/job-completion-index'];
      return p;
    };
    const run = {
      jobId: 'j',
      admissionAt: '1',
      admissions: [
        {
          ...admitted,
          placements: [
            { node: 'n1', pods: 1 },
            { node: 'n3', pods: 1 },
          ],
        },
      ],
    };
    const asked = new Map<string, string>();
    const set = (p: V1Pod) => p.metadata?.labels?.['fairway.dev/pod-set'];
    await releaseGatedPods(
      patch,
      run,
      [bare('w1')],
      asked,
      set,
      () => null,
      () => null,
    );
    await releaseGatedPods(
      patch,
      run,
      [bare('w1'), bare('w2')],
      asked,
      set,
      () => null,
      () => null,
    );
    expect(patched).toEqual([
      ['w1', 'n1'],
      ['w2', 'n3'],
    ]);
  });
});
