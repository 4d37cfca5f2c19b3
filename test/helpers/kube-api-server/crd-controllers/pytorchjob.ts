/**
 * The PyTorchJob controller of the Kubeflow Training Operator v1 (pkg/controller.v1/pytorch and common),
 * while the PyTorchJob CRD is installed. It reads the job with the operator's in-memory defaults
 * (replicas 1, restartPolicy OnFailure, the `pytorch` container's port `pytorchjob-port` 23456,
 * cleanPodPolicy None, nprocPerNode "auto" unless elasticPolicy.nProcPerNode, elastic min/max replicas):
 * - pods `<name>-master-0`, `<name>-worker-<i>` owned by it, labelled training.kubeflow.org/job-name,
 *   operator-name (pytorchjob-controller), replica-type (master / worker), replica-index, and job-role
 *   master (the Master, or Worker 0 without one); the pod's restartPolicy is the replica's (ExitCode →
 *   Never); every container gets PYTHONUNBUFFERED=1, with a Master MASTER_PORT / PET_MASTER_PORT,
 *   MASTER_ADDR / PET_MASTER_ADDR (`<name>-master-0`), WORLD_SIZE (replicas × nprocPerNode, 1 when not a
 *   number), RANK / PET_NODE_RANK (workers: index + 1), PET_NPROC_PER_NODE, and PET_NNODES (replicas; with
 *   elasticPolicy `min:max` and PET_RDZV_ENDPOINT / PET_RDZV_BACKEND / PET_MAX_RESTARTS / PET_RDZV_ID /
 *   PET_RDZV_CONF / PET_STANDALONE); workers of a job with a Master get the init container `init-pytorch`
 *   (alpine:3.10, waits for the master's DNS name);
 * - a headless Service per pod, named like it, selecting its labels, with the `pytorch` container's ports;
 * - runPolicy.suspend: pods and Services deleted, Suspended True (PyTorchJobSuspended), Running False;
 *   resuming: Suspended False (PyTorchJobResumed), startTime reset, pods created again;
 * - conditions Created, Running (a Master pod runs; without Master a Worker), Restarting, Succeeded (the
 *   Master succeeded; without one, every Worker), Failed: a failed pod of a Never replica, a non-retryable
 *   exit code (< 128) of the `pytorch` container under ExitCode (retryable ones: the pod is recreated), or
 *   runPolicy.backoffLimit (container restarts of OnFailure/Always/ExitCode pods) / activeDeadlineSeconds;
 *   replicaStatuses per type {active, succeeded, failed, selector}, startTime, completionTime;
 *   ttlSecondsAfterFinished deletes the job; finished, pods are kept (cleanPodPolicy None) or deleted
 *   (Running: the running ones; All).
 * Not modelled: gang scheduling (PodGroups), scale subresource, HPA of elastic jobs.
 */
import type { Cluster } from '../cluster.js';
import { kubeTime } from '../store.js';
import { activePod, childrenByOwner, conditionTrue, Retries, remove, writeStatus } from './common.js';
import {
  defaulted,
  exitCodeOf,
  LABEL,
  podFor,
  replicaLabels,
  serviceFor,
  setCondition,
} from './pytorchjob-pods.js';

const SOURCE = { component: 'pytorchjob-controller' };
const TYPES = ['Master', 'Worker'] as const;

export class PyTorchJobController {
  private readonly retries: Retries;
  /** Pods deleted to be recreated (failed under ExitCode / OnFailure), per job: the operator's requeue count. */
  private readonly restarts = new Map<string, number>();

  constructor(private readonly c: Cluster) {
    this.retries = new Retries(c);
  }

  pass(now: number): void {
    if (!this.c.store.crds.served('PyTorchJob')) return;
    const pods = childrenByOwner(this.c, 'Pod', 'PyTorchJob');
    const services = childrenByOwner(this.c, 'Service', 'PyTorchJob');
    for (const job of this.c.store.list('PyTorchJob'))
      this.sync(job, pods.get(job.metadata.uid) ?? [], services.get(job.metadata.uid) ?? [], now);
  }

  private event(job: any, type: 'Normal' | 'Warning', reason: string, message: string): void {
    this.c.events.record(job, type, reason, message, SOURCE);
  }

  private deleteAll(pods: any[], services: any[], only?: (p: any) => boolean): void {
    for (const p of pods) {
      if (only && !only(p)) continue;
      remove(this.c, 'Pod', p);
      const svc = services.find((s) => s.metadata.name === p.metadata.name);
      if (svc) remove(this.c, 'Service', svc);
    }
  }

  private sync(stored: any, pods: any[], services: any[], now: number): void {
    if (stored.metadata.deletionTimestamp) return;
    const job = defaulted(stored);
    const name: string = job.metadata.name;
    const runPolicy = job.spec.runPolicy;
    if (runPolicy.managedBy && runPolicy.managedBy !== 'kubeflow.org/training-operator') return;
    const status = structuredClone(stored.status ?? {});
    status.conditions ??= [];
    if (!status.conditions.some((c: any) => c.type === 'Created'))
      setCondition(status, 'Created', 'True', 'PyTorchJobCreated', `PyTorchJob ${name} is created.`, now);
    const specs: Record<string, any> = job.spec.pytorchReplicaSpecs ?? {};
    const done = () => writeStatus(this.c, stored, status);
    if (conditionTrue(status, 'Succeeded') || conditionTrue(status, 'Failed')) {
      const policy = runPolicy.cleanPodPolicy;
      if (policy === 'All') this.deleteAll(pods, services);
      if (policy === 'Running')
        this.deleteAll(pods, services, (p) => ['Running', 'Pending'].includes(p.status?.phase));
      if (conditionTrue(status, 'Succeeded'))
        for (const rs of Object.values<any>(status.replicaStatuses ?? {}))
          if (rs.active) {
            rs.succeeded = (rs.succeeded ?? 0) + rs.active;
            delete rs.active;
          }
      const ttl = runPolicy.ttlSecondsAfterFinished;
      if (
        ttl !== undefined &&
        status.completionTime &&
        this.c.due(Date.parse(status.completionTime) + ttl * 1000, now)
      ) {
        remove(this.c, 'PyTorchJob', stored);
        return;
      }
      return void done();
    }
    if (runPolicy.suspend === true) {
      this.deleteAll(pods, services);
      for (const rs of Object.values<any>(status.replicaStatuses ?? {})) delete rs.active;
      const message = `PyTorchJob ${name} is suspended.`;
      if (conditionTrue(status, 'Running'))
        setCondition(status, 'Running', 'False', 'PyTorchJobSuspended', message, now);
      if (!conditionTrue(status, 'Suspended')) {
        setCondition(status, 'Suspended', 'True', 'PyTorchJobSuspended', message, now);
        this.event(stored, 'Normal', 'PyTorchJobSuspended', message);
      }
      return void done();
    }
    if (conditionTrue(status, 'Suspended')) {
      const message = `PyTorchJob ${name} is resumed.`;
      setCondition(status, 'Suspended', 'False', 'PyTorchJobResumed', message, now);
      status.startTime = kubeTime(now);
      this.event(stored, 'Normal', 'PyTorchJobResumed', message);
    }
    const active = pods.filter(activePod);
    const total = Object.values<any>(specs).reduce((n, r) => n + r.replicas, 0);
    const failedPods = pods.filter((p) => p.status?.phase === 'Failed').length;
    const previousFailed = Object.values<any>(status.replicaStatuses ?? {}).reduce(
      (n, r) => n + (r.failed ?? 0),
      0,
    );
    let message: string | undefined;
    if (runPolicy.backoffLimit !== undefined) {
      const retries = this.restarts.get(stored.metadata.uid) ?? 0;
      const exceeds =
        failedPods > previousFailed && active.length !== total && retries + 1 > runPolicy.backoffLimit;
      let restartCount = 0;
      for (const [type, rspec] of Object.entries(specs))
        if (rspec.restartPolicy !== 'Never')
          for (const p of pods.filter(
            (p) =>
              p.status?.phase === 'Running' &&
              p.metadata.labels?.[`${LABEL}replica-type`] === type.toLowerCase(),
          ))
            for (const cs of [
              ...(p.status.initContainerStatuses ?? []),
              ...(p.status.containerStatuses ?? []),
            ])
              restartCount += cs.restartCount ?? 0;
      const past = runPolicy.backoffLimit === 0 ? restartCount > 0 : restartCount >= runPolicy.backoffLimit;
      if (exceeds || past)
        message = `Job ${name} has failed because it has reached the specified backoff limit`;
    }
    const deadline = runPolicy.activeDeadlineSeconds;
    if (
      !message &&
      deadline !== undefined &&
      status.startTime &&
      this.c.due(Date.parse(status.startTime) + deadline * 1000, now)
    )
      message = `Job ${name} has failed because it was active longer than specified deadline`;
    if (message) {
      status.completionTime ??= kubeTime(now);
      this.deleteAll(pods, services);
      this.event(stored, 'Normal', 'PyTorchJobFailed', message);
      setCondition(status, 'Failed', 'True', 'PyTorchJobFailed', message, now);
      return void done();
    }
    status.replicaStatuses = {};
    for (const type of TYPES)
      if (specs[type]) this.reconcileReplica(stored, job, type, pods, services, status, now);
    this.updateStatus(stored, job, status, now);
    done();
  }

  private reconcileReplica(
    stored: any,
    job: any,
    type: string,
    pods: any[],
    services: any[],
    status: any,
    now: number,
  ): void {
    const rspec = job.spec.pytorchReplicaSpecs[type];
    const rt = type.toLowerCase();
    const counts = { active: 0, succeeded: 0, failed: 0 };
    const mine = pods.filter((p) => p.metadata.labels?.[`${LABEL}replica-type`] === rt);
    for (let index = 0; index < rspec.replicas; index++) {
      const name = `${job.metadata.name}-${rt}-${index}`;
      const pod = mine.find((p) => p.metadata.labels?.[`${LABEL}replica-index`] === String(index));
      if (!pod) {
        if (
          this.retries.ready(stored.metadata.uid, now) &&
          !this.c.store.peek('Pod', job.metadata.namespace, name)
        )
          this.retries.create(
            stored,
            podFor(
              stored,
              job,
              type,
              index,
              () =>
                this.event(
                  stored,
                  'Warning',
                  'SettedPodTemplateRestartPolicy',
                  'Restart policy in pod template will be overwritten by restart policy in replica spec',
                ),
              this.c.options.pytorchInitContainerTemplate,
            ),
            SOURCE,
            now,
          );
      } else {
        if (pod.status?.phase === 'Failed') {
          const code = exitCodeOf(pod) ?? 0xbeef;
          const policy = rspec.restartPolicy;
          if ((policy === 'ExitCode' && code >= 128) || policy === 'OnFailure' || policy === 'Always') {
            if (remove(this.c, 'Pod', pod))
              this.restarts.set(stored.metadata.uid, (this.restarts.get(stored.metadata.uid) ?? 0) + 1);
            const message = `job ${job.metadata.name} is restarting because ${type} replica(s) failed.`;
            this.event(stored, 'Warning', 'PyTorchJobRestarting', message);
            setCondition(status, 'Restarting', 'True', 'PyTorchJobRestarting', message, now);
          } else if (policy === 'ExitCode') {
            const message = `job "${job.metadata.name}" is failing because "${type}" replica(s) failed.`;
            this.event(stored, 'Warning', 'PyTorchJobFailed', message);
            setCondition(status, 'Failed', 'True', 'PyTorchJobFailed', message, now);
          }
        }
        const phase = pod.status?.phase;
        if (phase === 'Running') counts[pod.metadata.deletionTimestamp ? 'failed' : 'active']++;
        else if (phase === 'Succeeded') counts.succeeded++;
        else if (phase === 'Failed') counts.failed++;
      }
      if (
        !services.some((s) => s.metadata.name === name) &&
        !this.c.store.peek('Service', job.metadata.namespace, name) &&
        this.retries.ready(stored.metadata.uid, now)
      )
        this.retries.create(stored, serviceFor(stored, job, type, index), SOURCE, now);
    }
    const selector = Object.entries(replicaLabels(job, rt))
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([k, v]) => `${k}=${v}`)
      .join(',');
    status.replicaStatuses[type] = {
      ...Object.fromEntries(Object.entries(counts).filter(([, n]) => n > 0)),
      selector,
    };
  }

  /** UpdateJobStatus of the PyTorchJob reconciler. */
  private updateStatus(stored: any, job: any, status: any, now: number): void {
    const name = job.metadata.name;
    status.startTime ??= kubeTime(now);
    const specs = job.spec.pytorchReplicaSpecs;
    for (const type of TYPES) {
      const rspec = specs[type];
      if (!rspec) continue;
      const rs = status.replicaStatuses[type] ?? {};
      const [succeeded, running, failed] = [rs.succeeded ?? 0, rs.active ?? 0, rs.failed ?? 0];
      const expected = rspec.replicas - succeeded;
      const decides = specs.Master ? type === 'Master' : type === 'Worker';
      if (decides) {
        const elasticDone = !specs.Master && job.spec.elasticPolicy && succeeded > 0;
        if (expected === 0 || elasticDone) {
          const message = specs.Master
            ? `PyTorchJob ${name} is successfully completed.`
            : `PyTorchJob ${job.metadata.namespace}/${name} successfully completed.`;
          this.event(stored, 'Normal', 'PyTorchJobSucceeded', message);
          status.completionTime ??= kubeTime(now);
          setCondition(status, 'Succeeded', 'True', 'PyTorchJobSucceeded', message, now);
          if (specs.Master) return;
        } else if (running > 0) {
          const message = specs.Master
            ? `PyTorchJob ${name} is running.`
            : `PyTorchJob ${job.metadata.namespace}/${name} is running.`;
          setCondition(status, 'Running', 'True', 'PyTorchJobRunning', message, now);
        }
      }
      if (failed > 0 && rspec.replicas > succeeded + running) {
        if (rspec.restartPolicy !== 'Never') {
          const message = `PyTorchJob ${name} is restarting because ${failed} ${type} replica(s) failed.`;
          this.event(stored, 'Warning', 'PyTorchJobRestarting', message);
          setCondition(status, 'Restarting', 'True', 'PyTorchJobRestarting', message, now);
        } else {
          const message = `PyTorchJob ${name} is failed because ${failed} ${type} replica(s) failed.`;
          this.event(stored, 'Normal', 'PyTorchJobFailed', message);
          status.completionTime ??= kubeTime(now);
          setCondition(status, 'Failed', 'True', 'PyTorchJobFailed', message, now);
        }
      }
    }
  }

  forget(uid: string): void {
    this.restarts.delete(uid);
    this.retries.forget(uid);
  }
}
