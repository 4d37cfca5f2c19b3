// Direct assignment (Fit → Borrow, no preemption): per pod set, the flavors in preference order
// ranked by quota mode, each tried with a trial placement on the job's eligible nodes.
import { type FlavorState, type PlaceScore, type PodAlloc, scoreLess } from '../nodes.js';
import { reservationGate } from '../reservation.js';
import type { CoreState, JobState, PodSetState } from '../state.js';
import { rollback, tCharge, tPlace } from '../trail.js';
import { addVec } from '../units.js';
import { diagnose } from './diagnose.js';
import { eligibleFor } from './eligible.js';
import { choosesByScore, flavorTiers } from './flavor-score.js';
import type { Fail, PodSetPlan } from './plan.js';
import { BORROW, nominalOnly, quotaMode } from './quota-mode.js';

/**
 * Fit → Borrow without preemption: per pod set, the flavors in preference order sorted by mode,
 * charging quota and placing pods on the trail. On failure everything is rolled back and a
 * diagnosis of the best option is returned.
 */
export function assignDirect(
  core: CoreState,
  job: JobState,
  counts: readonly number[],
): { ok: true; parts: PodSetPlan[]; usage: Map<string, number[]> } | Fail {
  const q = job.queue;
  const mark = core.trail.length;
  const parts: PodSetPlan[] = [];
  const usage = new Map<string, number[]>();
  const eligible = eligibleFor(job);
  for (let i = 0; i < job.podSets.length; i++) {
    const ps = job.podSets[i] as PodSetState;
    const count = counts[i] as number;
    const vec = [ps.shape.gpu * count, ps.shape.cpu * count, ps.shape.mem * count];
    const options = ps.flavors.map((f, pref) => ({
      f,
      pref,
      ...quotaMode(q, f, vec, usage.get(f), nominalOnly(job)),
    }));
    const tiers = flavorTiers(
      job,
      options.filter((o) => o.mode <= BORROW),
      choosesByScore(core, job, i),
    );
    let placed = false;
    const nodeFailed: string[] = [];
    // charge and place on one option; on failure nothing stays on the trail
    const tryOn = (o: (typeof options)[number], score?: PlaceScore): PodAlloc[] | null => {
      const m = core.trail.length;
      tCharge(core, q, new Map([[o.f, vec]]), nominalOnly(job));
      const allocs = tPlace(
        core,
        core.flavors.get(o.f) as FlavorState,
        count,
        ps.shape,
        reservationGate(core, job, o.mode, eligible),
        score,
      );
      if (!allocs) rollback(core, m);
      return allocs;
    };
    for (const tier of tiers) {
      let chosen: (typeof options)[number] | null = null;
      let allocs: PodAlloc[] | null = null;
      if (tier.length === 1) {
        chosen = tier[0] as (typeof options)[number];
        allocs = tryOn(chosen);
        if (!allocs) nodeFailed.push(chosen.f);
      } else {
        // every option of the tier placed on trial; the best score wins (ties: declaration order)
        let bestScore: PlaceScore | null = null;
        let kept = false;
        for (let k = 0; k < tier.length; k++) {
          const o = tier[k] as (typeof options)[number];
          const m = core.trail.length;
          const sc: PlaceScore = { frag: 0, leftGpu: 0, leftCpu: 0 };
          const a = tryOn(o, sc);
          if (!a) {
            nodeFailed.push(o.f);
            continue;
          }
          const better = bestScore === null || scoreLess(sc, bestScore);
          if (better) {
            chosen = o;
            bestScore = sc;
          }
          // the last option, when best, stays placed; anything else is undone
          if (better && k === tier.length - 1) {
            allocs = a;
            kept = true;
          } else rollback(core, m);
        }
        if (chosen && !kept) allocs = tryOn(chosen);
      }
      if (chosen && allocs) {
        parts.push({ ps, flavor: chosen.f, count, allocs });
        addVec(usage, chosen.f, vec, 1);
        placed = true;
        break;
      }
    }
    if (placed) continue;
    rollback(core, mark);
    return diagnose(core, job, options, nodeFailed, ps, count);
  }
  return { ok: true, parts, usage };
}
