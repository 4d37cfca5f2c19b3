// A batch run's objects: one Indexed Job per pod set (with its workload hash) and, for a job of
// several pods, the headless Service its pods find each other by; then their writes, the Service
// first (the pods' DNS names exist before the pods: a launcher resolves its peers as it starts).
import type { V1Job } from '@kubernetes/client-node';
import type { BackendJob } from '../port.js';
import { apiMessage, type KubeClient, statusOf } from './client.js';
import { jobObjects, jobService } from './job-objects.js';
import { ensureJob, withWorkloadHash } from './job-updates.js';
import type { JobBuildContext } from './pod-spec.js';
import type { KubernetesSettings } from './settings.js';

export interface BatchRunObjects {
  jobs: V1Job[];
  service: ReturnType<typeof jobService>;
}

/**
 * The run's objects, or why this cluster can never run it (half a GPU where only whole ones exist,
 * a flavor with no mapping): such a job fails with the reason rather than being retried for ever.
 */
export function batchRunObjects(
  job: BackendJob,
  ctx: JobBuildContext,
  settings: KubernetesSettings,
): BatchRunObjects | { cannotRun: string } {
  try {
    return { jobs: jobObjects(job, ctx, settings).map(withWorkloadHash), service: jobService(job, ctx) };
  } catch (error) {
    return {
      cannotRun: `cannot run on this Kubernetes cluster: ${error instanceof Error ? error.message : String(error)}`,
    };
  }
}

/**
 * Creates the run's objects, or brings those that exist (a replay, a readmission) to this admission.
 * Returns why the API refused them as invalid (retrying would be refused again and hold up every start
 * behind it), or null; other failures are thrown (the start is retried).
 */
export async function writeBatchRun(
  client: KubeClient,
  existing: (name: string, namespace: string | undefined) => V1Job | undefined,
  objects: BatchRunObjects,
  admissionAt: string,
): Promise<string | null> {
  try {
    if (objects.service) await client.createOrGet(objects.service);
    for (const desired of objects.jobs)
      await ensureJob(
        client,
        existing(desired.metadata!.name!, desired.metadata!.namespace),
        desired,
        admissionAt,
      );
    return null;
  } catch (error) {
    const status = statusOf(error);
    if (status !== 400 && status !== 422) throw error;
    return `the Kubernetes API refused its Job (${status}): ${apiMessage(error)}`;
  }
}
