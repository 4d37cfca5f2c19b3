/**
 * The RayJob controller of KubeRay (ray-operator/controllers/ray/rayjob_controller.go), while the RayJob
 * and RayCluster CRDs are installed. jobDeploymentStatus goes '' → Initializing (finalizer
 * ray.io/rayjob-finalizer, status.jobId and rayClusterName `<name>-xxxxx`, startTime) → Running once the
 * RayCluster (owned by the RayJob, labelled ray.io/originated-from-cr-name / originated-from-crd: RayJob /
 * job-submission-mode, the RayJob's labels and annotations, spec = rayClusterSpec) is `ready`
 * (dashboardURL `<cluster>-head-svc.<ns>.svc.cluster.local:8265`) → Complete or Failed (reason AppFailed)
 * as the Ray job ends; deadlines fail it (DeadlineExceeded, PreRunningDeadlineExceeded); backoffLimit
 * retries it (Retrying: the cluster is deleted and made again); spec.suspend: Suspending (the RayCluster is
 * deleted) → Suspended; resuming → '' again (a new cluster). Complete / Failed with
 * shutdownAfterJobFinishes: the RayCluster is deleted ttlSecondsAfterFinished after endTime. status also
 * has jobStatus (PENDING / RUNNING / SUCCEEDED / FAILED), message, rayJobInfo {startTime, endTime},
 * rayClusterStatus, succeeded / failed counts, endTime; a deleted RayJob loses its finalizer at once. An
 * invalid RayJob (name > 47 or not a DNS-1035 label, suspend without shutdownAfterJobFinishes, neither
 * rayClusterSpec nor clusterSelector…) is ValidationFailed with the operator's message.
 *
 * The Ray job itself is simulated, as the dashboard would report it: it starts when the cluster is ready and
 * its head pod runs, runs for the head container's FAIRWAY_TEST_RUN_MS (or the annotation
 * `fairway.dev/test-run-ms` of the RayJob or the head template; default: the kubelet's defaultRunMs, i.e.
 * until stopped unless set) and ends as its
 * FAIRWAY_TEST_OUTCOME (or `fairway.dev/test-outcome`) says: `fail` / `oom` → FAILED, else SUCCEEDED. A head
 * pod that stops running under it fails it. No submitter Kubernetes Job is created (K8sJobMode's submitter
 * is not modelled; every mode behaves like HTTPMode), and clusterSelector uses an existing cluster.
 */
import { ANNOTATION_OUTCOME, ANNOTATION_RUN_MS, type Cluster } from '../cluster.js';
import { dns1035LabelErrors } from '../names.js';
import { kubeTime } from '../store.js';
import { envValue, ownerReference, podReady, remove, same, writeStatus } from './common.js';
import { headServiceName, RAY_CLUSTER, RAY_NODE_TYPE } from './raycluster-pods.js';

const FINALIZER = 'ray.io/rayjob-finalizer';
const SOURCE = { component: 'rayjob-controller' };
const TERMINAL_DEPLOYMENT = ['Complete', 'Failed', 'ValidationFailed'];

interface Run {
  startedAt?: number;
  endedAt?: number;
  status: 'PENDING' | 'RUNNING' | 'SUCCEEDED' | 'FAILED';
  message: string;
}

const PENDING_MESSAGE =
  'Job has not started yet. It may be waiting for resources (CPUs, GPUs, memory, custom resources) to become available. It may be waiting for the runtime environment to be set up.';

function suffix(): string {
  const alphabet = 'bcdfghjklmnpqrstvwxz2456789';
  return Array.from({ length: 5 }, () => alphabet[Math.floor(Math.random() * alphabet.length)]).join('');
}

/** validateRayJob (ValidateRayJobMetadata / ValidateRayJobSpec, the rules a test meets), or undefined. */
function validationError(rj: any): [string, string] | undefined {
  const name: string = rj.metadata.name;
  const spec = rj.spec ?? {};
  const selector = spec.clusterSelector && Object.keys(spec.clusterSelector).length > 0;
  if (name.length > 47)
    return [
      'InvalidRayJobMetadata',
      'The RayJob metadata is invalid: RayJob name should be no more than 47 characters',
    ];
  const dns = dns1035LabelErrors(name);
  if (dns.length)
    return [
      'InvalidRayJobMetadata',
      `The RayJob metadata is invalid: RayJob name should be a valid DNS1035 label: [${dns.join(' ')}]`,
    ];
  const invalid = (why: string): [string, string] => [
    'InvalidRayJobSpec',
    `The RayJob spec is invalid: ${why}`,
  ];
  if (spec.suspend === true && spec.shutdownAfterJobFinishes !== true)
    return invalid('a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended');
  if ((spec.ttlSecondsAfterFinished ?? 0) < 0)
    return invalid('TTLSecondsAfterFinished must be a non-negative integer');
  if (spec.suspend === true && selector)
    return invalid("the ClusterSelector mode doesn't support the suspend operation");
  if (!spec.rayClusterSpec && !selector)
    return invalid('one of RayClusterSpec or ClusterSelector must be set');
  return undefined;
}

const withoutTime = (s: any) => {
  const { lastUpdateTime: _t, ...rest } = s ?? {};
  return rest;
};

export class RayJobController {
  /** The simulated Ray jobs, by jobId. */
  private readonly runs = new Map<string, Run>();

  constructor(private readonly c: Cluster) {}

  pass(now: number): void {
    if (!this.c.store.crds.served('RayJob') || !this.c.store.crds.served('RayCluster')) return;
    for (const rj of this.c.store.list('RayJob')) this.sync(rj, now);
  }

  private event(rj: any, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.c.events.record(rj, type, reason, message, SOURCE);
  }

  private sync(input: any, now: number): void {
    let rj = input;
    const { namespace, name } = rj.metadata;
    if (rj.metadata.deletionTimestamp) {
      if ((rj.metadata.finalizers ?? []).includes(FINALIZER)) {
        const finalizers = rj.metadata.finalizers.filter((f: string) => f !== FINALIZER);
        this.c.write(() =>
          this.c.store.replace({ ...rj, metadata: { ...rj.metadata, finalizers } }, 'client'),
        );
      }
      return;
    }
    if (rj.spec?.managedBy && rj.spec.managedBy !== 'ray.io/kuberay-operator') return;
    const spec = rj.spec ?? {};
    const status = structuredClone(rj.status ?? {});
    const original = structuredClone(status);
    const invalid = validationError(rj);
    if (invalid) {
      if (status.jobDeploymentStatus === 'ValidationFailed' && status.message === invalid[1]) return;
      this.event(rj, 'Warning', invalid[0], `${namespace}/${name}: ${invalid[1]}`);
      Object.assign(status, {
        jobDeploymentStatus: 'ValidationFailed',
        reason: 'ValidationFailed',
        message: invalid[1],
      });
      writeStatus(this.c, rj, status);
      return;
    }
    const deadline = (seconds: number | undefined, reason: string, field: string) => {
      if (
        seconds === undefined ||
        !status.startTime ||
        !this.c.due(Date.parse(status.startTime) + seconds * 1000, now)
      )
        return false;
      status.jobDeploymentStatus = 'Failed';
      status.reason = reason;
      status.message = `The RayJob has passed the ${field}. StartTime: ${status.startTime}. ${field[0]!.toUpperCase()}${field.slice(1)}: ${seconds}`;
      return true;
    };
    const suspending = () => {
      if (spec.suspend !== true) return false;
      status.jobDeploymentStatus = 'Suspending';
      return true;
    };
    switch (status.jobDeploymentStatus ?? '') {
      case '': {
        if (!(rj.metadata.finalizers ?? []).includes(FINALIZER)) {
          const finalizers = [...(rj.metadata.finalizers ?? []), FINALIZER];
          const updated = this.c.write(() =>
            this.c.store.replace({ ...rj, metadata: { ...rj.metadata, finalizers } }, 'client'),
          );
          if (!updated) return;
          rj = updated;
        }
        status.jobId ||= spec.jobId || `${name}-${suffix()}`;
        status.rayClusterName ||= spec.clusterSelector?.[RAY_CLUSTER] || `${name}-${suffix()}`;
        status.jobDeploymentStatus = 'Initializing';
        status.startTime = kubeTime(now);
        break;
      }
      case 'Initializing': {
        if (suspending() || deadline(spec.activeDeadlineSeconds, 'DeadlineExceeded', 'activeDeadlineSeconds'))
          break;
        if (
          deadline(spec.preRunningDeadlineSeconds, 'PreRunningDeadlineExceeded', 'preRunningDeadlineSeconds')
        )
          break;
        const cluster = this.cluster(rj, status);
        if (!cluster) return;
        if (cluster.status?.state !== 'ready') {
          status.rayClusterStatus = cluster.status ?? {};
          break;
        }
        status.dashboardURL ||= `${headServiceName(cluster.metadata.name)}.${namespace}.svc.cluster.local:8265`;
        if (spec.submissionMode === 'InteractiveMode') {
          status.jobDeploymentStatus = 'Waiting';
          break;
        }
        this.runs.set(status.jobId, { status: 'PENDING', message: PENDING_MESSAGE });
        status.jobDeploymentStatus = 'Running';
        break;
      }
      case 'Waiting': {
        if (
          deadline(spec.preRunningDeadlineSeconds, 'PreRunningDeadlineExceeded', 'preRunningDeadlineSeconds')
        )
          break;
        if (!spec.jobId) return;
        status.jobId = spec.jobId;
        this.runs.set(status.jobId, { status: 'PENDING', message: PENDING_MESSAGE });
        status.jobDeploymentStatus = 'Running';
        break;
      }
      case 'Running': {
        if (suspending() || deadline(spec.activeDeadlineSeconds, 'DeadlineExceeded', 'activeDeadlineSeconds'))
          break;
        const cluster = this.cluster(rj, status);
        if (!cluster) return;
        const run = this.jobInfo(rj, cluster, status.jobId, now);
        status.rayClusterStatus = cluster.status ?? {};
        status.jobStatus = run.status;
        status.message = run.message;
        status.jobDeploymentStatus =
          run.status === 'SUCCEEDED' ? 'Complete' : run.status === 'FAILED' ? 'Failed' : 'Running';
        if (run.status === 'FAILED') status.reason = 'AppFailed';
        else delete status.reason;
        status.rayJobInfo = {
          ...(run.startedAt ? { startTime: kubeTime(run.startedAt) } : {}),
          ...(run.endedAt ? { endTime: kubeTime(run.endedAt) } : {}),
        };
        break;
      }
      case 'Suspending':
      case 'Retrying': {
        if (!this.deleteCluster(rj, status)) return;
        for (const key of [
          'rayClusterStatus',
          'rayClusterName',
          'dashboardURL',
          'jobId',
          'message',
          'reason',
          'rayJobInfo',
          'jobStatusCheckFailureStartTime',
        ])
          delete status[key];
        status.jobStatus = '';
        status.jobDeploymentStatus = status.jobDeploymentStatus === 'Suspending' ? 'Suspended' : '';
        break;
      }
      case 'Suspended': {
        if (spec.suspend === true) return;
        status.jobStatus = '';
        status.jobDeploymentStatus = '';
        break;
      }
      case 'Complete':
      case 'Failed': {
        if (spec.clusterSelector && Object.keys(spec.clusterSelector).length) return;
        if (spec.shutdownAfterJobFinishes === true && status.endTime) {
          const at = Date.parse(status.endTime) + (spec.ttlSecondsAfterFinished ?? 0) * 1000;
          if (this.c.due(at, now)) this.deleteCluster(rj, status);
        }
        return;
      }
      default:
        return;
    }
    if (status.jobDeploymentStatus === 'Failed') status.failed = (status.failed ?? 0) + 1;
    else status.failed ??= 0;
    if (status.jobStatus === 'SUCCEEDED' && status.jobDeploymentStatus === 'Complete')
      status.succeeded = (status.succeeded ?? 0) + 1;
    else status.succeeded ??= 0;
    if (
      status.jobDeploymentStatus === 'Failed' &&
      spec.backoffLimit !== undefined &&
      status.failed < spec.backoffLimit + 1 &&
      !['DeadlineExceeded', 'JobStatusCheckTimeoutExceeded'].includes(status.reason)
    )
      status.jobDeploymentStatus = 'Retrying';
    for (const key of ['jobStatus', 'jobDeploymentStatus']) if (status[key] === '') delete status[key]; // omitempty
    const changed =
      (original.jobStatus ?? '') !== (status.jobStatus ?? '') ||
      (original.jobDeploymentStatus ?? '') !== (status.jobDeploymentStatus ?? '') ||
      !same(withoutTime(original.rayClusterStatus), withoutTime(status.rayClusterStatus));
    if (!changed) return;
    if (TERMINAL_DEPLOYMENT.includes(status.jobDeploymentStatus)) status.endTime = kubeTime(now);
    writeStatus(this.c, rj, status);
  }

  /** getOrCreateRayClusterInstance. */
  private cluster(rj: any, status: any): any | undefined {
    const { namespace, name } = rj.metadata;
    const clusterName: string = status.rayClusterName;
    const existing = this.c.store.get('RayCluster', namespace, clusterName);
    if (existing) return existing;
    if (rj.spec.clusterSelector && Object.keys(rj.spec.clusterSelector).length) {
      this.event(
        rj,
        'Warning',
        'RayClusterNotFound',
        `RayCluster ${namespace}/${clusterName} set in the clusterSelector is not found. It must be created manually`,
      );
      return undefined;
    }
    const cluster = {
      apiVersion: 'ray.io/v1',
      kind: 'RayCluster',
      metadata: {
        name: clusterName,
        namespace,
        labels: {
          ...rj.metadata.labels,
          'ray.io/originated-from-cr-name': name,
          'ray.io/originated-from-crd': 'RayJob',
          'ray.io/job-submission-mode': rj.spec.submissionMode ?? 'K8sJobMode',
        },
        ...(rj.metadata.annotations ? { annotations: { ...rj.metadata.annotations } } : {}),
        ownerReferences: [ownerReference(rj)],
      },
      spec: structuredClone(rj.spec.rayClusterSpec),
    };
    const created = this.c.write(() => this.c.store.create(cluster, 'system'));
    if (!created) {
      this.event(
        rj,
        'Warning',
        'FailedToCreateRayCluster',
        `Failed to create RayCluster ${namespace}/${clusterName}`,
      );
      return undefined;
    }
    this.event(rj, 'Normal', 'CreatedRayCluster', `Created RayCluster ${namespace}/${clusterName}`);
    return created;
  }

  /** deleteClusterResources: true once the cluster is gone. */
  private deleteCluster(rj: any, status: any): boolean {
    if (rj.spec.clusterSelector && Object.keys(rj.spec.clusterSelector).length) return true;
    const { namespace } = rj.metadata;
    const cluster =
      status.rayClusterName && this.c.store.peek('RayCluster', namespace, status.rayClusterName);
    if (!cluster) return true;
    if (!cluster.metadata.deletionTimestamp && remove(this.c, 'RayCluster', cluster))
      this.event(rj, 'Normal', 'DeletedRayCluster', `Deleted cluster ${namespace}/${cluster.metadata.name}`);
    return !this.c.store.peek('RayCluster', namespace, status.rayClusterName);
  }

  /** The dashboard's JobInfo of the simulated Ray job. */
  private jobInfo(rj: any, cluster: any, jobId: string, now: number): Run {
    let run = this.runs.get(jobId);
    if (!run) this.runs.set(jobId, (run = { status: 'PENDING', message: PENDING_MESSAGE }));
    if (run.status === 'SUCCEEDED' || run.status === 'FAILED') return run;
    const head = this.c.store
      .peekAll('Pod', cluster.metadata.namespace)
      .find(
        (p) =>
          p.metadata.labels?.[RAY_CLUSTER] === cluster.metadata.name &&
          p.metadata.labels?.[RAY_NODE_TYPE] === 'head' &&
          !p.metadata.deletionTimestamp,
      );
    if (run.status === 'RUNNING' && !(head && podReady(head))) {
      Object.assign(run, {
        status: 'FAILED',
        endedAt: now,
        message: 'Job supervisor actor died: the Ray head Pod stopped running while the job ran.',
      });
      return run;
    }
    if (run.status === 'PENDING') {
      if (!head || !podReady(head)) return run;
      Object.assign(run, { status: 'RUNNING', startedAt: now, message: 'Job is currently running.' });
    }
    const template = cluster.spec.headGroupSpec?.template;
    const container = template?.spec?.containers?.[0];
    const setting = (annotation: string, env: string) =>
      rj.metadata.annotations?.[annotation] ??
      template?.metadata?.annotations?.[annotation] ??
      envValue(container, env);
    const kubelet = this.c.options.kubelet;
    const runMs =
      setting(ANNOTATION_RUN_MS, 'FAIRWAY_TEST_RUN_MS') ?? (kubelet ? kubelet.defaultRunMs : undefined);
    if (runMs === undefined || !this.c.due(run.startedAt! + Number(runMs), now)) return run;
    const outcome = setting(ANNOTATION_OUTCOME, 'FAIRWAY_TEST_OUTCOME');
    const failed = outcome === 'fail' || outcome === 'oom';
    Object.assign(run, {
      status: failed ? 'FAILED' : 'SUCCEEDED',
      endedAt: now,
      message: failed
        ? `Job entrypoint command failed with exit code 1, last available logs (truncated to 20,000 chars):\nthe test workload failed (FAIRWAY_TEST_OUTCOME: ${outcome})`
        : 'Job finished successfully.',
    });
    return run;
  }
}
