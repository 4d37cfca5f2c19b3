// An inference service's objects: the Deployment of a revision (valid as apps/v1 says, its selector its
// template's, pods restarted in place, gated, ready on the port, drained over the grace, nothing of one
// replica in the template), the LeaderWorkerSet of a replica of several hosts (valid against the shared
// CRD), the ClusterIP Service over every revision, and the patches that give a pod to a replica.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Deployment } from 'kubernetes-models/apps/v1';
import { Service } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { HOSTNAME_LABEL, PLACEMENT_GATE } from '../../../src/backends/kubernetes/placement-gates.js';
import {
  ANNOTATION_POD_DELETION_COST,
  assignPatch,
  leavingPatch,
  replicaOf,
  revisionWorkload,
  serviceObject,
} from '../../../src/backends/kubernetes/service-objects.js';
import type { BackendJob } from '../../../src/backends/port.js';
import { ajv, CRDS, ctx, settings, toAjv, wire } from './workload-fixtures.js';

const SERVICE_ID = '019a8f2e-3f4c-7e1a-9b7d-2c5e8f1a6b3d';

function replicaJob(pods: number, over: Partial<BackendJob> = {}): BackendJob {
  const jobId = '0b9d6a2e-3f4c-4e1a-9b7d-2c5e8f1a6b3d';
  return {
    jobId,
    tenant: 'tenant-1',
    queue: 'q',
    name: 'chat-0',
    podSets: [{ name: 'replica', count: pods, perPod: { gpu: 1, cpu: 4000, memory: 16384 } }],
    admission: {
      jobId,
      queue: 'q',
      at: 1_700_000_000_000,
      podSets: [
        {
          name: 'replica',
          flavor: 'h100',
          count: pods,
          placements: Array.from({ length: pods }, (_v, k) => ({ node: `n0-${k}`, pods: 1 })),
        },
      ],
      borrowed: false,
      mode: 'fit',
    },
    graceSeconds: 45,
    workload: {
      container: { image: 'registry.example.com/chat:2', args: ['--model', 'llama'] },
      service: { id: SERVICE_ID, name: 'chat', port: 8080, slot: 0, revision: 3 },
    },
    ...over,
  };
}

describe('a revision as a Deployment', () => {
  const job = replicaJob(1);
  const replica = replicaOf(job)!;
  const d = wire(revisionWorkload(job, replica, ctx, settings, 4));

  it('is a valid apps/v1 Deployment whose selector is its template’s', () => {
    expect(() => new Deployment(d).validate()).not.toThrow();
    expect(() => new Deployment({ ...d, spec: { ...d.spec, replicas: '4' } }).validate()).toThrow();
    expect(d.metadata).toMatchObject({ name: `fw-${SERVICE_ID}-r3`, namespace: 'fairway-aurora' });
    expect(d.spec.replicas).toBe(4);
    for (const [k, v] of Object.entries(d.spec.selector.matchLabels))
      expect(d.spec.template.metadata.labels[k]).toBe(v);
    // Fairway rolls revisions itself within quota: the Deployment never surges past its count.
    expect(d.spec.strategy.rollingUpdate).toEqual({ maxSurge: 0, maxUnavailable: 1 });
  });

  it('runs pods that restart in place, wait behind the gate, are ready on the port and drain over the grace', () => {
    const spec = d.spec.template.spec;
    expect(spec.restartPolicy).toBe('Always');
    expect(spec.schedulingGates).toEqual([{ name: PLACEMENT_GATE }]);
    expect(spec.terminationGracePeriodSeconds).toBe(45);
    const main = spec.containers[0];
    expect(main.image).toBe('registry.example.com/chat:2');
    expect(main.args).toEqual(['--model', 'llama']);
    expect(main.ports).toEqual([{ name: 'serve', containerPort: 8080, protocol: 'TCP' }]);
    expect(main.readinessProbe.tcpSocket).toEqual({ port: 8080 });
    expect(main.resources.limits['nvidia.com/gpu']).toBe('1');
    expect(spec.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' });
  });

  it('holds nothing of one replica: no job id, admission, node or pool', () => {
    const text = JSON.stringify(d.spec.template);
    expect(text).not.toContain(job.jobId);
    expect(text).not.toContain('fairway.dev/admission-at');
    expect(text).not.toContain(HOSTNAME_LABEL);
    expect(text).not.toContain('pool-a');
    expect(d.spec.template.spec.affinity).toBeUndefined();
    const env = d.spec.template.spec.containers[0].env.map((e: { name: string }) => e.name);
    expect(env).not.toContain('FAIRWAY_JOB_ID');
    expect(env).toEqual(expect.arrayContaining(['FAIRWAY_SERVICE_ID', 'FAIRWAY_SERVICE_REVISION']));
  });
});

describe('a replica of several hosts as a LeaderWorkerSet', () => {
  const job = replicaJob(2);
  const lws = wire(revisionWorkload(job, replicaOf(job)!, ctx, settings, 3));

  it('validates against the shared CRD, one group of 2 pods per replica', () => {
    const crd = parse(readFileSync(join(CRDS, 'leaderworkerset.x-k8s.io_leaderworkersets.yaml'), 'utf8'));
    const version = crd.spec.versions.find((v: { name: string }) => v.name === 'v1');
    const validate = ajv.compile(toAjv(version.schema.openAPIV3Schema));
    expect(validate(lws), JSON.stringify(validate.errors)).toBe(true);
    expect(lws.apiVersion).toBe('leaderworkerset.x-k8s.io/v1');
    expect(lws.spec.replicas).toBe(3);
    expect(lws.spec.leaderWorkerTemplate.size).toBe(2);
    // A misspelt field is refused by the same validator (it can fail).
    const typo = wire(lws);
    typo.spec.leaderWorkerTemplate.sise = 2;
    expect(validate(typo)).toBe(false);
  });
});

describe('the Service and the patches', () => {
  const job = replicaJob(1);
  const replica = replicaOf(job)!;

  it('a ClusterIP Service selects every revision of the service on its port', () => {
    const s = wire(serviceObject(replica, ctx));
    expect(() => new Service(s).validate()).not.toThrow();
    expect(s.metadata.name).toBe(`fw-${SERVICE_ID}`);
    expect(s.spec.selector).toEqual({ 'fairway.dev/service-id': SERVICE_ID });
    expect(s.spec.ports).toEqual([{ name: 'serve', port: 8080, targetPort: 8080, protocol: 'TCP' }]);
  });

  it('a gated pod is given to a replica (its job id and admission) and held to its node; other gates stay', () => {
    const pod = {
      spec: { containers: [], schedulingGates: [{ name: PLACEMENT_GATE }, { name: 'other.io/gate' }] },
    };
    expect(assignPatch(pod, job.jobId, '1700000000000', 'n0-0')).toEqual({
      metadata: {
        labels: { 'fairway.dev/job-id': job.jobId },
        annotations: { 'fairway.dev/admission-at': '1700000000000' },
      },
      spec: { nodeSelector: { [HOSTNAME_LABEL]: 'n0-0' }, schedulingGates: [{ name: 'other.io/gate' }] },
    });
    expect(leavingPatch()).toEqual({
      metadata: { annotations: { [ANNOTATION_POD_DELETION_COST]: '-1000' } },
    });
  });

  it('a job that is no replica is none', () => {
    expect(replicaOf({ workload: { container: { image: 'x' } } })).toBeNull();
    expect(replicaOf({})).toBeNull();
  });
});
