/**
 * The test Kubernetes API server runs the workload controllers of custom kinds (2/3): JobSet and the
 * Kubeflow PyTorchJob, each while its CRD is installed, through @kubernetes/client-node and an informer.
 */
import { type KubernetesObject, makeInformer } from '@kubernetes/client-node';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CRDS,
  type CrdCluster,
  cond,
  jobSet,
  pyTorchJob,
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

describe('JobSet controller', () => {
  it('runs a JobSet: child Jobs and a headless Service, suspend, resume with a changed nodeSelector, completion, GC', async () => {
    await start();
    const informer = makeInformer(t.kc, `/apis/jobset.x-k8s.io/v1alpha2/namespaces/${NS}/jobsets`, () =>
      t.api.list('jobset.x-k8s.io/v1alpha2', 'JobSet', NS),
    );
    const seen: string[] = [];
    informer.on('add', (o: KubernetesObject) => seen.push(`add ${o.metadata?.name}`));
    informer.on('update', (o: any) =>
      seen.push(`update ${o.metadata?.name} ${o.status?.terminalState ?? ''}`),
    );
    informer.on('delete', (o: KubernetesObject) => seen.push(`delete ${o.metadata?.name}`));
    await informer.start();
    await t.api.create(jobSet('train'));
    const pods = await waitFor('4 pods running', () => {
      const p = t.podsWith('jobset.sigs.k8s.io/jobset-name', 'train');
      return p.length === 4 && p.every(running) && p;
    });
    const jobs = t.server.objects('Job', NS);
    expect(jobs.map((j) => j.metadata.name).sort()).toEqual(['train-workers-0', 'train-workers-1']);
    const js = t.server.get('JobSet', NS, 'train');
    const expected = {
      'jobset.sigs.k8s.io/jobset-name': 'train',
      'jobset.sigs.k8s.io/jobset-uid': js.metadata.uid,
      'jobset.sigs.k8s.io/replicatedjob-name': 'workers',
      'jobset.sigs.k8s.io/replicatedjob-replicas': '2',
      'jobset.sigs.k8s.io/job-index': '1',
      'jobset.sigs.k8s.io/restart-attempt': '0',
      'jobset.sigs.k8s.io/global-replicas': '2',
      'jobset.sigs.k8s.io/job-global-index': '1',
    };
    const second = t.server.get('Job', NS, 'train-workers-1');
    expect(second.metadata.labels).toMatchObject(expected);
    expect(second.metadata.annotations).toMatchObject(expected);
    expect(second.spec.template.metadata.labels).toMatchObject(expected);
    expect(second.metadata.ownerReferences).toEqual([
      {
        apiVersion: 'jobset.x-k8s.io/v1alpha2',
        kind: 'JobSet',
        name: 'train',
        uid: js.metadata.uid,
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
    expect(second.spec.completionMode).toBe('Indexed');
    const pod = pods.find((p) => p.spec.hostname === 'train-workers-1-0')!;
    expect(pod.spec.subdomain).toBe('train');
    expect(t.server.get('Service', NS, 'train').spec).toMatchObject({
      clusterIP: 'None',
      selector: { 'jobset.sigs.k8s.io/jobset-name': 'train' },
      publishNotReadyAddresses: true,
    });
    expect(t.server.resolve('train-workers-1-0.train', NS)).toBe(pod.status.podIP);
    await waitFor(
      'ready',
      () => t.server.get('JobSet', NS, 'train').status?.replicatedJobsStatus?.[0]?.ready === 2,
    );
    expect(t.server.get('JobSet', NS, 'train').status.replicatedJobsStatus).toEqual([
      { name: 'workers', ready: 2, succeeded: 0, failed: 0, active: 2, suspended: 0 },
    ]);

    await t.mergePatch({
      apiVersion: js.apiVersion,
      kind: 'JobSet',
      metadata: { name: 'train', namespace: NS },
      spec: { suspend: true },
    });
    await waitFor('pods gone', () => t.podsWith('jobset.sigs.k8s.io/jobset-name', 'train').length === 0);
    expect(t.server.objects('Job', NS).every((j) => j.spec.suspend === true)).toBe(true);
    const suspended = await waitFor('Suspended', () => {
      const s = t.server.get('JobSet', NS, 'train');
      return cond(s, 'Suspended')?.status === 'True' && s.status.replicatedJobsStatus[0].suspended === 2 && s;
    });
    expect(cond(suspended, 'Suspended')).toMatchObject({
      reason: 'SuspendedJobs',
      message: 'jobset is suspended',
    });
    // While suspended (as Kueue does): another node pool, and a shorter run.
    const template = suspended.spec.replicatedJobs[0].template.spec.template;
    template.spec.nodeSelector = { pool: 'b' };
    template.metadata.annotations['fairway.dev/test-run-ms'] = '30';
    await t.api.replace(suspended);
    await t.mergePatch({
      apiVersion: js.apiVersion,
      kind: 'JobSet',
      metadata: { name: 'train', namespace: NS },
      spec: { suspend: false },
    });
    const done = await waitFor(
      'Completed',
      () => {
        const s = t.server.get('JobSet', NS, 'train');
        return cond(s, 'Completed')?.status === 'True' && s;
      },
      5000,
    );
    expect(done.status.terminalState).toBe('Completed');
    expect(cond(done, 'Completed')).toMatchObject({
      reason: 'AllJobsCompleted',
      message: 'jobset completed successfully',
    });
    expect(cond(done, 'Suspended')).toMatchObject({ status: 'False', reason: 'ResumeJobs' });
    expect(done.status.replicatedJobsStatus[0]).toMatchObject({ succeeded: 2, active: 0 });
    const ran = t.podsWith('jobset.sigs.k8s.io/jobset-name', 'train');
    expect(ran.length).toBe(4);
    expect(ran.every((p) => p.spec.nodeName === 'gpu-2' && p.spec.nodeSelector.pool === 'b')).toBe(true);
    expect(t.reasons('train')).toEqual(
      expect.arrayContaining(['SuspendedJobs', 'ResumeJobs', 'AllJobsCompleted']),
    );

    await t.api.delete({
      apiVersion: js.apiVersion,
      kind: 'JobSet',
      metadata: { name: 'train', namespace: NS },
    });
    await waitFor(
      'children gone',
      () => t.server.objects('Job', NS).length === 0 && !t.server.get('Service', NS, 'train'),
    );
    await waitFor('pods gone', () => t.podsWith('jobset.sigs.k8s.io/jobset-name', 'train').length === 0);
    await waitFor('informer saw it', () => seen.includes('delete train'));
    expect(seen[0]).toBe('add train');
    expect(seen).toContain('update train Completed');
    await informer.stop();
  });

  it('fails a JobSet whose child Job fails: at once without a failurePolicy, after maxRestarts with one', async () => {
    await start();
    const failing = (name: string, extra: any = {}) => {
      const js = jobSet(name, extra);
      const rjob = js.spec.replicatedJobs[0];
      rjob.replicas = 1;
      Object.assign(rjob.template.spec, { parallelism: 1, completions: 1 });
      rjob.template.spec.template.metadata.annotations = {
        'fairway.dev/test-run-ms': '20',
        'fairway.dev/test-outcome': 'fail',
      };
      return js;
    };
    await t.api.create(failing('once'));
    await t.api.create(failing('flaky', { failurePolicy: { maxRestarts: 1 } }));
    const once = await waitFor('once Failed', () => cond(t.server.get('JobSet', NS, 'once'), 'Failed'), 5000);
    expect(once).toMatchObject({
      status: 'True',
      reason: 'FailedJobs',
      message: 'jobset failed due to one or more job failures (first failed job: once-workers-0)',
    });
    expect(t.server.get('JobSet', NS, 'once').status.terminalState).toBe('Failed');
    const flaky = await waitFor(
      'flaky Failed',
      () => {
        const s = t.server.get('JobSet', NS, 'flaky');
        return cond(s, 'Failed') && s;
      },
      5000,
    );
    expect(cond(flaky, 'Failed')).toMatchObject({
      reason: 'ReachedMaxRestarts',
      message: 'jobset failed due to reaching max number of restarts (first failed job: flaky-workers-0)',
    });
    expect(flaky.status).toMatchObject({ restarts: 1, restartsCountTowardsMax: 1, terminalState: 'Failed' });
    expect(
      t.server.get('Job', NS, 'flaky-workers-0').metadata.labels['jobset.sigs.k8s.io/restart-attempt'],
    ).toBe('1');
    expect(t.reasons('flaky')).toContain('RestartJobSetFailurePolicyAction');
  });
});

describe('PyTorchJob controller', () => {
  it('runs a PyTorchJob: pods, Services and env, suspend, resume with a changed nodeSelector, success', async () => {
    await start();
    await t.api.create(pyTorchJob('mnist', {}, { 'fairway.dev/test-run-ms': '60000' }));
    const label = 'training.kubeflow.org/job-name';
    await waitFor('3 pods running', () => {
      const p = t.podsWith(label, 'mnist');
      return p.length === 3 && p.every(running);
    });
    const job = t.server.get('PyTorchJob', NS, 'mnist');
    const master = t.server.get('Pod', NS, 'mnist-master-0');
    const worker = t.server.get('Pod', NS, 'mnist-worker-1');
    expect(master.metadata.labels).toMatchObject({
      'training.kubeflow.org/job-name': 'mnist',
      'training.kubeflow.org/operator-name': 'pytorchjob-controller',
      'training.kubeflow.org/replica-type': 'master',
      'training.kubeflow.org/replica-index': '0',
      'training.kubeflow.org/job-role': 'master',
    });
    expect(worker.metadata.labels['training.kubeflow.org/replica-type']).toBe('worker');
    expect(worker.metadata.ownerReferences[0]).toMatchObject({
      kind: 'PyTorchJob',
      name: 'mnist',
      uid: job.metadata.uid,
      controller: true,
    });
    const env = Object.fromEntries(worker.spec.containers[0].env.map((e: any) => [e.name, e.value]));
    expect(env).toEqual({
      PYTHONUNBUFFERED: '1',
      MASTER_PORT: '23456',
      PET_MASTER_PORT: '23456',
      MASTER_ADDR: 'mnist-master-0',
      PET_MASTER_ADDR: 'mnist-master-0',
      WORLD_SIZE: '3',
      RANK: '2',
      PET_NODE_RANK: '2',
      PET_NPROC_PER_NODE: 'auto',
      PET_NNODES: '3',
    });
    expect(worker.spec.initContainers[0].name).toBe('init-pytorch');
    expect(worker.spec.restartPolicy).toBe('Never');
    expect(t.server.get('Service', NS, 'mnist-master-0').spec).toMatchObject({
      clusterIP: 'None',
      ports: [{ name: 'pytorchjob-port', port: 23456 }],
      selector: {
        'training.kubeflow.org/replica-type': 'master',
        'training.kubeflow.org/replica-index': '0',
      },
    });
    expect(t.server.resolve('mnist-master-0', NS)).toBe(master.status.podIP);
    const runningJob = await waitFor('Running', () => {
      const j = t.server.get('PyTorchJob', NS, 'mnist');
      return cond(j, 'Running')?.status === 'True' && j;
    });
    expect(cond(runningJob, 'Created')).toMatchObject({ status: 'True', reason: 'PyTorchJobCreated' });
    expect(runningJob.status.replicaStatuses).toEqual({
      Master: {
        active: 1,
        selector:
          'training.kubeflow.org/job-name=mnist,training.kubeflow.org/operator-name=pytorchjob-controller,training.kubeflow.org/replica-type=master',
      },
      Worker: {
        active: 2,
        selector:
          'training.kubeflow.org/job-name=mnist,training.kubeflow.org/operator-name=pytorchjob-controller,training.kubeflow.org/replica-type=worker',
      },
    });

    await t.mergePatch({
      apiVersion: 'kubeflow.org/v1',
      kind: 'PyTorchJob',
      metadata: { name: 'mnist', namespace: NS },
      spec: { runPolicy: { suspend: true } },
    });
    await waitFor(
      'pods and Services gone',
      () => t.podsWith(label, 'mnist').length === 0 && !t.server.get('Service', NS, 'mnist-master-0'),
    );
    const suspended = await waitFor('Suspended', () => {
      const j = t.server.get('PyTorchJob', NS, 'mnist');
      return cond(j, 'Suspended')?.status === 'True' && j;
    });
    expect(cond(suspended, 'Suspended')).toMatchObject({
      reason: 'PyTorchJobSuspended',
      message: 'PyTorchJob mnist is suspended.',
    });
    expect(cond(suspended, 'Running')).toMatchObject({ status: 'False', reason: 'PyTorchJobSuspended' });
    for (const type of ['Master', 'Worker']) {
      const template = suspended.spec.pytorchReplicaSpecs[type].template;
      template.spec.nodeSelector = { pool: 'b' };
      template.metadata.annotations['fairway.dev/test-run-ms'] = type === 'Master' ? '30' : '60000';
    }
    suspended.spec.runPolicy.suspend = false;
    await t.api.replace(suspended);
    const done = await waitFor(
      'Succeeded',
      () => {
        const j = t.server.get('PyTorchJob', NS, 'mnist');
        return cond(j, 'Succeeded')?.status === 'True' && j;
      },
      5000,
    );
    expect(cond(done, 'Succeeded')).toMatchObject({
      reason: 'PyTorchJobSucceeded',
      message: 'PyTorchJob mnist is successfully completed.',
    });
    expect(cond(done, 'Suspended')).toMatchObject({ status: 'False', reason: 'PyTorchJobResumed' });
    expect(cond(done, 'Running')?.status).toBe('False');
    expect(done.status.completionTime).toBeDefined();
    // cleanPodPolicy None: the workers are left running, all on the new pool.
    const left = t.podsWith(label, 'mnist');
    expect(left.map((p) => `${p.metadata.name} ${p.spec.nodeName} ${p.status.phase}`).sort()).toEqual([
      'mnist-master-0 gpu-2 Succeeded',
      'mnist-worker-0 gpu-2 Running',
      'mnist-worker-1 gpu-2 Running',
    ]);
    expect(t.reasons('mnist')).toEqual(
      expect.arrayContaining(['PyTorchJobSuspended', 'PyTorchJobResumed', 'PyTorchJobSucceeded']),
    );
    await t.api.delete(done);
    await waitFor(
      'GC',
      () => t.podsWith(label, 'mnist').length === 0 && t.server.objects('Service', NS).length === 0,
    );
  });

  it('fails a PyTorchJob as its restart policy says: Never, ExitCode (137 restarts, 1 fails), OnFailure past backoffLimit', async () => {
    await start();
    const failing = { 'fairway.dev/test-run-ms': '20', 'fairway.dev/test-outcome': 'fail' };
    await t.api.create(pyTorchJob('never', {}, failing));
    const never = await waitFor(
      'Failed',
      () => cond(t.server.get('PyTorchJob', NS, 'never'), 'Failed'),
      5000,
    );
    expect(never).toMatchObject({
      status: 'True',
      reason: 'PyTorchJobFailed',
      message: 'PyTorchJob never is failed because 1 Master replica(s) failed.',
    });
    expect(t.server.get('PyTorchJob', NS, 'never').status.replicaStatuses.Master).toMatchObject({
      failed: 1,
    });
    // cleanPodPolicy None leaves the workers running: delete each job once seen, to free the GPUs.
    const gone = async (name: string) => {
      await t.api.delete({
        apiVersion: 'kubeflow.org/v1',
        kind: 'PyTorchJob',
        metadata: { name, namespace: NS },
      });
      await waitFor(`${name} gone`, () => t.podsWith('training.kubeflow.org/job-name', name).length === 0);
    };
    await gone('never');

    const exitCode = pyTorchJob('exitcode', {}, failing);
    exitCode.spec.pytorchReplicaSpecs.Master.restartPolicy = 'ExitCode';
    await t.api.create(exitCode);
    const failed = await waitFor(
      'Failed',
      () => cond(t.server.get('PyTorchJob', NS, 'exitcode'), 'Failed'),
      5000,
    );
    expect(failed.message).toBe('job "exitcode" is failing because "Master" replica(s) failed.');
    await gone('exitcode');

    const oom = pyTorchJob(
      'oom',
      { runPolicy: { backoffLimit: 1 } },
      { 'fairway.dev/test-run-ms': '20', 'fairway.dev/test-outcome': 'oom' },
    );
    oom.spec.pytorchReplicaSpecs.Master.restartPolicy = 'ExitCode';
    await t.api.create(oom);
    const restarted = await waitFor(
      'Restarting',
      () => cond(t.server.get('PyTorchJob', NS, 'oom'), 'Restarting'),
      5000,
    );
    expect(restarted.reason).toBe('PyTorchJobRestarting');
    const backoff = await waitFor(
      'Failed',
      () => cond(t.server.get('PyTorchJob', NS, 'oom'), 'Failed'),
      5000,
    );
    expect(backoff.message).toBe('Job oom has failed because it has reached the specified backoff limit');
    await gone('oom');

    const onFailure = pyTorchJob('crashloop', { runPolicy: { backoffLimit: 0 } }, failing);
    onFailure.spec.pytorchReplicaSpecs.Master.restartPolicy = 'OnFailure';
    await t.api.create(onFailure);
    const crash = await waitFor(
      'Failed',
      () => cond(t.server.get('PyTorchJob', NS, 'crashloop'), 'Failed'),
      5000,
    );
    expect(crash.message).toBe('Job crashloop has failed because it has reached the specified backoff limit');
    await waitFor(
      'pods deleted',
      () => t.podsWith('training.kubeflow.org/job-name', 'crashloop').length === 0,
    );
  });
});
