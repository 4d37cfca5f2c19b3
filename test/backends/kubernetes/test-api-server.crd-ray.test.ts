/**
 * The test Kubernetes API server runs the workload controllers of custom kinds (3/3): KubeRay's
 * RayCluster and RayJob; and the pods every such controller makes go through admission (Pod Security,
 * quota) and the scheduler (scheduling gates) like any other.
 */
import { afterEach, describe, expect, it } from 'vitest';
import {
  CRDS,
  type CrdCluster,
  cond,
  jobSet,
  pyTorchJob,
  rayClusterSpec,
  running,
  startCrdCluster,
} from '../../helpers/kube-api-server/crd-fixtures.js';
import { NS, waitFor } from '../../helpers/kube-api-server/fixtures.js';

let t: CrdCluster;

const start = async (crds: string | false = CRDS) => {
  t = await startCrdCluster(crds);
};

afterEach(async () => {
  expect(t.server.invalid).toEqual([]);
  expect(t.server.controllerProblems).toEqual([]);
  await t.server.close();
});

describe('RayCluster and RayJob controllers', () => {
  it('runs a RayCluster: head and workers, the head Service, ready, suspend, resume with a changed nodeSelector, eviction, GC', async () => {
    await start();
    await t.api.create({
      apiVersion: 'ray.io/v1',
      kind: 'RayCluster',
      metadata: { name: 'rc', namespace: NS },
      spec: rayClusterSpec(),
    } as any);
    const ready = await waitFor(
      'ready',
      () => {
        const rc = t.server.get('RayCluster', NS, 'rc');
        return rc?.status?.state === 'ready' && rc;
      },
      5000,
    );
    expect(ready.status).toMatchObject({
      readyWorkerReplicas: 2,
      availableWorkerReplicas: 2,
      desiredWorkerReplicas: 2,
      minWorkerReplicas: 0,
      maxWorkerReplicas: 4,
      desiredCPU: '3',
      desiredMemory: '3Gi',
      desiredGPU: '2',
      head: { serviceName: 'rc-head-svc' },
      endpoints: { client: '10001', dashboard: '8265', 'gcs-server': '6379', metrics: '8080', serve: '8000' },
    });
    expect(cond(ready, 'HeadPodReady')).toMatchObject({ status: 'True', reason: 'HeadPodRunningAndReady' });
    expect(cond(ready, 'RayClusterProvisioned')).toMatchObject({
      status: 'True',
      reason: 'AllPodRunningAndReadyFirstTime',
    });
    const pods = t.podsWith('ray.io/cluster', 'rc');
    const head = pods.find((p) => p.metadata.labels['ray.io/node-type'] === 'head')!;
    const workers = pods.filter((p) => p.metadata.labels['ray.io/node-type'] === 'worker');
    expect(head.metadata.name).toMatch(/^rc-head-[a-z0-9]{5}$/);
    expect(workers.map((p) => p.metadata.name)).toEqual([
      expect.stringMatching(/^rc-gpu-worker-[a-z0-9]{5}$/),
      expect.stringMatching(/^rc-gpu-worker-/),
    ]);
    expect(head.metadata.labels).toMatchObject({
      'ray.io/cluster': 'rc',
      'ray.io/group': 'headgroup',
      'ray.io/is-ray-node': 'yes',
      'ray.io/identifier': 'rc-head',
    });
    expect(workers[0].metadata.labels).toMatchObject({ 'ray.io/node-type': 'worker', 'ray.io/group': 'gpu' });
    expect(ready.status.head.podName).toBe(head.metadata.name);
    const env = Object.fromEntries(
      workers[0].spec.containers[0].env.map((e: any) => [e.name, e.value ?? e.valueFrom.fieldRef.fieldPath]),
    );
    expect(env).toMatchObject({
      FQ_RAY_IP: `rc-head-svc.${NS}.svc.cluster.local`,
      RAY_ADDRESS: `rc-head-svc.${NS}.svc.cluster.local:6379`,
      RAY_CLUSTER_NAME: "metadata.labels['ray.io/cluster']",
      RAY_USAGE_STATS_KUBERAY_IN_USE: '1',
    });
    expect(workers[0].spec.initContainers[0].name).toBe('wait-gcs-ready');
    expect(t.server.get('Service', NS, 'rc-head-svc').spec).toMatchObject({
      clusterIP: 'None',
      selector: { 'ray.io/cluster': 'rc', 'ray.io/node-type': 'head' },
    });
    expect(t.server.resolve(`rc-head-svc.${NS}.svc.cluster.local`)).toBe(head.status.podIP);

    // A disruption: the evicted worker is replaced.
    t.server.evict(NS, workers[0].metadata.name);
    await waitFor('replaced', () => {
      const now = t
        .podsWith('ray.io/group', 'gpu')
        .filter((p) => !p.metadata.deletionTimestamp && running(p));
      return now.length === 2 && !now.some((p) => p.metadata.name === workers[0].metadata.name);
    });

    await t.mergePatch({
      apiVersion: 'ray.io/v1',
      kind: 'RayCluster',
      metadata: { name: 'rc', namespace: NS },
      spec: { suspend: true },
    });
    const suspended = await waitFor('suspended', () => {
      const rc = t.server.get('RayCluster', NS, 'rc');
      return rc.status.state === 'suspended' && rc;
    });
    expect(t.podsWith('ray.io/cluster', 'rc').filter((p) => !p.metadata.deletionTimestamp)).toEqual([]);
    expect(cond(suspended, 'RayClusterSuspended')?.status).toBe('True');
    expect(cond(suspended, 'RayClusterSuspending')?.status).toBe('False');
    await waitFor('pods gone', () => t.podsWith('ray.io/cluster', 'rc').length === 0);
    suspended.spec.workerGroupSpecs[0].template.spec.nodeSelector = { pool: 'b' };
    suspended.spec.suspend = false;
    await t.api.replace(suspended);
    const resumed = await waitFor(
      'ready again',
      () => {
        const rc = t.server.get('RayCluster', NS, 'rc');
        return rc.status.state === 'ready' && rc;
      },
      5000,
    );
    expect(cond(resumed, 'RayClusterSuspended')?.status).toBe('False');
    expect(t.podsWith('ray.io/group', 'gpu').map((p) => p.spec.nodeName)).toEqual(['gpu-2', 'gpu-2']);
    expect(t.reasons('rc')).toEqual(
      expect.arrayContaining(['CreatedHeadPod', 'CreatedWorkerPod', 'DeletedPod']),
    );

    await t.api.delete(resumed);
    await waitFor(
      'GC',
      () => t.podsWith('ray.io/cluster', 'rc').length === 0 && !t.server.get('Service', NS, 'rc-head-svc'),
    );
  });

  it('runs a RayJob on its own RayCluster: suspend deletes the cluster, resume makes a new one, success shuts it down', async () => {
    await start();
    const runMs = (ms: string) => [{ name: 'FAIRWAY_TEST_RUN_MS', value: ms }];
    await t.api.create({
      apiVersion: 'ray.io/v1',
      kind: 'RayJob',
      metadata: { name: 'rj', namespace: NS, labels: { team: 'acme' } },
      spec: {
        entrypoint: 'python train.py',
        shutdownAfterJobFinishes: true,
        rayClusterSpec: rayClusterSpec(runMs('60000')),
      },
    } as any);
    const started = await waitFor(
      'RUNNING',
      () => {
        const rj = t.server.get('RayJob', NS, 'rj');
        return rj?.status?.jobStatus === 'RUNNING' && rj;
      },
      5000,
    );
    const first: string = started.status.rayClusterName;
    expect(first).toMatch(/^rj-[a-z0-9]{5}$/);
    expect(started.status).toMatchObject({
      jobDeploymentStatus: 'Running',
      dashboardURL: `${first}-head-svc.${NS}.svc.cluster.local:8265`,
      message: 'Job is currently running.',
      rayClusterStatus: { state: 'ready' },
    });
    expect(started.status.jobId).toMatch(/^rj-[a-z0-9]{5}$/);
    expect(started.metadata.finalizers).toEqual(['ray.io/rayjob-finalizer']);
    const cluster = t.server.get('RayCluster', NS, first);
    expect(cluster.metadata.labels).toEqual({
      team: 'acme',
      'ray.io/originated-from-cr-name': 'rj',
      'ray.io/originated-from-crd': 'RayJob',
      'ray.io/job-submission-mode': 'K8sJobMode',
    });
    expect(cluster.metadata.ownerReferences[0]).toMatchObject({
      kind: 'RayJob',
      name: 'rj',
      controller: true,
    });

    await t.mergePatch({
      apiVersion: 'ray.io/v1',
      kind: 'RayJob',
      metadata: { name: 'rj', namespace: NS },
      spec: { suspend: true },
    });
    const suspended = await waitFor('Suspended', () => {
      const rj = t.server.get('RayJob', NS, 'rj');
      return rj.status.jobDeploymentStatus === 'Suspended' && rj;
    });
    expect(t.server.get('RayCluster', NS, first)).toBeUndefined();
    expect(suspended.status.rayClusterName).toBeUndefined();
    await waitFor('pods gone', () => t.podsWith('ray.io/cluster', first).length === 0);
    const spec = suspended.spec.rayClusterSpec;
    spec.workerGroupSpecs[0].template.spec.nodeSelector = { pool: 'b' };
    spec.headGroupSpec.template.spec.containers[0].env = runMs('300');
    suspended.spec.suspend = false;
    await t.api.replace(suspended);
    const again = await waitFor(
      'RUNNING again',
      () => {
        const rj = t.server.get('RayJob', NS, 'rj');
        return rj.status.jobStatus === 'RUNNING' && rj;
      },
      5000,
    );
    const second: string = again.status.rayClusterName;
    expect(second).not.toBe(first);
    expect(
      t
        .podsWith('ray.io/cluster', second)
        .filter((p) => p.metadata.labels['ray.io/group'] === 'gpu')
        .map((p) => p.spec.nodeName),
    ).toEqual(['gpu-2', 'gpu-2']);
    const done = await waitFor(
      'Complete',
      () => {
        const rj = t.server.get('RayJob', NS, 'rj');
        return rj.status.jobDeploymentStatus === 'Complete' && rj;
      },
      5000,
    );
    expect(done.status).toMatchObject({
      jobStatus: 'SUCCEEDED',
      message: 'Job finished successfully.',
      succeeded: 1,
      failed: 0,
    });
    expect(done.status.endTime).toBeDefined();
    expect(done.status.rayJobInfo.startTime).toBeDefined();
    await waitFor('cluster shut down', () => !t.server.get('RayCluster', NS, second));
    expect(t.reasons('rj')).toEqual(expect.arrayContaining(['CreatedRayCluster', 'DeletedRayCluster']));
    await t.api.delete(done);
    await waitFor('RayJob gone', () => !t.server.get('RayJob', NS, 'rj'));
  });

  it('fails a RayJob whose job fails, and refuses an invalid one (ValidationFailed)', async () => {
    await start();
    await t.api.create({
      apiVersion: 'ray.io/v1',
      kind: 'RayJob',
      metadata: { name: 'broken', namespace: NS },
      spec: {
        entrypoint: 'python fail.py',
        rayClusterSpec: rayClusterSpec([
          { name: 'FAIRWAY_TEST_RUN_MS', value: '20' },
          { name: 'FAIRWAY_TEST_OUTCOME', value: 'fail' },
        ]),
      },
    } as any);
    const failed = await waitFor(
      'Failed',
      () => {
        const rj = t.server.get('RayJob', NS, 'broken');
        return rj?.status?.jobDeploymentStatus === 'Failed' && rj;
      },
      5000,
    );
    expect(failed.status).toMatchObject({ jobStatus: 'FAILED', reason: 'AppFailed', failed: 1 });
    expect(failed.status.message).toMatch(/^Job entrypoint command failed with exit code 1/);
    // Without shutdownAfterJobFinishes the cluster stays.
    expect(t.server.get('RayCluster', NS, failed.status.rayClusterName)).toBeDefined();

    await t.api.create({
      apiVersion: 'ray.io/v1',
      kind: 'RayJob',
      metadata: { name: 'paused', namespace: NS },
      spec: { entrypoint: 'x', suspend: true, rayClusterSpec: rayClusterSpec() },
    } as any);
    const invalid = await waitFor('ValidationFailed', () => {
      const rj = t.server.get('RayJob', NS, 'paused');
      return rj?.status?.jobDeploymentStatus === 'ValidationFailed' && rj;
    });
    expect(invalid.status).toMatchObject({
      reason: 'ValidationFailed',
      message:
        'The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended',
    });
  });
});

describe('pods of custom workloads', () => {
  it('sends the pods controllers make through admission and the scheduler: Pod Security, quota, scheduling gates', async () => {
    await start();
    await t.mergePatch({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: NS, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
    });
    // The Training Operator's init container has no securityContext: "restricted" refuses the workers.
    await t.api.create(pyTorchJob('strict'));
    await waitFor('the master runs', () =>
      running(t.server.get('Pod', NS, 'strict-master-0') ?? { status: {} }),
    );
    await waitFor('refused', () => t.reasons('strict').includes('FailedCreate'));
    expect(t.server.get('Pod', NS, 'strict-worker-0')).toBeUndefined();
    expect(t.server.controllerProblems[0]).toMatch(
      /^pods "strict-worker-0" is forbidden: violates PodSecurity "restricted:latest": .*"init-pytorch"/,
    );
    t.server.controllerProblems.length = 0;
    await t.api.delete({
      apiVersion: 'kubeflow.org/v1',
      kind: 'PyTorchJob',
      metadata: { name: 'strict', namespace: NS },
    });
    await waitFor('gone', () => t.podsWith('training.kubeflow.org/job-name', 'strict').length === 0);

    // A quota of two pods: the RayCluster's second worker is refused (ReplicaFailure), then made once room frees.
    await t.api.create({
      apiVersion: 'v1',
      kind: 'ResourceQuota',
      metadata: { name: 'pods', namespace: NS },
      spec: { hard: { pods: '2' } },
    } as any);
    await t.api.create({
      apiVersion: 'ray.io/v1',
      kind: 'RayCluster',
      metadata: { name: 'small', namespace: NS },
      spec: rayClusterSpec(),
    } as any);
    const failing = await waitFor('ReplicaFailure', () =>
      cond(t.server.get('RayCluster', NS, 'small'), 'ReplicaFailure'),
    );
    expect(failing).toMatchObject({ status: 'True', reason: 'FailedCreateWorkerPod' });
    expect(failing.message).toMatch(/exceeded quota: pods/);
    expect(t.server.controllerProblems.length).toBeGreaterThan(0);
    t.server.controllerProblems.length = 0;
    t.server.remove('ResourceQuota', NS, 'pods');
    await waitFor('ready', () => t.server.get('RayCluster', NS, 'small').status.state === 'ready', 5000);
    expect(cond(t.server.get('RayCluster', NS, 'small'), 'ReplicaFailure')).toBeUndefined();

    // Scheduling gates in a JobSet's template: the pods wait until something removes the gate.
    const gated = jobSet('gated');
    Object.assign(gated.spec.replicatedJobs[0], { replicas: 1 });
    gated.spec.replicatedJobs[0].template.spec.template.spec.schedulingGates = [{ name: 'example.com/wait' }];
    await t.api.create(gated);
    const waiting = await waitFor('gated pods', () => {
      const p = t.podsWith('jobset.sigs.k8s.io/jobset-name', 'gated');
      return p.length === 2 && p.every((x) => cond(x, 'PodScheduled')?.reason === 'SchedulingGated') && p;
    });
    for (const p of waiting)
      await t.mergePatch({
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: p.metadata.name, namespace: NS },
        spec: { schedulingGates: null },
      });
    await waitFor('running', () => t.podsWith('jobset.sigs.k8s.io/jobset-name', 'gated').every(running));
  });

  it('gives PyTorchJob workers the init container an operator configures (--pytorch-init-container-template-file)', async () => {
    t = await startCrdCluster(CRDS, {
      pytorchInitContainerTemplate: {
        name: 'init-pytorch',
        image: 'registry.example/tools:1',
        securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] } },
        command: ['sh', '-c', 'until nslookup {{.MasterAddr}}; do sleep 2; done'],
      },
    });
    await t.mergePatch({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: NS, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } },
    });
    await t.api.create(pyTorchJob('allowed'));
    await waitFor('3 pods', () => t.podsWith('training.kubeflow.org/job-name', 'allowed').length === 3);
    expect(t.server.get('Pod', NS, 'allowed-worker-1').spec.initContainers[0]).toMatchObject({
      image: 'registry.example/tools:1',
      command: ['sh', '-c', 'until nslookup allowed-master-0; do sleep 2; done'],
    });
  });
});
