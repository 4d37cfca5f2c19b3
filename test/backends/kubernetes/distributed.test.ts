// Multi-pod jobs on plain Kubernetes: one headless Service and one Indexed Job per pod set, pods
// with the Service as subdomain, and an environment every launcher reads that is the same story
// in every pod (one MASTER_ADDR naming rank 0's pod, unique NODE_RANKs, one WORLD_SIZE); retries,
// the disruption policy and the policy's grace on every Job. All of it valid Kubernetes.
import type { V1EnvVar, V1Job } from '@kubernetes/client-node';
import { Job } from 'kubernetes-models/batch/v1';
import { Service } from 'kubernetes-models/v1';
import { describe, expect, it } from 'vitest';
import { RENDEZVOUS_PORT, serviceName } from '../../../src/backends/kubernetes/distributed.js';
import { kubeJobName } from '../../../src/backends/kubernetes/naming.js';
import {
  type JobBuildContext,
  jobObjects,
  jobService,
  type KubeTenant,
  toWireJson,
} from '../../../src/backends/kubernetes/objects.js';
import { type FlavorMapping, parseKubernetesSettings } from '../../../src/backends/kubernetes/settings.js';
import type { BackendJob } from '../../../src/backends/port.js';
import type { PodSetAdmission, PodSetSpec } from '../../../src/core/scheduling/types.js';

const JOB_ID = '0b9d6a2e-3f4c-4e1a-9b7d-2c5e8f1a6b3d';
const settings = parseKubernetesSettings({ flavors: [{ flavor: 'h100', resource: 'nvidia.com/gpu' }] });
const tenant: KubeTenant = {
  id: 'tenant-1',
  slug: 'aurora',
  isolationLevel: 'GUARANTEED',
  egressAllowlist: null,
  maxResources: { 'nvidia.com/gpu': 64 },
};
const ctx: JobBuildContext = {
  namespace: 'fairway-aurora',
  tenant,
  flavors: new Map<string, FlavorMapping>(settings.flavors.map((m) => [m.flavor, m])),
  nodePools: new Map(),
};

function job(
  sets: { name: string; count: number; gpu: number }[],
  over: Partial<BackendJob> = {},
): BackendJob {
  const podSets: PodSetSpec[] = sets.map((s) => ({ name: s.name, count: s.count, perPod: { gpu: s.gpu } }));
  const admitted: PodSetAdmission[] = sets.map((s, i) => ({
    name: s.name,
    flavor: 'h100',
    count: s.count,
    placements: Array.from({ length: s.count }, (_v, k) => ({ node: `n${i}-${k}`, pods: 1 })),
  }));
  return {
    jobId: JOB_ID,
    tenant: tenant.id,
    queue: 'q',
    name: 'llm',
    podSets,
    admission: {
      jobId: JOB_ID,
      queue: 'q',
      at: 1_700_000_000_000,
      podSets: admitted,
      borrowed: false,
      mode: 'fit',
    },
    workload: { container: { image: 'registry.example.com/train:1', command: ['torchrun', 'train.py'] } },
    ...over,
  };
}

/** What pod `index` of `kubeJob` would see: literal values, and the completion index where the downward API
 * reads it. */
function envOfPod(kubeJob: V1Job, index: number): Record<string, string> {
  const env: V1EnvVar[] = kubeJob.spec!.template.spec!.containers[0]!.env ?? [];
  const out: Record<string, string> = {};
  for (const e of env) {
    if (e.value !== undefined) out[e.name] = e.value;
    else if (e.valueFrom?.fieldRef?.fieldPath.includes('job-completion-index')) out[e.name] = String(index);
  }
  return out;
}

/** Every pod of every Job: its hostname (as the Job controller sets it) and environment. */
function pods(jobs: V1Job[]) {
  return jobs.flatMap((j) =>
    Array.from({ length: j.spec!.completions! }, (_v, index) => ({
      hostname: `${j.metadata!.name}-${index}`,
      subdomain: j.spec!.template.spec!.subdomain,
      env: envOfPod(j, index),
    })),
  );
}

describe('multi-pod jobs find their peers', () => {
  it('a 2-pod × 8-GPU torchrun job: one Service, Indexed pods, one consistent environment', () => {
    const j = job([{ name: 'main', count: 2, gpu: 8 }]);
    const [kubeJob, ...rest] = jobObjects(j, ctx, settings);
    expect(rest).toEqual([]);
    expect(kubeJob!.spec!.completionMode).toBe('Indexed');
    const service = jobService(j, ctx)!;
    expect(service.metadata!.name).toBe(serviceName(JOB_ID));
    expect(service.spec!.clusterIP).toBe('None');
    expect(service.spec!.publishNotReadyAddresses).toBe(true);
    // The Service selects exactly this job's pods (their template's labels).
    const labels = kubeJob!.spec!.template.metadata!.labels!;
    for (const [k, v] of Object.entries(service.spec!.selector!)) expect(labels[k]).toBe(v);
    const all = pods([kubeJob!]);
    expect(all.map((p) => p.env.NODE_RANK)).toEqual(['0', '1']);
    for (const p of all) {
      expect(p.subdomain).toBe(service.metadata!.name);
      expect(p.env).toMatchObject({
        MASTER_ADDR: `${kubeJobName(JOB_ID, 0)}-0.${service.metadata!.name}`,
        MASTER_PORT: String(RENDEZVOUS_PORT),
        NNODES: '2',
        PET_NNODES: '2',
        NPROC_PER_NODE: '8',
        PET_NPROC_PER_NODE: '8',
        WORLD_SIZE: '16',
        PET_RDZV_BACKEND: 'c10d',
        PET_RDZV_ENDPOINT: `${kubeJobName(JOB_ID, 0)}-0.${service.metadata!.name}:${RENDEZVOUS_PORT}`,
      });
    }
    // MASTER_ADDR is pod 0's own name under the Service.
    expect(all[0]!.env.MASTER_ADDR).toBe(`${all[0]!.hostname}.${all[0]!.subdomain}`);
    expect(() => new Job(toWireJson(kubeJob!) as never).validate()).not.toThrow();
    expect(() => new Service(toWireJson(service) as never).validate()).not.toThrow();
  });

  it('a launcher and its workers: ranks unique over both pod sets, rank 0 a worker, one WORLD_SIZE', () => {
    const j = job([
      { name: 'launcher', count: 1, gpu: 0 },
      { name: 'worker', count: 3, gpu: 4 },
    ]);
    const built = jobObjects(j, ctx, settings);
    expect(built).toHaveLength(2);
    for (const b of built) expect(b.spec!.completionMode).toBe('Indexed');
    const all = pods(built);
    const ranks = all.map((p) => Number(p.env.NODE_RANK)).sort();
    expect(ranks).toEqual([0, 1, 2, 3]);
    expect(new Set(all.map((p) => p.env.MASTER_ADDR)).size).toBe(1);
    expect(new Set(all.map((p) => p.env.WORLD_SIZE))).toEqual(new Set(['13'])); // 3 × 4 + 1
    expect(new Set(all.map((p) => p.env.NNODES))).toEqual(new Set(['4']));
    const master = all.find((p) => p.env.NODE_RANK === '0')!;
    expect(master.env.MASTER_ADDR).toBe(`${master.hostname}.${master.subdomain}`);
    expect(master.hostname).toBe(`${kubeJobName(JOB_ID, 1)}-0`);
    expect(all.find((p) => p.hostname.startsWith(kubeJobName(JOB_ID, 0)))!.env.NPROC_PER_NODE).toBe('1');
  });

  it('two multi-pod sets: the second has no static NODE_RANK but its offset and the c10d rendezvous', () => {
    const built = jobObjects(
      job([
        { name: 'a', count: 2, gpu: 8 },
        { name: 'b', count: 2, gpu: 8 },
      ]),
      ctx,
      settings,
    );
    const [a, b] = [pods([built[0]!]), pods([built[1]!])];
    expect(a.map((p) => p.env.NODE_RANK)).toEqual(['0', '1']);
    for (const p of b) {
      expect(p.env.NODE_RANK).toBeUndefined();
      expect(p.env.FAIRWAY_NODE_RANK_OFFSET).toBe('2');
      expect(p.env.PET_RDZV_ENDPOINT).toBe(a[0]!.env.PET_RDZV_ENDPOINT);
    }
  });

  it('a one-pod job gets no Service and no rendezvous (its objects are as before)', () => {
    const j = job([{ name: 'main', count: 1, gpu: 8 }]);
    expect(jobService(j, ctx)).toBeNull();
    const [kubeJob] = jobObjects(j, ctx, settings);
    expect(kubeJob!.spec!.completionMode).toBeUndefined();
    expect(kubeJob!.spec!.template.spec!.subdomain).toBeUndefined();
    expect(envOfPod(kubeJob!, 0).MASTER_ADDR).toBeUndefined();
  });

  it("the user's variables cannot override the rendezvous", () => {
    const j = job([{ name: 'main', count: 2, gpu: 8 }], {
      workload: {
        container: { image: 'x:1', env: [{ name: 'MASTER_ADDR', value: 'evil.example.com' }] },
      },
    });
    const env = envOfPod(jobObjects(j, ctx, settings)[0]!, 0);
    expect(env.MASTER_ADDR).toBe(`${kubeJobName(JOB_ID, 0)}-0.${serviceName(JOB_ID)}`);
  });
});

describe('retries, disruptions and grace on every Job', () => {
  it('backoffLimit is maxRetries, disruptions are ignored by the Job controller, the grace is the policy’s', () => {
    const [plain] = jobObjects(job([{ name: 'main', count: 1, gpu: 1 }]), ctx, settings);
    expect(plain!.spec!.backoffLimit).toBe(0);
    expect(plain!.spec!.podFailurePolicy).toEqual({
      rules: [{ action: 'Ignore', onPodConditions: [{ type: 'DisruptionTarget', status: 'True' }] }],
    });
    expect(plain!.spec!.template.spec!.terminationGracePeriodSeconds).toBe(settings.preemptionGraceSeconds);
    const [governed] = jobObjects(
      job([{ name: 'main', count: 1, gpu: 1 }], { maxRetries: 3, graceSeconds: 300 }),
      ctx,
      settings,
    );
    expect(governed!.spec!.backoffLimit).toBe(3);
    expect(governed!.spec!.template.spec!.terminationGracePeriodSeconds).toBe(300);
    expect(() => new Job(toWireJson(governed!) as never).validate()).not.toThrow();
  });
});
