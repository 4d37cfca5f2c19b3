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
    const asked = new Set<string>();
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
      new Set(),
      (p) => p.metadata?.labels?.['fairway.dev/pod-set'],
      (node) => (node === 'n3' ? 'node n3 is cordoned' : null),
    );
    expect(patched).toEqual(['a']);
    expect(outcome.unavailable).toBe('node n3 is cordoned');
  });
});
