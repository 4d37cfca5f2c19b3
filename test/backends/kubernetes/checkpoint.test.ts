// The Kubernetes backend passes a job's declared checkpointing to its workload (annotations and env);
// a job that declared none gets exactly the objects it got before the field existed.

import { Job } from 'kubernetes-models/batch/v1';
import { describe, expect, it } from 'vitest';
import { type JobBuildContext, jobObjects, toWireJson } from '../../../src/backends/kubernetes/objects.js';
import { type FlavorMapping, parseKubernetesSettings } from '../../../src/backends/kubernetes/settings.js';
import type { BackendJob } from '../../../src/backends/port.js';

const settings = parseKubernetesSettings({ flavors: [{ flavor: 'a100', resource: 'nvidia.com/gpu' }] });
const ctx: JobBuildContext = {
  namespace: 'fairway-aurora',
  tenant: {
    id: 'tenant-1',
    slug: 'aurora',
    isolationLevel: 'ELASTIC',
    egressAllowlist: null,
    maxResources: {},
  },
  flavors: new Map<string, FlavorMapping>(settings.flavors.map((m) => [m.flavor, m])),
  nodePools: new Map([['n1', 'train']]),
};

function job(over: Partial<BackendJob> = {}): BackendJob {
  return {
    jobId: '0b9d6a2e-3f4c-4e1a-9b7d-2c5e8f1a6b3d',
    tenant: 'tenant-1',
    queue: 'q',
    name: 'train',
    podSets: [{ name: 'main', count: 1, perPod: { gpu: 1, cpu: 1000, memory: 1024 } }],
    admission: {
      jobId: 'j',
      queue: 'q',
      at: 1_700_000_000_000,
      podSets: [{ name: 'main', flavor: 'a100', count: 1, placements: [{ node: 'n1', pods: 1 }] }],
      borrowed: false,
      mode: 'fit',
    },
    expectedDurationMs: 3_600_000,
    ...over,
  };
}

const built = (j: BackendJob) => {
  const [kubeJob] = jobObjects(j, ctx, settings);
  const wire = toWireJson(kubeJob!) as Record<string, any>;
  new Job(wire as never).validate();
  return wire;
};

describe('Kubernetes job objects: declared checkpointing', () => {
  it('puts the interval and resumable on the Job, its pods and the container env', () => {
    const wire = built(job({ checkpoint: { intervalMs: 900_000, resumable: true } }));
    const expected = { 'fairway.dev/checkpoint-interval-seconds': '900', 'fairway.dev/resumable': 'true' };
    expect(wire.metadata.annotations).toMatchObject(expected);
    expect(wire.spec.template.metadata.annotations).toMatchObject(expected);
    expect(wire.spec.template.spec.containers[0].env).toEqual(
      expect.arrayContaining([
        { name: 'FAIRWAY_CHECKPOINT_INTERVAL_SECONDS', value: '900' },
        { name: 'FAIRWAY_CHECKPOINT_RESUMABLE', value: 'true' },
      ]),
    );
  });

  it('only what was declared; nothing for a job without checkpointing', () => {
    const intervalOnly = built(job({ checkpoint: { intervalMs: 60_000 } }));
    expect(intervalOnly.metadata.annotations['fairway.dev/resumable']).toBeUndefined();
    expect(intervalOnly.metadata.annotations['fairway.dev/checkpoint-interval-seconds']).toBe('60');
    const none = built(job());
    expect(
      Object.keys(none.metadata.annotations).filter(
        (k) => k.includes('checkpoint') || k.includes('resumable'),
      ),
    ).toEqual([]);
    expect(none.spec.template.spec.containers[0].env.map((e: { name: string }) => e.name)).toEqual([
      'FAIRWAY_JOB_ID',
    ]);
  });
});
