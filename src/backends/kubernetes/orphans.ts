// What a restart or takeover finds that Fairway no longer runs: Jobs of jobs that are not live
// (finished Jobs stay for their TTL, for their logs), workload objects of served kinds, and the
// headless Services of multi-pod jobs that ended; and when a suspended run's pods are all gone.
import type { V1Job, V1Pod } from '@kubernetes/client-node';
import type { KubeClient } from './client.js';
import type { CustomRuns } from './custom-runs.js';
import { finished, refOf } from './job-updates.js';
import { ANNOTATION_ADMISSION } from './naming.js';
import { CUSTOM_WORKLOADS, type CustomWorkload } from './workload-kinds.js';

/** The headless Service of a finished or cancelled multi-pod job (named by its pods' subdomain). */
export async function removeJobServices(client: KubeClient, jobs: readonly V1Job[]): Promise<void> {
  const seen = new Set<string>();
  for (const j of jobs) {
    const name = j.spec?.template.spec?.subdomain;
    const namespace = j.metadata?.namespace;
    if (!name || seen.has(`${namespace}/${name}`)) continue;
    seen.add(`${namespace}/${name}`);
    await client.deleteIfPresent({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace } });
  }
}

/**
 * Deletes what Fairway made for jobs not in `live`; a call that fails is added to `problems` and
 * the rest goes on. Returns how many objects were deleted.
 */
export async function removeOrphans(
  client: KubeClient,
  jobsById: ReadonlyMap<string, ReadonlyMap<string, V1Job>>,
  custom: CustomRuns,
  live: ReadonlySet<string>,
  problems: unknown[],
): Promise<number> {
  let removed = 0;
  for (const [jobId, byName] of [...jobsById]) {
    if (live.has(jobId)) continue;
    await removeJobServices(client, [...byName.values()]).catch((error: unknown) => problems.push(error));
    for (const j of byName.values()) {
      if (finished(j)) continue;
      try {
        await client.deleteIfPresent(refOf(j));
        removed++;
      } catch (error) {
        problems.push(error);
      }
    }
  }
  const served: CustomWorkload[] = [];
  for (const w of Object.values(CUSTOM_WORKLOADS))
    if (await client.serves(w.apiVersion, w.crdKind).catch(() => false)) served.push(w);
  removed += await custom.removeOrphans(live, served).catch((error: unknown) => {
    problems.push(error);
    return 0;
  });
  return removed;
}

/** No pod of this admission is still running or stopping: a suspended run's GPUs are free. */
export function allStopped(pods: Iterable<V1Pod>, admissionAt: string): boolean {
  for (const p of pods)
    if (
      p.metadata?.annotations?.[ANNOTATION_ADMISSION] === admissionAt &&
      p.status?.phase !== 'Succeeded' &&
      p.status?.phase !== 'Failed'
    )
      return false;
  return true;
}
