/**
 * The Job controller (pkg/controller/job), for batch/v1 Jobs:
 * - creates pods (NonIndexed: `<job>-xxxxx`; Indexed: `<job>-<index>-xxxxx` with the completion-index
 *   label and annotation, JOB_COMPLETION_INDEX, hostname `<job>-<index>`) up to parallelism, and
 *   replacements for failed ones; a refused create is a FailedCreate Event and a `problem`, retried;
 * - counts each finished pod once, even after it is gone: Succeeded; Failed (or deleted from outside:
 *   without a podFailurePolicy it counts as soon as it is terminating) unless a podFailurePolicy rule
 *   says Ignore; FailJob fails the Job at once (reason PodFailurePolicy); more failures than
 *   backoffLimit (or, restartPolicy OnFailure, as many container restarts): BackoffLimitExceeded;
 *   activeDeadlineSeconds: DeadlineExceeded;
 * - finishing, sets FailureTarget / SuccessCriteriaMet, deletes the active pods, and sets Failed /
 *   Complete once none is left running; ttlSecondsAfterFinished deletes it;
 * - a suspended Job's pods are deleted (gracefully, not counted as failures); status.startTime is
 *   cleared once they are gone and `jobControllerDelayMs` has passed; resuming sets it again.
 * Pods being deleted are not active; with podReplacementPolicy Failed (the default with a
 * podFailurePolicy) no replacement is made before they have terminated.
 */
import { type Cluster, controllerOf, hasCondition, listIn, setCondition } from './cluster.js';
import { indexRanges, parseIndexRanges, podFailureDecision } from './pod-failure-policy.js';
import { kubeTime, type StoreEvent, terminal } from './store.js';

export const INDEX_KEY = 'batch.kubernetes.io/job-completion-index';
const SOURCE = { component: 'job-controller' };
/** A refused pod create is tried again this much later. */
const RETRY_MS = 200;

interface Finishing {
  type: 'Complete' | 'Failed';
  reason: string;
  message: string;
}

interface Track {
  /** Pods already counted (succeeded, failed or ignored), by uid. */
  counted: Set<string>;
  failed: number;
  succeeded: number;
  completed: Set<number>;
  finishing?: Finishing;
  /** When a suspended Job's pods were first seen gone. */
  podsGoneAt?: number;
  retryAt?: number;
}

const indexOf = (pod: any) =>
  Number(pod.metadata.annotations?.[INDEX_KEY] ?? pod.metadata.labels?.[INDEX_KEY] ?? -1);

/** restartPolicy OnFailure: the containers' restarts count against backoffLimit (pastBackoffLimitOnFailure). */
function pastBackoffLimitOnFailure(job: any, active: any[]): boolean {
  if (job.spec?.template?.spec?.restartPolicy !== 'OnFailure') return false;
  let restarts = 0;
  for (const p of active)
    for (const cs of [...(p.status?.initContainerStatuses ?? []), ...(p.status?.containerStatuses ?? [])])
      restarts += cs.restartCount ?? 0;
  const limit = job.spec.backoffLimit ?? 6;
  return limit === 0 ? restarts > 0 : restarts >= limit;
}

export class JobController {
  private readonly tracks = new Map<string, Track>();
  /** Pods this controller deleted, and why: suspension (never a failure) or the Job finishing. */
  private readonly ownDeletes = new Map<string, 'suspend' | 'finish'>();
  /** Pods gone before they were counted, by Job uid: counted from their last state. */
  private readonly vanished = new Map<string, any[]>();

  constructor(private readonly c: Cluster) {}

  observe(e: StoreEvent): void {
    if (e.type !== 'DELETED') return;
    if (e.kind === 'Job') {
      this.tracks.delete(e.object.metadata.uid);
      this.vanished.delete(e.object.metadata.uid);
    } else if (e.kind === 'Pod') {
      const owner = controllerOf(e.object);
      if (owner && this.tracks.has(owner.uid)) listIn(this.vanished, owner.uid).push(e.object);
      else this.ownDeletes.delete(e.object.metadata.uid);
    }
  }

  pass(now: number): void {
    const byOwner = new Map<string, any[]>();
    for (const p of this.c.store.peekAll('Pod')) {
      const owner = controllerOf(p);
      if (owner) listIn(byOwner, owner.uid).push(p);
    }
    for (const job of this.c.store.list('Job')) this.sync(job, byOwner.get(job.metadata.uid) ?? [], now);
  }

  private track(job: any): Track {
    let t = this.tracks.get(job.metadata.uid);
    if (!t) {
      const s = job.status ?? {};
      const target = (s.conditions ?? []).find(
        (c: any) => (c.type === 'FailureTarget' || c.type === 'SuccessCriteriaMet') && c.status === 'True',
      );
      t = {
        counted: new Set(),
        failed: s.failed ?? 0,
        succeeded: s.succeeded ?? 0,
        completed: parseIndexRanges(s.completedIndexes),
        ...(target
          ? {
              finishing: {
                type: target.type === 'FailureTarget' ? 'Failed' : 'Complete',
                reason: target.reason,
                message: target.message,
              },
            }
          : {}),
      };
      this.tracks.set(job.metadata.uid, t);
    }
    return t;
  }

  /** Counts the pods that finished (or went) since the last pass. */
  private account(job: any, t: Track, mine: any[], finished: boolean): void {
    const policy = job.spec?.podFailurePolicy;
    const indexed = job.spec?.completionMode === 'Indexed';
    const gone = this.vanished.get(job.metadata.uid) ?? [];
    this.vanished.delete(job.metadata.uid);
    for (const pod of [...mine, ...gone]) {
      const uid = pod.metadata.uid;
      const isGone = gone.includes(pod);
      if (t.counted.has(uid)) {
        if (isGone) t.counted.delete(uid);
        continue;
      }
      const own = this.ownDeletes.get(uid);
      const failingEarly = !!pod.metadata.deletionTimestamp && !policy && own === undefined;
      if (!terminal(pod) && !isGone && !failingEarly) continue; // still running
      if (isGone) this.ownDeletes.delete(uid);
      else t.counted.add(uid);
      if (pod.status?.phase === 'Succeeded') {
        t.succeeded++;
        if (indexed) t.completed.add(indexOf(pod));
        continue;
      }
      if (own !== undefined || finished) continue; // suspension, or the Job was done anyway
      const decision = policy ? podFailureDecision(policy, pod) : { action: 'Count' as const };
      if (decision.action === 'Ignore') continue;
      t.failed++;
      if (decision.action === 'FailJob' && !t.finishing)
        t.finishing = { type: 'Failed', reason: 'PodFailurePolicy', message: decision.message! };
    }
  }

  private sync(job: any, mine: any[], now: number): void {
    if (job.metadata.deletionTimestamp) return;
    const spec = job.spec ?? {};
    const status = structuredClone(job.status ?? {});
    const t = this.track(job);
    const finished = hasCondition(job, 'Complete') || hasCondition(job, 'Failed');
    this.account(job, t, mine, finished);
    let active = mine.filter((p) => !terminal(p) && !p.metadata.deletionTimestamp);
    const stillRunning = () =>
      mine.filter((p) => {
        const current = this.c.store.peek('Pod', p.metadata.namespace, p.metadata.name);
        return current && current.metadata.uid === p.metadata.uid && !terminal(current);
      });
    if (finished) {
      active.forEach((p) => this.deletePod(job, p, 'finish'));
      active = [];
      const ttl = spec.ttlSecondsAfterFinished;
      const condition = (status.conditions ?? []).find(
        (c: any) => (c.type === 'Complete' || c.type === 'Failed') && c.status === 'True',
      );
      const finishedAt = Date.parse(
        status.completionTime ?? condition?.lastTransitionTime ?? job.metadata.creationTimestamp,
      );
      if (ttl !== undefined && this.c.due(finishedAt + ttl * 1000, now)) {
        this.c.write(() => this.c.store.delete('Job', job.metadata.namespace, job.metadata.name));
        return;
      }
    } else {
      const completions: number | undefined = spec.completions;
      const indexed = spec.completionMode === 'Indexed';
      const done = indexed
        ? t.completed.size >= (completions ?? 1)
        : completions !== undefined
          ? t.succeeded >= completions
          : t.succeeded > 0 && active.length === 0;
      const deadline = spec.activeDeadlineSeconds;
      if (!t.finishing) {
        if (
          !spec.suspend &&
          deadline !== undefined &&
          status.startTime &&
          this.c.due(Date.parse(status.startTime) + deadline * 1000, now)
        )
          t.finishing = {
            type: 'Failed',
            reason: 'DeadlineExceeded',
            message: 'Job was active longer than specified deadline',
          };
        else if (t.failed > (spec.backoffLimit ?? 6) || pastBackoffLimitOnFailure(job, active))
          t.finishing = {
            type: 'Failed',
            reason: 'BackoffLimitExceeded',
            message: 'Job has reached the specified backoff limit',
          };
        else if (done)
          t.finishing = {
            type: 'Complete',
            reason: 'CompletionsReached',
            message: 'Reached expected number of succeeded pods',
          };
      }
      if (t.finishing) {
        const f = t.finishing;
        const target = f.type === 'Failed' ? 'FailureTarget' : 'SuccessCriteriaMet';
        setCondition(status, target, 'True', f.reason, f.message, now);
        active.forEach((p) => this.deletePod(job, p, 'finish'));
        active = [];
        if (stillRunning().length === 0) {
          setCondition(status, f.type, 'True', f.reason, f.message, now);
          if (f.type === 'Complete') status.completionTime = kubeTime(now);
          if (f.type === 'Complete')
            this.c.events.record(job, 'Normal', 'Completed', 'Job completed', SOURCE);
          else this.c.events.record(job, 'Warning', f.reason, f.message, SOURCE);
        }
      } else if (spec.suspend) {
        if (!hasCondition(job, 'Suspended'))
          this.c.events.record(job, 'Normal', 'Suspended', 'Job suspended', SOURCE);
        setCondition(status, 'Suspended', 'True', 'JobSuspended', 'Job suspended', now);
        active.forEach((p) => this.deletePod(job, p, 'suspend'));
        active = [];
        if (stillRunning().length === 0 && status.startTime) {
          t.podsGoneAt ??= now;
          if (this.c.due(t.podsGoneAt + this.c.options.jobControllerDelayMs, now)) delete status.startTime;
        } else t.podsGoneAt = undefined;
      } else {
        t.podsGoneAt = undefined;
        if (hasCondition(job, 'Suspended')) {
          setCondition(status, 'Suspended', 'False', 'JobResumed', 'Job resumed', now);
          status.startTime = kubeTime(now);
          this.c.events.record(job, 'Normal', 'Resumed', 'Job resumed', SOURCE);
        }
        status.startTime ??= kubeTime(now);
        active.push(...this.startPods(job, t, mine, active, now));
      }
    }
    const terminating = stillRunning().filter((p) => !active.some((a) => a.metadata.uid === p.metadata.uid));
    if (active.length > 0) status.active = active.length;
    else delete status.active;
    status.ready = active.filter((p) => hasCondition(p, 'Ready')).length;
    status.terminating = terminating.length;
    if (t.succeeded > 0) status.succeeded = t.succeeded;
    if (t.failed > 0) status.failed = t.failed;
    if (t.completed.size > 0) status.completedIndexes = indexRanges(t.completed);
    if (JSON.stringify(status) !== JSON.stringify(job.status ?? {}))
      this.c.write(() => this.c.store.replace({ ...job, status }, 'system'));
  }

  private deletePod(job: any, pod: any, why: 'suspend' | 'finish'): void {
    this.ownDeletes.set(pod.metadata.uid, why);
    const done = this.c.write(() => this.c.store.delete('Pod', pod.metadata.namespace, pod.metadata.name));
    if (done)
      this.c.events.record(job, 'Normal', 'SuccessfulDelete', `Deleted pod: ${pod.metadata.name}`, SOURCE);
  }

  /** Creates the pods the Job is short of; returns them. */
  private startPods(job: any, t: Track, mine: any[], active: any[], now: number): any[] {
    if (t.retryAt !== undefined && !this.c.due(t.retryAt, now)) return [];
    const spec = job.spec;
    const parallelism: number = spec.parallelism ?? 1;
    const completions: number | undefined = spec.completions;
    const terminating = mine.filter((p) => !terminal(p) && p.metadata.deletionTimestamp);
    const blocking = spec.podReplacementPolicy === 'Failed' ? [...active, ...terminating] : active;
    const room = Math.max(0, parallelism - blocking.length);
    const indexes: (number | undefined)[] = [];
    if (spec.completionMode === 'Indexed') {
      const held = new Set(blocking.map(indexOf));
      for (let i = 0; i < (completions ?? 0) && indexes.length < room; i++)
        if (!t.completed.has(i) && !held.has(i)) indexes.push(i);
    } else {
      const remaining =
        completions === undefined ? (t.succeeded > 0 ? 0 : parallelism) : completions - t.succeeded;
      const count = Math.max(0, Math.min(parallelism, remaining) - blocking.length);
      for (let i = 0; i < count; i++) indexes.push(undefined);
    }
    const made: any[] = [];
    for (const index of indexes) {
      try {
        const created = this.c.store.create(this.podFor(job, index), 'system');
        made.push(created);
        this.c.events.record(
          job,
          'Normal',
          'SuccessfulCreate',
          `Created pod: ${created.metadata.name}`,
          SOURCE,
        );
        t.retryAt = undefined;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        this.c.problem(message);
        this.c.events.record(job, 'Warning', 'FailedCreate', `Error creating: ${message}`, SOURCE);
        t.retryAt = now + RETRY_MS;
        this.c.due(t.retryAt, now);
        break;
      }
    }
    return made;
  }

  private podFor(job: any, index: number | undefined): any {
    const template = structuredClone(job.spec.template ?? {});
    const jobName: string = job.metadata.name;
    const labels: Record<string, string> = { ...(template.metadata?.labels ?? {}) };
    const annotations: Record<string, string> = { ...(template.metadata?.annotations ?? {}) };
    const spec = template.spec ?? {};
    if (index !== undefined) {
      labels[INDEX_KEY] = String(index);
      annotations[INDEX_KEY] = String(index);
      spec.hostname = `${jobName}-${index}`;
      const env = {
        name: 'JOB_COMPLETION_INDEX',
        valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: `metadata.annotations['${INDEX_KEY}']` } },
      };
      for (const c of [...(spec.initContainers ?? []), ...(spec.containers ?? [])])
        if (!(c.env ?? []).some((e: any) => e.name === env.name))
          c.env = [...(c.env ?? []), structuredClone(env)];
    }
    return {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        generateName: index !== undefined ? `${jobName}-${index}-` : `${jobName}-`,
        namespace: job.metadata.namespace,
        labels,
        annotations,
        ownerReferences: [
          {
            apiVersion: 'batch/v1',
            kind: 'Job',
            name: jobName,
            uid: job.metadata.uid,
            controller: true,
            blockOwnerDeletion: true,
          },
        ],
      },
      spec,
    };
  }
}
