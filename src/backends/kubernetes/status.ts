// Kubernetes' reality → a Fairway run state: from a job's Kubernetes Jobs (one per pod set) and their
// pods. Pure: the backend feeds it what its informers hold and turns changes into BackendEvents.
import type { V1ContainerStatus, V1Job, V1Pod } from '@kubernetes/client-node';

export type RunObservation =
  /** Not all pods running yet; message says why (Unschedulable: …, ContainerCreating: …, 3/4 pods running).
   *
   */
  | { kind: 'pending'; message: string }
  /** Every expected pod Running (or already Succeeded). */
  | { kind: 'running' }
  /** Every Job has condition Complete=True. */
  | { kind: 'succeeded' }
  /** Any Job Failed=True, any pod Failed, or a container stuck on an image/config error. */
  | { kind: 'failed'; reason: string }
  /** A pod stopped by the cluster rather than by the job (see `disruptionOf`): requeued, not failed. */
  | { kind: 'disrupted'; reason: string };

const MAX_TEXT = 500;

/** Waiting reasons that will not fix themselves: the job is failed rather than left pending. */
const FATAL_WAITING = new Set([
  'ErrImagePull',
  'ImagePullBackOff',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
]);

/** jobs: the Fairway job's Kubernetes Jobs of the current admission; pods: their pods; expected: total
 * admitted pods.
 */
export function observeRun(
  jobs: readonly V1Job[],
  pods: readonly V1Pod[],
  expectedPods: number,
  options: { retries?: number } = {},
): RunObservation {
  const failedJob = jobs.find((j) => hasCondition(j, 'Failed') || hasCondition(j, 'FailureTarget'));
  // The job's own deadline first: the Job controller deletes the pods it kills for it.
  if (failedJob && failureReason(failedJob) === 'DeadlineExceeded')
    return { kind: 'failed', reason: clip(jobFailure(failedJob, pods)) };
  if (jobs.length > 0 && jobs.every((j) => hasCondition(j, 'Complete'))) return { kind: 'succeeded' };
  // A failed Job's controller deletes its remaining pods itself: those deletions are not disruptions.
  const disruption = firstDisruption(pods, { deletions: !failedJob });
  if (disruption) return { kind: 'disrupted', reason: clip(disruption) };
  if (failedJob) return { kind: 'failed', reason: clip(jobFailure(failedJob, pods)) };

  const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
  // With retries left the Job controller replaces a failed pod; its Failed condition says when they ran out.
  const podFailure = (options.retries ?? 0) > 0 ? firstFatalWait(live) : firstPodFailure(live);
  if (podFailure) return { kind: 'failed', reason: clip(podFailure) };

  const up = live.filter((p) => p.status?.phase === 'Running' || p.status?.phase === 'Succeeded').length;
  if (jobs.length > 0 && up >= expectedPods) return { kind: 'running' };
  if (jobs.length === 0) return { kind: 'pending', message: 'no Kubernetes Job exists yet' };
  const suspended = jobs.find((j) => j.spec?.suspend);
  if (suspended)
    return {
      kind: 'pending',
      message: clip(`Suspended: Job ${suspended.metadata?.name ?? ''} is suspended`),
    };
  return { kind: 'pending', message: notRunningMessage(live, expectedPods) };
}

/**
 * A one-line why for an admitted job whose pods are not all running, reason first:
 * `Unschedulable: 0/3 nodes are available… (2/4 pods running)`, `ContainerCreating: pod x (0/1 pods running)`.
 */
export function notRunningMessage(pods: readonly V1Pod[], expectedPods?: number): string {
  const live = pods.filter((p) => !p.metadata?.deletionTimestamp);
  const running = live.filter((p) => p.status?.phase === 'Running' || p.status?.phase === 'Succeeded').length;
  const expected = expectedPods ?? live.length;
  const count =
    live.length < expected
      ? `${live.length}/${expected} pods created, ${running} running`
      : `${running}/${expected} pods running`;
  const why = pendingReason(live);
  return clip(why ? `${why} (${count})` : count);
}

function pendingReason(pods: readonly V1Pod[]): string | null {
  const waiting = pods.filter((p) => p.status?.phase !== 'Running' && p.status?.phase !== 'Succeeded');
  for (const pod of waiting) {
    const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    if (scheduled?.status === 'False')
      return `${scheduled.reason ?? 'Unschedulable'}: ${scheduled.message ?? `pod ${podName(pod)} is not scheduled`}`;
  }
  for (const pod of waiting) {
    for (const cs of containerStatuses(pod)) {
      const w = cs.state?.waiting;
      if (w?.reason) return `${w.reason}: ${w.message ?? `container ${cs.name} of pod ${podName(pod)}`}`;
    }
  }
  const first = waiting[0];
  if (first)
    return `${first.status?.phase ?? 'Pending'}: pod ${podName(first)}${first.spec?.nodeName ? ` on node ${first.spec.nodeName}` : ' is not scheduled yet'}`;
  return null;
}

/** Why the cluster stopped these pods, when it did (the first such pod); null when none was disrupted. */
export function firstDisruption(
  pods: readonly V1Pod[],
  options: { deletions?: boolean } = {},
): string | null {
  for (const pod of pods) {
    const why = disruptionOf(pod, options.deletions ?? true);
    if (why) return why;
  }
  return null;
}

/**
 * A pod stopped from outside the job: marked DisruptionTarget by the cluster (eviction API, a
 * drain, the scheduler's preemption, the taint manager, PodGC for a lost node, the kubelet under
 * node pressure), evicted by a kubelet that sets only `reason: Evicted`, or deleted by someone
 * while its Job runs (the Job controller deletes pods only of suspended or finished Jobs).
 */
export function disruptionOf(pod: V1Pod, deletions = true): string | null {
  const target = pod.status?.conditions?.find((c) => c.type === 'DisruptionTarget' && c.status === 'True');
  if (target)
    return `${target.reason ?? 'DisruptionTarget'}: ${target.message ?? `pod ${podName(pod)} was disrupted`}`;
  if (pod.status?.reason === 'Evicted')
    return `Evicted: ${pod.status.message ?? `pod ${podName(pod)} was evicted by its node`}`;
  if (deletions && pod.metadata?.deletionTimestamp && pod.status?.phase !== 'Succeeded')
    return `DeletedFromOutside: pod ${podName(pod)} was deleted while its job ran`;
  return null;
}

function failureReason(job: V1Job): string | undefined {
  return job.status?.conditions?.find(
    (c) => (c.type === 'Failed' || c.type === 'FailureTarget') && c.status === 'True',
  )?.reason;
}

function jobFailure(job: V1Job, pods: readonly V1Pod[]): string {
  const cond = job.status?.conditions?.find(
    (c) => (c.type === 'Failed' || c.type === 'FailureTarget') && c.status === 'True',
  );
  const reason = cond?.reason ?? 'Failed';
  // The deadline is the job's own limit: say so, whatever the pods died of when they were killed.
  if (reason === 'DeadlineExceeded')
    return `DeadlineExceeded: ${cond?.message ?? 'the job ran longer than its maximum run time'}`;
  // BackoffLimitExceeded only says "a pod failed": the pod says why.
  return firstPodFailure(pods) ?? `${reason}: ${cond?.message ?? `Job ${job.metadata?.name ?? ''} failed`}`;
}

function firstPodFailure(pods: readonly V1Pod[]): string | null {
  for (const pod of pods) {
    for (const cs of containerStatuses(pod)) {
      const t =
        cs.state?.terminated ?? (pod.status?.phase === 'Failed' ? cs.lastState?.terminated : undefined);
      if (t && t.exitCode !== 0) return terminatedText(pod, cs.name, t.reason, t.exitCode, t.message);
      const w = cs.state?.waiting;
      if (w?.reason && FATAL_WAITING.has(w.reason))
        return `${w.reason}: ${w.message ?? `container ${cs.name} of pod ${podName(pod)} cannot start`}`;
    }
    if (pod.status?.phase === 'Failed') {
      return `${pod.status.reason ?? 'Failed'}: ${pod.status.message ?? `pod ${podName(pod)} failed`}`;
    }
  }
  return null;
}

function terminatedText(
  pod: V1Pod,
  container: string,
  reason: string | undefined,
  exitCode: number,
  message: string | undefined,
): string {
  const where = `container ${container} of pod ${podName(pod)}`;
  if (reason === 'OOMKilled') return `OOMKilled: ${where} ran out of memory (exit code ${exitCode})`;
  return `${reason ?? 'Error'}: ${where} exited with code ${exitCode}${message ? `: ${message.trim()}` : ''}`;
}

/** A container that cannot start (image, config): no retry would help. */
function firstFatalWait(pods: readonly V1Pod[]): string | null {
  for (const pod of pods)
    for (const cs of containerStatuses(pod)) {
      const w = cs.state?.waiting;
      if (w?.reason && FATAL_WAITING.has(w.reason))
        return `${w.reason}: ${w.message ?? `container ${cs.name} of pod ${podName(pod)} cannot start`}`;
    }
  return null;
}

function containerStatuses(pod: V1Pod): V1ContainerStatus[] {
  return [...(pod.status?.initContainerStatuses ?? []), ...(pod.status?.containerStatuses ?? [])];
}

/** The Job has this condition with status True. */
export function hasCondition(job: V1Job, type: string): boolean {
  return job.status?.conditions?.some((c) => c.type === type && c.status === 'True') ?? false;
}

function podName(pod: V1Pod): string {
  return pod.metadata?.name ?? '(unnamed)';
}

function clip(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length <= MAX_TEXT ? line : `${line.slice(0, MAX_TEXT - 1)}…`;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;
const TAINT = /\{([^:{}]+):[^{}]*\}/g;

/**
 * A cluster message as the job's tenant may read it. The scheduler's messages name the
 * taints that turned a pod away, with their values, and a dedicated node's taint value is
 * another tenant's id: taint values are dropped, and any id but those in `keep` (the job's
 * own, its tenant's) is replaced, so no other tenant's existence shows.
 */
export function tenantSafeMessage(message: string, keep: readonly string[]): string {
  const own = new Set(keep.map((k) => k.toLowerCase()));
  return message
    .replace(TAINT, (_all, key: string) => `{${key.trim()}}`)
    .replace(UUID, (id) => (own.has(id.toLowerCase()) ? id : '<another id>'));
}
