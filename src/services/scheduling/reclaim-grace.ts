// How long a governed job's pods get to stop when it is preempted or reclaimed: its queue's
// isolation policy's reclaim grace (`reclaimGraceSeconds`). The backend turns it into the pods'
// termination grace period; the preemption notice says it. Queues no policy governs get the
// backend's own default.
import type { EntityManager } from '@mikro-orm/core';
import { type PolicyLibrary, policyForQueue } from '../../core/governance/index.js';
import { loadPolicyLibrary } from '../../persistence/governance/index.js';
import type { Job } from '../../persistence/jobs/index.js';
import { findPlain } from '../../persistence/plain-rows.js';
import { Tenant } from '../../persistence/tenancy/index.js';

/** Job id → its policy's reclaim grace in whole seconds, for the governed jobs among `jobs` (queue loaded). */
export async function reclaimGraceSeconds(
  em: EntityManager,
  jobs: readonly Job[],
): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  const governed = jobs.filter((j) => j.queue.isolationPolicy || j.queue.workloadType || j.queue.slaClass);
  if (!governed.length) return out;
  const library = await loadPolicyLibrary(em);
  const tiers = new Map(
    (
      await findPlain(
        em,
        Tenant,
        { id: [...new Set(governed.map((j) => j.tenant.id))] },
        { columns: ['id', 'tier'] },
      )
    ).map((t) => [t.id, t.tier] as const),
  );
  for (const job of governed) {
    const seconds = graceOf(library, job, tiers.get(job.tenant.id) ?? 'STANDARD');
    if (seconds !== undefined) out.set(job.id, seconds);
  }
  return out;
}

function graceOf(library: PolicyLibrary, job: Job, tier: string): number | undefined {
  const choice = policyForQueue(library, job.queue, tier);
  return choice ? Math.max(0, Math.round(choice.policy.reclaimGraceMs / 1000)) : undefined;
}
