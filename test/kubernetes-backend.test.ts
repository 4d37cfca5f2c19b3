// FAIRWAY_BACKEND=kubernetes end to end against the test API server: every object Fairway
// writes is validated there with the Kubernetes OpenAPI schemas (kubernetes-models), and the
// server's Job controller, scheduler and kubelet run what Fairway creates.
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, gpuNode, startKubeApp, type KubeTestApp } from './helpers/kube-app.js';

const SUBMIT = `mutation($in: SubmitJobInput!) { submitJob(input: $in) { id state } }`;
const JOB = `query($id: ID!) { node(id: $id) { ... on Job { id state exitReason events(first: 50) { edges { node { type reason message } } } } } }`;

let t: KubeTestApp | null = null;
afterEach(async () => {
  await t?.close();
  t = null;
});

const decode = (globalId: string) => Buffer.from(globalId, 'base64').toString().split(':')[1]!;
const jobsOf = (k: KubeTestApp, jobId: string) => k.kube.objects('Job').filter((j) => j.metadata.labels?.['fairway.dev/job-id'] === jobId);

async function submit(k: KubeTestApp, input: Record<string, unknown>, who: [string, 'TENANT_ADMIN' | 'MEMBER'] = ['aurora-research', 'MEMBER']) {
  const res = await k.gql(k.token(...who), SUBMIT, { in: { name: 'train', podSets: [{ gpusPerPod: 1 }], expectedDurationSeconds: 3600, ...input } });
  return res;
}

async function stateOf(k: KubeTestApp, id: string, who: [string, 'TENANT_ADMIN' | 'MEMBER'] = ['aurora-research', 'TENANT_ADMIN']) {
  const res = await k.gql(k.token(...who), JOB, { id });
  return res.data?.node as { state: string; exitReason: string | null; events: { edges: { node: { type: string; reason: string | null; message: string | null } }[] } };
}

const IMAGE = 'nvcr.io/nvidia/pytorch:24.05-py3';

describe('Kubernetes backend, end to end', () => {
  it('gives each tenant a namespace with its isolation objects, and the nodes become the scheduler’s nodes', async () => {
    t = await startKubeApp();
    const ns = t.kube.get('Namespace', undefined, 'fairway-aurora-research');
    expect(ns?.metadata.labels?.['pod-security.kubernetes.io/enforce']).toBe('restricted');
    for (const kind of ['ResourceQuota', 'LimitRange', 'NetworkPolicy', 'ServiceAccount']) expect(t.kube.objects(kind, 'fairway-aurora-research').length, kind).toBeGreaterThan(0);
    // The quota is the most aurora's queue could hold: 16 nominal H100s, no borrowing limit → the whole 16 of the cluster.
    const quota = t.kube.objects('ResourceQuota', 'fairway-aurora-research')[0];
    expect(quota.spec.hard['requests.nvidia.com/gpu']).toBe('16');
    expect(t.kube.invalid).toEqual([]);
    const nodes = await t.gql(t.token(null, 'PLATFORM_ADMIN'), `{ nodePools { name nodes { name gpus unschedulable } } }`);
    const names = (nodes.data?.nodePools as { nodes: { name: string }[] }[]).flatMap((p) => p.nodes.map((n) => n.name)).sort();
    expect(names).toEqual(['gpu-a100-mig-1', 'gpu-h100-1', 'gpu-h100-2']);
  });

  it('turns a submitJob into a validated batch/v1 Job and brings it back as SUCCEEDED', async () => {
    t = await startKubeApp();
    const res = await submit(t, { container: { image: IMAGE, command: ['python', 'train.py'], env: [{ name: 'EPOCHS', value: '3' }] } });
    expect(res.errors).toBeUndefined();
    const id = res.data!.submitJob.id as string;
    const jobId = decode(id);
    const [job] = await eventually(() => jobsOf(t!, jobId).length > 0 && jobsOf(t!, jobId), 'the Job object');
    expect(job.metadata.namespace).toBe('fairway-aurora-research');
    const pod = job.spec.template.spec;
    expect(pod.containers[0].image).toBe(IMAGE);
    expect(pod.containers[0].resources.limits['nvidia.com/gpu']).toBe('1');
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(pod.containers[0].securityContext).toMatchObject({ allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } });
    await eventually(async () => (await stateOf(t!, id)).state === 'SUCCEEDED', 'SUCCEEDED');
    const events = (await stateOf(t!, id)).events.edges.map((e) => e.node.type);
    expect(events).toEqual(['SUBMITTED', 'ADMITTED', 'STARTED', 'SUCCEEDED']);
    expect(t.kube.invalid).toEqual([]);
    // Exactly one create for the job (plus nothing else written to Jobs).
    expect(t.kube.writes.filter((w) => w.kind === 'Job' && w.name === job.metadata.name).map((w) => w.verb)).toEqual(['create']);
  });
});
