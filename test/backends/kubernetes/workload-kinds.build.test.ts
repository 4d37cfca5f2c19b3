// A job as a JobSet, a PyTorchJob, a RayJob or a RayCluster: every built object is valid against its
// CRD's schema (the shared CRDs the controllers publish) and its pod templates are the pod sets'
// (Fairway's labels, placement, resources, security context); names fit what each controller derives
// from them.
import { describe, expect, it } from 'vitest';
import { jobObjects } from '../../../src/backends/kubernetes/job-objects.js';
import { ANNOTATION_WORKLOAD } from '../../../src/backends/kubernetes/job-updates.js';
import {
  ANNOTATION_ADMISSION,
  LABEL_JOB_ID,
  LABEL_POD_SET,
  LABEL_TENANT_ID,
  TAINT_DEDICATED,
} from '../../../src/backends/kubernetes/naming.js';
import { PLACEMENT_GATE } from '../../../src/backends/kubernetes/placement-gates.js';
import { CUSTOM_WORKLOADS, workloadObjectName } from '../../../src/backends/kubernetes/workload-kinds.js';
import {
  build,
  CONTAINERS,
  ctx,
  JOB_ID,
  job,
  KINDS,
  kindJob,
  NAME,
  pinned,
  type Sets,
  SHAPES,
  schemaErrors,
  settings,
  tenant,
  wire,
} from './workload-fixtures.js';

describe('the schemas are strict', () => {
  it('a misspelt field and a wrong type are refused', () => {
    const { obj } = build('JOBSET');
    expect(schemaErrors('JOBSET', obj)).toEqual([]);
    const typo = wire(obj);
    typo.spec.replicatedJobs[0].template.spec.parallelizm = 2;
    expect(schemaErrors('JOBSET', typo).join('\n')).toContain('parallelizm');
    const wrong = wire(obj);
    wrong.spec.replicatedJobs[0].replicas = '1';
    expect(schemaErrors('JOBSET', wrong).join('\n')).toContain('must be integer');
    // Down into every kind's pod templates.
    for (const kind of KINDS) {
      const bad = wire(build(kind).obj);
      (CUSTOM_WORKLOADS[kind].podTemplates(bad).at(-1)!.spec!.containers[0] as any).imagePullPolicee =
        'Always';
      expect(schemaErrors(kind, bad).join('\n'), kind).toContain('imagePullPolicee');
    }
  });
});

// --- building ----------------------------------------------------------------------------------

describe.each(KINDS)('%s: the built object', (kind) => {
  it('validates against its CRD, with or without a maximum run time, retries, checkpoints, pinning', () => {
    expect(schemaErrors(kind, build(kind).obj)).toEqual([]);
    const loaded = kindJob(kind, {
      maxRunMs: 3_600_000,
      maxRetries: 2,
      graceSeconds: 120,
      checkpoint: { intervalMs: 600_000, resumable: true },
      workloadType: 'TRAINING',
      latencySensitive: false,
    });
    expect(schemaErrors(kind, build(kind, loaded).obj)).toEqual([]);
    expect(schemaErrors(kind, build(kind, kindJob(kind), pinned).obj)).toEqual([]);
  });

  it('is fw-<jobId>, not suspended, with Fairway’s labels and the admission on the object', () => {
    const { w, obj } = build(kind);
    expect(obj).toMatchObject({ apiVersion: w.apiVersion, kind: w.crdKind });
    expect(obj.metadata.name).toBe(NAME);
    expect(obj.metadata.namespace).toBe('fairway-aurora');
    expect(obj.metadata.labels).toMatchObject({
      'app.kubernetes.io/managed-by': 'fairway',
      [LABEL_JOB_ID]: JOB_ID,
      [LABEL_TENANT_ID]: tenant.id,
    });
    // The object is not one pod set.
    expect(obj.metadata.labels).not.toHaveProperty(LABEL_POD_SET);
    expect(obj.metadata.annotations).toMatchObject({ [ANNOTATION_ADMISSION]: '1700000000000' });
    expect(obj.metadata.annotations?.[ANNOTATION_WORKLOAD]).toMatch(/^[0-9a-f]{16}$/);
    expect(w.isSuspended(obj)).toBe(false);
  });

  it('has one pod template per pod set: the pod set’s labels, placement, resources and security context', () => {
    for (const s of [settings, pinned]) {
      const { w, templates, obj } = build(kind, kindJob(kind), s);
      const inObject = w.podTemplates(obj);
      expect(inObject).toHaveLength(templates.length);
      inObject.forEach((t, i) => {
        const source = templates[i]!;
        const gpus = source.podSet.perPod.gpu ?? 0;
        expect(t.metadata?.labels).toEqual(source.template.metadata.labels);
        expect(t.metadata?.labels).toMatchObject({
          [LABEL_JOB_ID]: JOB_ID,
          [LABEL_POD_SET]: source.template.metadata.labels[LABEL_POD_SET],
        });
        expect(t.metadata?.annotations).toMatchObject({ [ANNOTATION_ADMISSION]: '1700000000000' });
        const spec = t.spec!;
        expect(spec.tolerations).toContainEqual({
          key: TAINT_DEDICATED,
          operator: 'Equal',
          value: tenant.id,
          effect: 'NoSchedule',
        });
        if (s.exactPlacement) expect(spec.schedulingGates).toEqual([{ name: PLACEMENT_GATE }]);
        else
          expect(spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution).toEqual(
            source.template.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution,
          );
        expect(spec.nodeSelector).toEqual(source.template.spec.nodeSelector);
        expect(spec.nodeSelector).toMatchObject({ 'fairway.dev/pool': 'pool-a' });
        expect(spec.securityContext).toMatchObject({
          runAsNonRoot: true,
          seccompProfile: { type: 'RuntimeDefault' },
        });
        expect(spec.serviceAccountName).toBe('fairway-workload');
        expect(spec.automountServiceAccountToken).toBe(false);
        const main = spec.containers[0]!;
        expect(main.name).toBe(w.containerName);
        expect(main.image).toBe(CONTAINERS[kind].image);
        expect(main.securityContext).toEqual({
          allowPrivilegeEscalation: false,
          privileged: false,
          capabilities: { drop: ['ALL'] },
          runAsNonRoot: true,
        });
        expect(main.resources).toEqual({
          requests: { cpu: '4000m', memory: '16384Mi' },
          limits: { cpu: '4000m', memory: '16384Mi', ...(gpus ? { 'nvidia.com/gpu': String(gpus) } : {}) },
        });
        expect(main.env).toContainEqual({ name: 'FAIRWAY_JOB_ID', value: JOB_ID });
      });
    }
  });

  it('fits every name its controller derives from it in 63 characters', () => {
    const { obj } = build(kind);
    const spec = obj.spec as any;
    const dns1035 = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
    const labelValue = /^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$/;
    const derived: string[] = [obj.metadata.name];
    if (kind === 'JOBSET') {
      for (const rj of spec.replicatedJobs) {
        const jobName = `${NAME}-${rj.name}-${rj.replicas - 1}`;
        // The webhook's own check: the longest pod name with its random suffix.
        derived.push(jobName, `${jobName}-${rj.template.spec.completions - 1}-abcde`);
      }
    }
    if (kind === 'PYTORCH_JOB')
      for (const [type, r] of Object.entries<any>(spec.pytorchReplicaSpecs))
        derived.push(`${NAME}-${type.toLowerCase()}-${r.replicas - 1}`);
    if (kind === 'RAY_JOB') {
      expect(NAME.length).toBeLessThanOrEqual(47);
      derived.push(`${NAME}-xk2p9`, `${NAME}-xk2p9-head-svc`);
    }
    if (kind === 'RAY_CLUSTER') {
      expect(NAME.length).toBeLessThanOrEqual(53);
      derived.push(`${NAME}-head-svc`);
    }
    for (const n of derived) {
      expect(n.length, n).toBeLessThanOrEqual(63);
      expect(n, n).toMatch(dns1035);
    }
    const groups = (kind === 'RAY_JOB' ? spec.rayClusterSpec : spec).workerGroupSpecs ?? [];
    for (const g of groups) expect(g.groupName).toMatch(labelValue);
  });
});

describe('JOBSET', () => {
  it('one replicatedJob per pod set: an Indexed Job of its pods, the Jobs’ retries, policy and deadline', () => {
    const j = kindJob('JOBSET', { maxRetries: 3, maxRunMs: 90_500 });
    const { obj } = build('JOBSET', j);
    const [kubeJob] = jobObjects({ ...j, workloadKind: undefined }, ctx, settings);
    const spec = obj.spec as any;
    expect(spec.suspend).toBe(false);
    expect(spec.network).toEqual({ enableDNSHostnames: true, publishNotReadyAddresses: true });
    expect(spec.ttlSecondsAfterFinished).toBe(settings.finishedJobTtlSeconds);
    // "Param Server" is no DNS label: ps<index>.
    expect(spec.replicatedJobs.map((rj: any) => rj.name)).toEqual(['trainer', 'ps1']);
    spec.replicatedJobs.forEach((rj: any, i: number) => {
      const count = SHAPES.JOBSET[i]!.count;
      expect(rj.replicas).toBe(1);
      expect(rj.template.metadata).toBeUndefined();
      expect(rj.template.spec).toMatchObject({
        parallelism: count,
        completions: count,
        completionMode: 'Indexed',
        backoffLimit: 3,
        activeDeadlineSeconds: 91,
        podFailurePolicy: kubeJob!.spec!.podFailurePolicy,
      });
      expect(rj.template.spec.template.spec.restartPolicy).toBe('Never');
    });
    expect(spec.failurePolicy).toEqual({
      maxRestarts: 0,
      rules: [{ name: 'DeadlineExceeded', action: 'FailJobSet', onJobFailureReasons: ['DeadlineExceeded'] }],
    });
    expect((build('JOBSET').obj.spec as any).failurePolicy).toBeUndefined();
  });

  it('the pods get the launcher environment, pointing at the JobSet’s pod hostnames', () => {
    const spec = build('JOBSET').obj.spec as any;
    const envOf = (i: number) =>
      Object.fromEntries(
        spec.replicatedJobs[i].template.spec.template.spec.containers[0].env.map((e: any) => [
          e.name,
          e.value,
        ]),
      );
    for (const i of [0, 1])
      expect(envOf(i)).toMatchObject({
        MASTER_ADDR: `${NAME}-trainer-0-0.${NAME}`,
        NNODES: '6',
        WORLD_SIZE: '34',
        PET_RDZV_ENDPOINT: `${NAME}-trainer-0-0.${NAME}:29500`,
      });
    expect(envOf(1)).toMatchObject({ FAIRWAY_NODE_RANK_OFFSET: '4' });
  });

  it('pod set names that do not fit the pod names are replaced, all of them when one would repeat', () => {
    const names = (sets: Sets[]) =>
      (build('JOBSET', job(sets)).obj.spec as any).replicatedJobs.map((rj: any) => rj.name);
    expect(names([{ name: 'a-very-long-name', count: 2, gpu: 1 }])).toEqual(['ps0']);
    // `<fw-uuid>-<name>-0-<last index>-abcde`: 13 characters fit up to 10 pods, not 11.
    expect(names([{ name: 'thirteenchars', count: 10, gpu: 1 }])).toEqual(['thirteenchars']);
    expect(names([{ name: 'thirteenchars', count: 11, gpu: 1 }])).toEqual(['ps0']);
    expect(
      names([
        { name: 'ps1', count: 1, gpu: 1 },
        { name: 'Workers', count: 1, gpu: 1 },
      ]),
    ).toEqual(['ps0', 'ps1']);
  });
});

describe('PYTORCH_JOB', () => {
  it('Master and Worker, the runPolicy of the job, nprocPerNode = GPUs per pod', () => {
    const { obj } = build('PYTORCH_JOB', kindJob('PYTORCH_JOB', { maxRunMs: 7_200_000 }));
    const spec = obj.spec as any;
    expect(spec.nprocPerNode).toBe('8');
    expect(spec.runPolicy).toEqual({
      suspend: false,
      backoffLimit: 0,
      cleanPodPolicy: 'Running',
      ttlSecondsAfterFinished: settings.finishedJobTtlSeconds,
      activeDeadlineSeconds: 7200,
    });
    expect(Object.keys(spec.pytorchReplicaSpecs)).toEqual(['Master', 'Worker']);
    expect(spec.pytorchReplicaSpecs.Master).toMatchObject({ replicas: 1, restartPolicy: 'Never' });
    expect(spec.pytorchReplicaSpecs.Worker).toMatchObject({ replicas: 3, restartPolicy: 'Never' });
    for (const r of Object.values<any>(spec.pytorchReplicaSpecs)) {
      expect(r.template.spec.restartPolicy).toBe('Never');
      expect(r.template.spec.containers[0].ports).toEqual([
        { name: 'pytorchjob-port', containerPort: 29500, protocol: 'TCP' },
      ]);
      // The operator gives the rendezvous environment itself.
      expect(r.template.spec.containers[0].env.map((e: any) => e.name)).not.toContain('MASTER_ADDR');
    }
  });

  it('with retries the containers restart in place, counted by backoffLimit; a lone master has no Worker', () => {
    const spec = build('PYTORCH_JOB', kindJob('PYTORCH_JOB', { maxRetries: 2 })).obj.spec as any;
    expect(spec.runPolicy.backoffLimit).toBe(2);
    expect(spec.pytorchReplicaSpecs.Master.restartPolicy).toBe('OnFailure');
    expect(spec.pytorchReplicaSpecs.Master.template.spec.restartPolicy).toBe('OnFailure');
    const alone = build('PYTORCH_JOB', job([{ name: 'master', count: 1, gpu: 0 }])).obj;
    expect(Object.keys((alone.spec as any).pytorchReplicaSpecs)).toEqual(['Master']);
    expect(alone.spec).not.toHaveProperty('nprocPerNode');
    expect(schemaErrors('PYTORCH_JOB', alone)).toEqual([]);
  });
});

describe('RAY_JOB and RAY_CLUSTER', () => {
  it('a RayJob: the command is its entrypoint, the head and fixed-size worker groups its cluster', () => {
    const { obj } = build('RAY_JOB', kindJob('RAY_JOB', { maxRetries: 1, maxRunMs: 60_000 }));
    const spec = obj.spec as any;
    expect(spec).toMatchObject({
      entrypoint: `python train.py --name 'it'\\''s a run' --lr=0.1`,
      submissionMode: 'HTTPMode',
      shutdownAfterJobFinishes: true,
      ttlSecondsAfterFinished: 0,
      backoffLimit: 1,
      activeDeadlineSeconds: 60,
      suspend: false,
    });
    expect(spec.rayClusterSpec.headGroupSpec.rayStartParams).toEqual({});
    expect(spec.rayClusterSpec.workerGroupSpecs).toMatchObject([
      { groupName: 'gpu-workers', replicas: 2, minReplicas: 2, maxReplicas: 2, rayStartParams: {} },
    ]);
    expect(spec.rayClusterSpec).not.toHaveProperty('enableInTreeAutoscaling');
    // KubeRay runs `ray start` in the container; a command of ours would run after it in every pod.
    for (const t of CUSTOM_WORKLOADS.RAY_JOB.podTemplates(obj)) {
      expect(t.spec!.containers[0]!.command).toBeUndefined();
      expect(t.spec!.containers[0]!.args).toBeUndefined();
    }
  });

  it('a RayCluster: the same cluster, open-ended; worker groups named after DNS-label pod sets', () => {
    const { obj } = build('RAY_CLUSTER');
    const spec = obj.spec as any;
    expect(spec.suspend).toBe(false);
    expect(spec).not.toHaveProperty('entrypoint');
    expect(spec.headGroupSpec.template.metadata.labels[LABEL_POD_SET]).toBe('head');
    expect(spec.workerGroupSpecs.map((g: any) => [g.groupName, g.replicas])).toEqual([
      ['gpu-workers', 2],
      ['ps2', 1],
    ]);
  });
});

it('a job id that does not make a short DNS name is hashed to the same length', () => {
  expect(workloadObjectName(JOB_ID)).toBe(NAME);
  const long = workloadObjectName('Job_With_A_Very_Long_Identifier_That_Is_Not_A_UUID');
  expect(long).toMatch(/^fw-[0-9a-f]{36}$/);
  expect(workloadObjectName('Job_With_A_Very_Long_Identifier_That_Is_Not_A_UUID')).toBe(long);
});
