/**
 * The JobSet controller (kubernetes-sigs/jobset pkg/controllers/jobset_controller.go), while the JobSet
 * CRD is installed:
 * - for each replicatedJob, `replicas` child Jobs `<jobset>-<rjob>-<index>` from its template, owned by
 *   the JobSet; the Jobs and their pod templates carry the labels and annotations jobset-name, jobset-uid,
 *   replicatedjob-name, replicatedjob-replicas, global-replicas, job-index, job-global-index, job-key,
 *   restart-attempt, group-name, group-replicas, job-group-index (`jobset.sigs.k8s.io/…`; coordinator too);
 * - network.enableDNSHostnames: the pods' subdomain is network.subdomain or the JobSet name, and a headless
 *   Service of that name selects `jobset.sigs.k8s.io/jobset-name` (publishNotReadyAddresses);
 * - spec.suspend: child Jobs are created suspended / suspended; resuming, each suspended Job first takes the
 *   replicatedJob's pod template labels, annotations, nodeSelector, tolerations and schedulingGates
 *   (merged, as resumeJob does: status.startTime is cleared first so the template may change);
 * - status: replicatedJobsStatus {name, ready, succeeded, failed, active, suspended}; Completed
 *   (AllJobsCompleted) once the success policy is met (operator All / Any, targetReplicatedJobs), Failed
 *   (FailedJobs without a failurePolicy; with one, rules by onJobFailureReasons / targetReplicatedJobs:
 *   FailJobSet, RestartJobSet (ReachedMaxRestarts past failurePolicy.maxRestarts),
 *   RestartJobSetAndIgnoreMaxRestarts — a restart bumps status.restarts (and restartsCountTowardsMax) and
 *   recreates every child Job, the old ones deleted in the foreground first); Suspended True/False;
 *   RestartingJobSet; terminalState; Events for each condition change; finished, active Jobs are deleted
 *   and ttlSecondsAfterFinished deletes the JobSet.
 * Not modelled: startupPolicy InOrder, dependsOn, volumeClaimPolicies, RestartJob actions, InPlaceRestart,
 * exclusive placement, elastic scaling.
 */
import type { Cluster } from '../cluster.js';
import {
  childrenByOwner,
  conditionTrue,
  type MetaCondition,
  ownerReference,
  Retries,
  remove,
  same,
  setStatusCondition,
  writeStatus,
} from './common.js';
import {
  type Children,
  dnsHostnames,
  failureDecision,
  jobFinished,
  jobSetLabels,
  KEY,
  RESTARTS,
  replicatedJobsStatus,
  subdomainOf,
  successPolicyMet,
} from './jobset-policy.js';

const SOURCE = { component: 'jobset-controller' };
const CONTROLLER_NAME = 'jobset.sigs.k8s.io/jobset-controller';

export class JobSetController {
  private readonly retries: Retries;

  constructor(private readonly c: Cluster) {
    this.retries = new Retries(c);
  }

  pass(now: number): void {
    if (!this.c.store.crds.served('JobSet')) return;
    const jobs = childrenByOwner(this.c, 'Job', 'JobSet');
    for (const js of this.c.store.list('JobSet')) this.sync(js, jobs.get(js.metadata.uid) ?? [], now);
  }

  private condition(js: any, status: any, c: MetaCondition, type: 'Normal' | 'Warning', now: number): void {
    const existing = (status.conditions ?? []).find((x: any) => x.type === c.type);
    if (!existing && c.status !== 'True') return; // updateCondition: a False condition is only ever an update
    if (
      existing &&
      existing.status === c.status &&
      existing.reason === c.reason &&
      existing.message === c.message
    )
      return;
    setStatusCondition(status, c, now);
    this.c.events.record(js, type, c.reason, c.message ?? '', SOURCE);
  }

  private sync(js: any, owned: any[], now: number): void {
    if (js.metadata.deletionTimestamp) return;
    if (js.spec?.managedBy && js.spec.managedBy !== CONTROLLER_NAME) return;
    const status = structuredClone(js.status ?? {});
    const restarts: number = status.restarts ?? 0;
    const children: Children = { active: [], successful: [], failed: [], previous: [] };
    for (const job of owned) {
      if (Number(job.metadata.labels?.[RESTARTS] ?? 0) < restarts) children.previous.push(job);
      else {
        const finished = jobFinished(job);
        if (finished === 'Complete') children.successful.push(job);
        else if (finished === 'Failed') children.failed.push(job);
        else children.active.push(job);
      }
    }
    status.replicatedJobsStatus = replicatedJobsStatus(js, children);
    const done = () => writeStatus(this.c, js, status);
    if (conditionTrue(status, 'Completed') || conditionTrue(status, 'Failed')) {
      for (const job of children.active) remove(this.c, 'Job', job, 'Foreground');
      const ttl = js.spec.ttlSecondsAfterFinished;
      const finished = (status.conditions ?? []).find(
        (c: any) => (c.type === 'Completed' || c.type === 'Failed') && c.status === 'True',
      );
      if (ttl !== undefined && this.c.due(Date.parse(finished.lastTransitionTime) + ttl * 1000, now)) {
        remove(this.c, 'JobSet', js, 'Foreground');
        return;
      }
      return void done();
    }
    for (const job of children.previous) remove(this.c, 'Job', job, 'Foreground');
    const suspended = js.spec.suspend === true;
    const total = (js.spec.replicatedJobs ?? []).reduce((n: number, r: any) => n + (r.replicas ?? 1), 0);
    const ready = status.replicatedJobsStatus.reduce((n: number, r: any) => n + r.ready + r.succeeded, 0);
    if (!suspended && total === ready) this.restarting(js, status, 'JobsReady', 'all jobs are ready', now);
    if (children.failed.length > 0) {
      this.failurePolicy(js, status, children.failed, now);
      return void done();
    }
    if (children.successful.length > 0 && successPolicyMet(js, children.successful)) {
      this.finish(js, status, 'Completed', 'AllJobsCompleted', 'jobset completed successfully', now);
      return void done();
    }
    if (dnsHostnames(js)) this.headlessService(js, now);
    this.createJobs(js, children, now);
    if (suspended) {
      for (const job of children.active)
        if (job.spec.suspend !== true) this.updateJob(job, { suspend: true });
      this.condition(
        js,
        status,
        { type: 'Suspended', status: 'True', reason: 'SuspendedJobs', message: 'jobset is suspended' },
        'Normal',
        now,
      );
      this.restarting(js, status, 'JobSetSuspended', 'jobset is suspended', now);
    } else {
      for (const job of children.active) if (job.spec.suspend === true) this.resumeJob(js, job);
      this.condition(
        js,
        status,
        { type: 'Suspended', status: 'False', reason: 'ResumeJobs', message: 'jobset is resumed' },
        'Normal',
        now,
      );
    }
    done();
  }

  private restarting(js: any, status: any, reason: string, message: string, now: number): void {
    this.condition(js, status, { type: 'RestartingJobSet', status: 'False', reason, message }, 'Normal', now);
  }

  private finish(
    js: any,
    status: any,
    type: 'Completed' | 'Failed',
    reason: string,
    message: string,
    now: number,
  ): void {
    this.condition(
      js,
      status,
      { type, status: 'True', reason, message },
      type === 'Completed' ? 'Normal' : 'Warning',
      now,
    );
    this.restarting(
      js,
      status,
      type === 'Completed' ? 'JobSetCompleted' : 'JobSetFailed',
      type === 'Completed' ? message : 'jobset failed',
      now,
    );
    status.terminalState = type;
  }

  private failurePolicy(js: any, status: any, failed: any[], now: number): void {
    const decision = failureDecision(js, status, failed);
    if ('fail' in decision) {
      this.finish(js, status, 'Failed', decision.fail[0], decision.fail[1], now);
      return;
    }
    const { counts, reason, message } = decision.restart;
    status.restarts = (status.restarts ?? 0) + 1;
    if (counts) status.restartsCountTowardsMax = (status.restartsCountTowardsMax ?? 0) + 1;
    setStatusCondition(status, { type: 'RestartingJobSet', status: 'True', reason, message }, now);
    const event = counts
      ? 'RestartJobSetFailurePolicyAction'
      : 'RestartJobSetAndIgnoreMaxRestartsFailurePolicyAction';
    this.c.events.record(js, 'Warning', event, message, SOURCE);
  }

  private headlessService(js: any, now: number): void {
    const name = subdomainOf(js);
    if (
      this.c.store.peek('Service', js.metadata.namespace, name) ||
      !this.retries.ready(js.metadata.uid, now)
    )
      return;
    const service = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: js.metadata.namespace, ownerReferences: [ownerReference(js)] },
      spec: {
        clusterIP: 'None',
        selector: { [`${KEY}jobset-name`]: js.metadata.name },
        publishNotReadyAddresses: js.spec.network?.publishNotReadyAddresses ?? true,
      },
    };
    this.retries.create(js, service, SOURCE, now, 'HeadlessServiceCreationFailed');
  }

  private createJobs(js: any, children: Children, now: number): void {
    const blocking =
      js.spec.failurePolicy?.restartStrategy === 'BlockingRecreate' && children.previous.length > 0;
    if (blocking || !this.retries.ready(js.metadata.uid, now)) return;
    const existing = new Set(
      Object.values(children)
        .flat()
        .map((j: any) => j.metadata.name),
    );
    for (const rjob of js.spec.replicatedJobs ?? [])
      for (let i = 0; i < (rjob.replicas ?? 1); i++) {
        const name = `${js.metadata.name}-${rjob.name}-${i}`;
        if (existing.has(name) || this.c.store.peek('Job', js.metadata.namespace, name)) continue;
        if (!this.retries.create(js, this.jobFor(js, rjob, i), SOURCE, now, 'JobCreationFailed')) return;
      }
  }

  private jobFor(js: any, rjob: any, index: number): any {
    const template = structuredClone(rjob.template ?? {});
    const labels = jobSetLabels(js, rjob, index);
    const spec = template.spec ?? {};
    const pod = (spec.template ??= {});
    pod.metadata = {
      ...pod.metadata,
      labels: { ...pod.metadata?.labels, ...labels },
      annotations: { ...pod.metadata?.annotations, ...labels },
    };
    if (dnsHostnames(js)) (pod.spec ??= {}).subdomain = subdomainOf(js);
    spec.suspend = js.spec.suspend === true;
    return {
      apiVersion: 'batch/v1',
      kind: 'Job',
      metadata: {
        name: `${js.metadata.name}-${rjob.name}-${index}`,
        namespace: js.metadata.namespace,
        labels: { ...template.metadata?.labels, ...labels },
        annotations: { ...template.metadata?.annotations, ...labels },
        ownerReferences: [ownerReference(js)],
      },
      spec,
    };
  }

  private updateJob(job: any, spec: any): void {
    const current = this.c.store.get('Job', job.metadata.namespace, job.metadata.name);
    if (current)
      this.c.write(() => this.c.store.replace({ ...current, spec: { ...current.spec, ...spec } }, 'client'));
  }

  /** resumeJob: clears status.startTime, merges the replicatedJob's scheduling directives, unsuspends. */
  private resumeJob(js: any, job: any): void {
    const { namespace, name } = job.metadata;
    let current = this.c.store.get('Job', namespace, name);
    if (!current) return;
    if (current.status?.startTime) {
      const { startTime: _s, ...status } = current.status;
      current = this.c.write(() => this.c.store.replace({ ...current, status }, 'status'));
      if (!current) return;
    }
    const rjob = (js.spec.replicatedJobs ?? []).find(
      (r: any) => r.name === current.metadata.labels?.[`${KEY}replicatedjob-name`],
    );
    const template = structuredClone(current.spec.template);
    const wanted = rjob?.template?.spec?.template ?? {};
    const mergeList = (a: any[] = [], b: any[] = []) => [
      ...a,
      ...b.filter((x) => !a.some((y) => same(x, y))),
    ];
    template.metadata = {
      ...template.metadata,
      labels: { ...template.metadata?.labels, ...wanted.metadata?.labels },
      annotations: { ...template.metadata?.annotations, ...wanted.metadata?.annotations },
    };
    const nodeSelector = { ...template.spec.nodeSelector, ...wanted.spec?.nodeSelector };
    if (Object.keys(nodeSelector).length) template.spec.nodeSelector = nodeSelector;
    const tolerations = mergeList(template.spec.tolerations, wanted.spec?.tolerations);
    if (tolerations.length) template.spec.tolerations = tolerations;
    const gates = mergeList(template.spec.schedulingGates, wanted.spec?.schedulingGates);
    if (gates.length) template.spec.schedulingGates = gates;
    this.c.write(() =>
      this.c.store.replace({ ...current, spec: { ...current.spec, suspend: false, template } }, 'client'),
    );
  }
}
