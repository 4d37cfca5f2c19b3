// Runs of jobs whose workload kind is a workload controller's custom resource (JobSet, PyTorchJob,
// RayJob, RayCluster): one object per admitted job, `fw-<job id>`, created on admission, suspended
// on preemption the way its controller supports and resumed with the new placement on
// readmission, deleted on cancel. Its pods carry Fairway's labels (the pod informer sees them);
// on every change to them the object is read again and its status mapped (workload-kinds.ts).
import type { KubernetesObject, V1Pod } from '@kubernetes/client-node';
import type { BackendEvent, BackendJob, CustomWorkloadKindName, WorkloadRequest } from '../port.js';
import { apiMessage, type KubeClient, type ObjectRef, statusOf } from './client.js';
import { podSetTemplates } from './job-objects.js';
import { waitGone } from './job-updates.js';
import { ANNOTATION_ADMISSION, LABEL_JOB_ID, MANAGED_BY } from './naming.js';
import type { GatedRun } from './placement-gates.js';
import type { JobBuildContext } from './pod-spec.js';
import type { ProbedRun } from './probe-source.js';
import { LWS } from './service-objects.js';
import type { KubernetesSettings } from './settings.js';
import { tenantSafeMessage } from './status.js';
import { CUSTOM_WORKLOADS, type CustomWorkload } from './workload-kinds.js';

interface CustomRun {
  job: BackendJob;
  workload: CustomWorkload;
  ref: ObjectRef;
  admissionAt: string;
  expectedPods: number;
  started: boolean;
  reading: boolean;
  again: boolean;
}

export interface CustomRunsDeps {
  client: KubeClient;
  settings: KubernetesSettings;
  pods(jobId: string): readonly V1Pod[];
  emit(event: BackendEvent): void;
  now(): number;
  log(message: string): void;
  logError(error: unknown): void;
}

const MANAGED_SELECTOR = Object.entries(MANAGED_BY)
  .map(([k, v]) => `${k}=${v}`)
  .join(',');

/** The job cannot be built for its kind on this cluster (no flavor mapping, half a GPU…): it fails. */
export class CannotBuildError extends Error {}

export class CustomRuns {
  private readonly runs = new Map<string, CustomRun>();

  constructor(private readonly deps: CustomRunsDeps) {}

  has(jobId: string): boolean {
    return this.runs.has(jobId);
  }

  /** Every tracked run evaluated again (missed events). */
  evaluateAll(): void {
    for (const jobId of [...this.runs.keys()]) this.evaluate(jobId);
  }

  /** The tracked runs, for the probe source: each one's job, namespace and whether it started. */
  *probed(): Iterable<[string, ProbedRun]> {
    for (const jobId of this.runs.keys()) yield [jobId, this.probedRun(jobId)!];
  }

  probedRun(jobId: string): ProbedRun | undefined {
    const run = this.runs.get(jobId);
    return run && { job: run.job, namespace: run.ref.metadata.namespace!, started: run.started };
  }

  /** The tracked run as exact placement sees it (gate-releaser.ts): its pods' index from its controller. */
  gatedRun(jobId: string): GatedRun | undefined {
    const c = this.runs.get(jobId);
    return (
      c && {
        jobId,
        admissionAt: c.admissionAt,
        admissions: c.job.admission.podSets,
        indexOf: (pod) => c.workload.podPosition(pod)?.index ?? null,
      }
    );
  }

  /** The tracked run (the log capture's view). */
  run(jobId: string): { admissionAt: string; job: BackendJob; workload: CustomWorkload } | undefined {
    return this.runs.get(jobId);
  }

  /**
   * start(), with the failures no retry mends turned into the reason the job cannot run (it is
   * failed with it): a job unbuildable for its kind, an object the API refuses, a kind no longer
   * served. Transient failures are thrown (the start is retried).
   */
  async startOrRefuse(job: BackendJob, ctx: JobBuildContext): Promise<string | null> {
    try {
      await this.start(job, ctx);
      return null;
    } catch (error) {
      if (error instanceof CannotBuildError) return `cannot run on this Kubernetes cluster: ${error.message}`;
      const status = statusOf(error);
      if (status !== 400 && status !== 404 && status !== 422) throw error;
      return `the Kubernetes API refused its ${job.workloadKind} (${status}): ${apiMessage(error)}`;
    }
  }

  /** Creates the object, or brings the one that exists (a replay, a readmission) to this admission. */
  async start(job: BackendJob, ctx: JobBuildContext): Promise<void> {
    const workload = CUSTOM_WORKLOADS[job.workloadKind as CustomWorkloadKindName];
    let templates: ReturnType<typeof podSetTemplates>;
    let desired: ReturnType<CustomWorkload['build']>;
    try {
      templates = podSetTemplates(job, ctx, this.deps.settings, workload.containerName);
      desired = workload.build(job, templates, ctx.namespace, this.deps.settings);
    } catch (error) {
      throw new CannotBuildError(error instanceof Error ? error.message : String(error));
    }
    const admissionAt = String(job.admission.at);
    const ref: ObjectRef = {
      apiVersion: workload.apiVersion,
      kind: workload.crdKind,
      metadata: { name: desired.metadata.name, namespace: ctx.namespace },
    };
    const previous = this.runs.get(job.jobId);
    this.runs.set(job.jobId, {
      job,
      workload,
      ref,
      admissionAt,
      expectedPods: templates.reduce((n, t) => n + t.admitted.count, 0),
      started: previous?.admissionAt === admissionAt ? previous.started : false,
      reading: false,
      again: false,
    });
    const { client } = this.deps;
    const { created, object } = await client.createOrGet(desired as KubernetesObject);
    if (!created) {
      const same = object.metadata?.annotations?.[ANNOTATION_ADMISSION] === admissionAt;
      const seen = workload.observe(object, [], 0);
      if (
        !same &&
        (seen.kind === 'succeeded' || seen.kind === 'failed' || !workload.canResume(object, desired))
      ) {
        // An earlier run that ended, or one whose pods cannot change into this admission's: made anew.
        await client.deleteIfPresent(ref);
        await waitGone(client, ref);
        await client.createOrGet(desired as KubernetesObject);
      } else if (!same || workload.isSuspended(object)) {
        if (!workload.isSuspended(object)) await client.mergePatch(ref, workload.suspendPatch());
        await client.mergePatch(ref, workload.resumePatch(object, desired, admissionAt));
      }
    }
    setImmediate(() => this.evaluate(job.jobId));
  }

  /** Reads the object again and reports what changed (one read at a time per run). */
  evaluate(jobId: string): void {
    const run = this.runs.get(jobId);
    if (!run) return;
    if (run.reading) {
      run.again = true;
      return;
    }
    run.reading = true;
    void this.observe(run)
      .catch(this.deps.logError)
      .finally(() => {
        run.reading = false;
        if (run.again && this.runs.get(jobId) === run) {
          run.again = false;
          this.evaluate(jobId);
        }
      });
  }

  private async observe(run: CustomRun): Promise<void> {
    const jobId = run.job.jobId;
    const object = await this.deps.client.read(run.ref);
    if (this.runs.get(jobId) !== run || !object) return;
    const pods = this.deps
      .pods(jobId)
      .filter((p) => p.metadata?.annotations?.[ANNOTATION_ADMISSION] === run.admissionAt);
    const seen = run.workload.observe(object, [...pods], run.expectedPods);
    const at = this.deps.now();
    const safe = (reason: string) => tenantSafeMessage(reason, [jobId, run.job.tenant]);
    if (seen.kind === 'running' && !run.started) {
      run.started = true;
      this.deps.emit({ type: 'started', jobId, at });
    } else if (seen.kind === 'succeeded') {
      this.runs.delete(jobId);
      this.deps.emit({ type: 'succeeded', jobId, at });
    } else if (seen.kind === 'failed') {
      this.runs.delete(jobId);
      this.deps.emit({ type: 'failed', jobId, at, reason: safe(seen.reason) });
      await this.deps.client.mergePatch(run.ref, run.workload.suspendPatch()).catch(this.deps.logError);
    } else if (seen.kind === 'disrupted') {
      this.runs.delete(jobId);
      this.deps.log(`job ${jobId} was disrupted: ${seen.reason}`);
      await this.deps.client.mergePatch(run.ref, run.workload.suspendPatch()).catch(this.deps.logError);
      this.deps.emit({ type: 'disrupted', jobId, at, reason: safe(seen.reason) });
    }
  }

  /** Preempted: suspended as its controller supports (its pods stop over their grace). */
  async suspend(jobId: string): Promise<string | undefined> {
    const run = this.runs.get(jobId);
    this.runs.delete(jobId);
    const refs = run ? [run.ref] : await this.find(jobId);
    let admissionAt: string | undefined = run?.admissionAt;
    for (const ref of refs) {
      const workload = workloadOf(ref.kind ?? '');
      const object = await this.deps.client.read(ref);
      if (!object || !workload) continue;
      admissionAt ??= object.metadata?.annotations?.[ANNOTATION_ADMISSION];
      if (!workload.isSuspended(object)) await this.deps.client.mergePatch(ref, workload.suspendPatch());
    }
    return admissionAt;
  }

  /** Cancelled: deleted with what its controller made. Returns whether there was one. */
  async cancel(jobId: string): Promise<boolean> {
    const run = this.runs.get(jobId);
    this.runs.delete(jobId);
    const refs = run ? [run.ref] : await this.find(jobId);
    for (const ref of refs) await this.deps.client.deleteIfPresent(ref);
    return refs.length > 0;
  }

  /** After a restart: the objects of jobs no longer live are deleted. Returns how many. */
  async removeOrphans(live: ReadonlySet<string>, served: readonly CustomWorkload[]): Promise<number> {
    let removed = 0;
    for (const w of served) {
      for (const object of await this.deps.client.list(w.apiVersion, w.crdKind, MANAGED_SELECTOR)) {
        const jobId = object.metadata?.labels?.[LABEL_JOB_ID];
        if (!jobId || live.has(jobId) || ownedByWorkload(object)) continue;
        const ref = refOf(object, w);
        if (await this.deps.client.deleteIfPresent(ref)) removed++;
      }
    }
    return removed;
  }

  /** Objects of this job of any served kind (an untracked job: after a restart). */
  private async find(jobId: string): Promise<ObjectRef[]> {
    const out: ObjectRef[] = [];
    for (const w of Object.values(CUSTOM_WORKLOADS)) {
      if (!(await this.deps.client.serves(w.apiVersion, w.crdKind).catch(() => false))) continue;
      const found = await this.deps.client.list(w.apiVersion, w.crdKind, `${LABEL_JOB_ID}=${jobId}`);
      out.push(...found.filter((o) => !ownedByWorkload(o)).map((o) => refOf(o, w)));
    }
    return out;
  }
}

/** Why this cluster cannot run the workload as asked (its pod sets, a CRD it does not serve), or null. */
export async function workloadProblem(client: KubeClient, request: WorkloadRequest): Promise<string | null> {
  if (request.service) {
    const pods = request.podSets[0]?.count ?? 1;
    if (pods <= 1 || (await client.serves(LWS.apiVersion, LWS.kind))) return null;
    return `A replica of ${pods} pods spans several hosts, which needs a LeaderWorkerSet (${LWS.crdName}), and this cluster does not serve it.`;
  }
  if (request.workloadKind === 'BATCH') return null;
  const w = CUSTOM_WORKLOADS[request.workloadKind];
  const shape = w.problems(request.podSets, request.container);
  if (shape) return shape;
  if (await client.serves(w.apiVersion, w.crdKind)) return null;
  return `workloadKind ${request.workloadKind} needs the ${w.crdKind} resource (${w.crdName}, ${w.apiVersion}), which this cluster does not serve`;
}

/** A RayCluster a RayJob made (KubeRay copies the RayJob's labels onto it): its RayJob answers for it. */
function ownedByWorkload(object: KubernetesObject): boolean {
  return (object.metadata?.ownerReferences ?? []).some((r) => r.kind === 'RayJob');
}

function workloadOf(kind: string): CustomWorkload | undefined {
  return Object.values(CUSTOM_WORKLOADS).find((w) => w.crdKind === kind);
}

function refOf(object: KubernetesObject, w: CustomWorkload): ObjectRef {
  return {
    apiVersion: w.apiVersion,
    kind: w.crdKind,
    metadata: { name: object.metadata!.name!, namespace: object.metadata!.namespace },
  };
}
