// The nodes a job may be placed on: schedulable, not dedicated to another tenant, in its queue's
// dedicated pool if it has one, and only its tenant's dedicated nodes for a DEDICATED queue without a pool.
import type { NodeState } from '../nodes.js';
import type { JobState } from '../state.js';

export function eligibleFor(job: JobState): (n: NodeState) => boolean {
  const tenant = job.spec.tenant;
  const q = job.queue;
  const pool = q.spec.dedicatedPool;
  const dedicatedOnly = q.isolation === 'DEDICATED' && pool === undefined;
  return (n) => {
    if (n.spec.unschedulable) return false;
    const t = n.spec.dedicatedTenant;
    if (t !== undefined && t !== tenant) return false;
    if (pool !== undefined && n.spec.pool !== pool) return false;
    if (dedicatedOnly && t !== tenant) return false;
    return true;
  };
}
