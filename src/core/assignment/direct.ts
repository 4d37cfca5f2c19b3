// Direct assignment (Fit → Borrow, no preemption): per pod set, the flavors in preference order
// ranked by quota mode, each tried with a trial placement on the job's eligible nodes.
import type { FlavorState, NodeState } from '../nodes.js';
import type { CoreState, JobState, PodSetState } from '../state.js';
import { rollback, tCharge, tPlace } from '../trail.js';
import { addVec } from '../units.js';
import { diagnose } from './diagnose.js';
import type { Fail, PodSetPlan } from './plan.js';
import { BORROW, quotaMode } from './quota-mode.js';

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

/**
 * Fit → Borrow without preemption: per pod set, the flavors in preference order sorted by mode,
 * charging quota and placing pods on the trail. On failure everything is rolled back and a
 * diagnosis of the best option is returned.
 */
export function assignDirect(core: CoreState, job: JobState, counts: readonly number[]): { ok: true; parts: PodSetPlan[]; usage: Map<string, number[]> } | Fail {
  const q = job.queue;
  const mark = core.trail.length;
  const parts: PodSetPlan[] = [];
  const usage = new Map<string, number[]>();
  const eligible = eligibleFor(job);
  for (let i = 0; i < job.podSets.length; i++) {
    const ps = job.podSets[i] as PodSetState;
    const count = counts[i] as number;
    const vec = [ps.shape.gpu * count, ps.shape.cpu * count, ps.shape.mem * count];
    const options = ps.flavors.map((f, pref) => ({ f, pref, ...quotaMode(q, f, vec, usage.get(f)) }));
    const ordered = options.filter((o) => o.mode <= BORROW).sort((a, b) => a.mode - b.mode || a.pref - b.pref);
    let placed = false;
    const nodeFailed: string[] = [];
    for (const o of ordered) {
      const m = core.trail.length;
      const u = new Map([[o.f, vec]]);
      tCharge(core, q, u);
      const allocs = tPlace(core, core.flavors.get(o.f) as FlavorState, count, ps.shape, eligible);
      if (allocs) {
        parts.push({ ps, flavor: o.f, count, allocs });
        addVec(usage, o.f, vec, 1);
        placed = true;
        break;
      }
      rollback(core, m);
      nodeFailed.push(o.f);
    }
    if (placed) continue;
    rollback(core, mark);
    return diagnose(core, job, options, nodeFailed, ps, count);
  }
  return { ok: true, parts, usage };
}
