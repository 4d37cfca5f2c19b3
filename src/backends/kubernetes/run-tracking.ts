// The runs the Kubernetes backend answers for, and what to report about one: what the cluster shows
// for its Jobs and Pods of the current admission (status.ts) against what was already reported.
// backend.ts keeps them by Fairway job id and sends the events.
import type { V1Job, V1Pod } from '@kubernetes/client-node';
import type { BackendJob } from '../port.js';
import { ANNOTATION_ADMISSION } from './naming.js';
import { notRunningMessage, observeRun, tenantSafeMessage } from './status.js';

/** One admitted run the backend answers for: its Kubernetes Jobs (one per pod set) of this admission. */
export interface TrackedRun {
  job: BackendJob;
  admissionAt: string;
  namespace: string;
  names: string[];
  expectedPods: number;
  admittedAtMs: number;
  started: boolean;
  notRunningReported: boolean;
  /** A failure seen only on the Job so far: reported after a short wait for its pods' reasons. */
  failureSeenAt?: number;
}

/** Jobs and Pods are separate watches: a Job's Failed condition may arrive before its pod's OOMKilled. */
const POD_REASON_WAIT_MS = 1000;

/** The run of this admission with its built Jobs; what was seen of the same admission before is kept. */
export function trackedRun(
  job: BackendJob,
  namespace: string,
  built: V1Job[],
  previous: TrackedRun | undefined,
  now: () => number,
): TrackedRun {
  const admissionAt = String(job.admission.at);
  return {
    job,
    admissionAt,
    namespace,
    names: built.map((b) => b.metadata!.name!),
    expectedPods: built.reduce((n, b) => n + (b.spec?.parallelism ?? 1), 0),
    admittedAtMs: previous?.admissionAt === admissionAt ? previous.admittedAtMs : now(),
    started: previous?.admissionAt === admissionAt ? previous.started : false,
    notRunningReported: previous?.admissionAt === admissionAt ? previous.notRunningReported : false,
  };
}

/** What to do about a tracked run after looking at the cluster; `at` is when it was seen. */
export type RunChange =
  /** Nothing new to report. */
  | { kind: 'none' }
  /** Look again in afterMs (a failure waiting for its pods' reasons). */
  | { kind: 'recheck'; afterMs: number }
  | { kind: 'started'; at: number }
  | { kind: 'succeeded'; at: number }
  /** reason is tenant-safe; jobs: the run's Jobs, to be suspended when not finished. */
  | { kind: 'failed'; at: number; reason: string; jobs: V1Job[] }
  /** Stopped by the cluster (status.ts disruptionOf): requeue; jobs: the run's Jobs, to be suspended. */
  | { kind: 'disrupted'; at: number; reason: string; jobs: V1Job[] };

/**
 * Compares what the cluster shows for the tracked run with what was reported, and says the
 * difference. Marks the run started (and when a failure was first seen) as it goes.
 */
export function runChange(
  t: TrackedRun,
  jobsByName: Map<string, V1Job> | undefined,
  podsByName: Map<string, V1Pod> | undefined,
  now: () => number,
): RunChange {
  const jobId = t.job.jobId;
  const current = (o: V1Job | V1Pod) => o.metadata?.annotations?.[ANNOTATION_ADMISSION] === t.admissionAt;
  const jobs = [...(jobsByName?.values() ?? [])].filter((j) => current(j) && !j.spec?.suspend);
  if (jobs.length < t.names.length) return { kind: 'none' };
  const pods = [...(podsByName?.values() ?? [])].filter(current);
  const seen = observeRun(jobs, pods, t.expectedPods, { retries: t.job.maxRetries });
  const at = now();
  if (seen.kind === 'disrupted')
    return { kind: 'disrupted', at, reason: tenantSafeMessage(seen.reason, [jobId, t.job.tenant]), jobs };
  if (seen.kind === 'running' && !t.started) {
    t.started = true;
    return { kind: 'started', at };
  }
  if (seen.kind === 'succeeded' || seen.kind === 'failed') {
    if (seen.kind === 'failed' && seen.reason.startsWith('BackoffLimitExceeded')) {
      t.failureSeenAt ??= at;
      if (at - t.failureSeenAt < POD_REASON_WAIT_MS) return { kind: 'recheck', afterMs: POD_REASON_WAIT_MS };
    }
    if (seen.kind === 'succeeded') return { kind: 'succeeded', at };
    return { kind: 'failed', at, reason: tenantSafeMessage(seen.reason, [jobId, t.job.tenant]), jobs };
  }
  return { kind: 'none' };
}

/**
 * The tenant-safe message for a run not running `afterMs` after its admission, once: marks it
 * reported. Undefined when it started, was reported already or is not late yet.
 */
export function notRunningReport(
  t: TrackedRun,
  podsByName: Map<string, V1Pod> | undefined,
  now: number,
  afterMs: number,
): string | undefined {
  if (t.started || t.notRunningReported || now - t.admittedAtMs < afterMs) return undefined;
  t.notRunningReported = true;
  const pods = [...(podsByName?.values() ?? [])].filter(
    (p) => p.metadata?.annotations?.[ANNOTATION_ADMISSION] === t.admissionAt,
  );
  return tenantSafeMessage(notRunningMessage(pods, t.expectedPods), [t.job.jobId, t.job.tenant]);
}
