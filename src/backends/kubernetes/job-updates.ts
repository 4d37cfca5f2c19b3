// How an existing Job is brought to a new admission. Kubernetes lets a suspended Job change
// its scheduling directives (node selector, affinity, tolerations) and its template's labels
// and annotations, not its containers or completions: a Job whose workload differs (another
// flavor's resource name, another gang size) is replaced instead.
import { createHash } from 'node:crypto';
import type { V1Job } from '@kubernetes/client-node';
import type { KubeClient, ObjectRef } from './client.js';
import { ANNOTATION_ADMISSION } from './naming.js';
import { toWireJson } from './objects.js';
import { hasCondition } from './status.js';

/** Complete or Failed: the Job will not run again. */
export const finished = (j: V1Job): boolean => hasCondition(j, 'Complete') || hasCondition(j, 'Failed');

export function refOf(j: V1Job): ObjectRef {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: j.metadata!.name!, namespace: j.metadata!.namespace },
  };
}

/**
 * Creates the Job, or brings the existing one (a replay, a restart, a readmission) to this
 * admission. `cached` is the informer's copy: a new job's Job is simply created, without a
 * read (an existing one answers 409 and is read then).
 */
export async function ensureJob(
  client: KubeClient,
  cached: V1Job | undefined,
  desired: V1Job,
  admissionAt: string,
  timing: ReadmissionTiming = DEFAULT_TIMING,
): Promise<void> {
  const ref = refOf(desired);
  let existing = cached;
  if (!existing) {
    const { created, object } = await client.createOrGet(desired);
    if (created) return;
    existing = object;
  }
  const sameAdmission = existing.metadata?.annotations?.[ANNOTATION_ADMISSION] === admissionAt;
  if (sameAdmission && !finished(existing)) {
    if (existing.spec?.suspend) await client.mergePatch(ref, { spec: { suspend: false } });
    return;
  }
  if (sameAdmission) return; // finished: the informer reports how
  if (finished(existing) || !sameWorkload(existing, desired)) {
    // A pod template cannot change: a Job of an earlier run with another shape is replaced.
    await client.deleteIfPresent(ref);
    await waitGone(client, ref);
    await client.createOrGet(desired);
    return;
  }
  // Readmission of a suspended Job (Kueue's way): new placement and admission, then resume.
  if (!existing.spec?.suspend) await client.mergePatch(ref, { spec: { suspend: true } });
  // A real API server refuses a new placement until the Job controller, having stopped the
  // pods, has cleared status.startTime (as Kueue waits for it).
  if (existing.status?.startTime) existing = await waitStartTimeCleared(client, ref, timing);
  await client.mergePatch(ref, resumePatch(existing, desired, admissionAt));
}

export interface ReadmissionTiming {
  /** How long to wait for the Job controller to clear startTime. Default 60 s. */
  timeoutMs: number;
  pollMs: number;
}

const DEFAULT_TIMING: ReadmissionTiming = { timeoutMs: 60_000, pollMs: 200 };

/** A start that cannot go on yet; left for a retry (the outbox performs the start again). */
export class NotYetError extends Error {}

async function waitStartTimeCleared(
  client: KubeClient,
  ref: ObjectRef,
  timing: ReadmissionTiming,
): Promise<V1Job> {
  const deadline = Date.now() + timing.timeoutMs;
  for (;;) {
    const current = await client.read<V1Job>(ref);
    if (!current)
      throw new NotYetError(
        `Job ${ref.metadata.namespace}/${ref.metadata.name} is gone; the start is retried`,
      );
    if (!current.status?.startTime) return current;
    if (Date.now() >= deadline)
      throw new NotYetError(
        `Job ${ref.metadata.namespace}/${ref.metadata.name} is still stopping its pods (startTime set); the start is retried`,
      );
    await new Promise((resolve) => setTimeout(resolve, timing.pollMs));
  }
}

/** Waits until a deleted object is gone (its finalizers and grace done); throws after 10 s so the start is retried. */
export async function waitGone(client: KubeClient, ref: ObjectRef): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (!(await client.read(ref))) return;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(
    `${ref.kind} ${ref.metadata.namespace}/${ref.metadata.name} is still being deleted; the start is retried`,
  );
}

/** What Fairway built the Job's unchangeable part from, as a hash (an API server adds defaults to the spec
 * itself).
 */
export const ANNOTATION_WORKLOAD = 'fairway.dev/workload-hash';

/** A hash of the parts of a built Job that cannot change once it exists. */
export function workloadHash(built: V1Job): string {
  const spec = (
    toWireJson(built) as {
      spec?: { completions?: number; completionMode?: string; template?: { spec?: Record<string, unknown> } };
    }
  ).spec;
  const pod = spec?.template?.spec ?? {};
  const fixed = {
    completions: spec?.completions ?? null,
    completionMode: spec?.completionMode ?? null,
    containers: pod.containers ?? [],
    volumes: pod.volumes ?? [],
    priorityClassName: pod.priorityClassName ?? null,
    terminationGracePeriodSeconds: pod.terminationGracePeriodSeconds ?? null,
    subdomain: pod.subdomain ?? null,
  };
  return createHash('sha256').update(JSON.stringify(fixed)).digest('hex').slice(0, 16);
}

/** The built Job with its workload hash annotated (what `sameWorkload` compares later). */
export function withWorkloadHash(built: V1Job): V1Job {
  return {
    ...built,
    metadata: {
      ...built.metadata,
      annotations: { ...built.metadata?.annotations, [ANNOTATION_WORKLOAD]: workloadHash(built) },
    },
  };
}

/** Same containers, volumes and completions: the Job can be resumed for the new admission. */
export function sameWorkload(existing: V1Job, desired: V1Job): boolean {
  return existing.metadata?.annotations?.[ANNOTATION_WORKLOAD] === workloadHash(desired);
}

/** Keys of `before` absent from `after` set to null: a merge patch that replaces a map. */
function replacing(
  before: Record<string, string> | undefined,
  after: Record<string, string> | undefined,
): Record<string, string | null> | null {
  if (!after && !before) return null;
  const out: Record<string, string | null> = { ...(after ?? {}) };
  for (const key of Object.keys(before ?? {})) if (!(key in out)) out[key] = null;
  return out;
}

/** The merge patch that moves a suspended Job to the desired admission's placement and resumes it. */
export function resumePatch(existing: V1Job, desired: V1Job, admissionAt: string): Record<string, unknown> {
  const before = existing.spec?.template.spec;
  const after = desired.spec?.template.spec;
  return {
    metadata: { annotations: { [ANNOTATION_ADMISSION]: admissionAt } },
    spec: {
      suspend: false,
      parallelism: desired.spec?.parallelism ?? 1,
      template: {
        metadata: { annotations: { [ANNOTATION_ADMISSION]: admissionAt } },
        spec: {
          nodeSelector: replacing(before?.nodeSelector, after?.nodeSelector),
          affinity: after?.affinity ?? null,
          tolerations: after?.tolerations ?? null,
        },
      },
    },
  };
}
