// Why a job does not fit: NoNodeFits / NoFittingNode with per-flavor nodeFit, WindowClosed,
// ExceedsMaxQuota or WaitingForQuota with its numeric QuotaShortfall.
import { guaranteedOf } from '../guaranteed.js';
import type { FlavorState } from '../nodes.js';
import { available, potentialAvailable } from '../quota.js';
import { convertQuotas } from '../quota-config.js';
import { keptOffReserved } from '../reservation.js';
import type { CoreState, JobState, PodSetState, QueueState } from '../state.js';
import { rollback, tPlace } from '../trail.js';
import type { NodeFit, QuotaShortfall, ResourceName } from '../types.js';
import { RES, toApi } from '../units.js';
import { eligibleFor } from './eligible.js';
import type { Fail } from './plan.js';
import { NOFIT, nominalOnly } from './quota-mode.js';

/** Said of a job that is never preempted, after its numbers (quota-mode.ts, nominalOnly). */
const NOMINAL_ONLY_WHY =
  "its priority class is never preempted, so it runs only within its queue's nominal and does not borrow";

/**
 * The numbers behind a quota wait; for a `nominalOnly` job, what applies to it (no borrowing: limit 0,
 * at most its nominal, and now at most what the nominal leaves beside the queue's guaranteed usage).
 */
export function shortfall(job: JobState, f: string, r: number, requested: number): QuotaShortfall {
  const q = job.queue;
  const fq = q.node.flavors.get(f);
  const bl = fq?.borrowingLimit[r];
  const s: QuotaShortfall = {
    flavor: f,
    resource: RES[r] as ResourceName,
    requested: toApi(r, requested),
    available: fq ? toApi(r, Math.max(0, available(q.node, f, r))) : 0,
    nominal: fq ? toApi(r, fq.nominal[r] as number) : 0,
    used: fq ? toApi(r, fq.usage[r] as number) : 0,
    maxAvailable: fq ? toApi(r, potentialAvailable(q.node, f, r)) : 0,
  };
  if (bl !== null && bl !== undefined) s.borrowingLimit = toApi(r, bl);
  if (fq && nominalOnly(job)) {
    s.guaranteedUsed = toApi(r, guaranteedOf(q, f, r));
    s.available = Math.min(s.available, Math.max(0, s.nominal - s.guaranteedUsed));
    s.maxAvailable = Math.min(s.maxAvailable, s.nominal);
    s.borrowingLimit = 0;
    s.nominalOnly = true;
  }
  return s;
}

/**
 * A `nominalOnly` quota wait in numbers: the room its nominal leaves beside the queue's jobs that are
 * never preempted, and whether the request is beyond it (it waits for such jobs to end) or within it
 * (the rest of the room is held by jobs it could not preempt, or lent where it could not reclaim).
 */
function guaranteedWhy(sf: QuotaShortfall): string {
  const used = sf.guaranteedUsed ?? 0;
  const room = Math.max(0, sf.nominal - used);
  const beside = `its priority class is never preempted, so it runs only within the ${room} its queue's nominal leaves beside the queue's jobs that are never preempted (${used} of ${sf.nominal}) and does not borrow`;
  return sf.requested > room + 1e-9
    ? `${beside}; it waits for those jobs to end`
    : `${beside}; the rest of that room is used by preemptible jobs or lent, and preempting or reclaiming could not free it now`;
}

export function diagnose(
  core: CoreState,
  job: JobState,
  options: { f: string; mode: number; r: number; requested: number }[],
  nodeFailed: string[],
  ps: PodSetState,
  count: number,
): Fail {
  const q = job.queue;
  if (nodeFailed.length > 0) {
    const eligible = eligibleFor(job);
    const nodeFit: NodeFit[] = [];
    for (const f of nodeFailed) {
      let largest = 0;
      let free = 0;
      let any = false;
      for (const n of (core.flavors.get(f) as FlavorState).nodes) {
        if (!eligible(n)) continue;
        any = true;
        largest = Math.max(largest, n.freeGpuTotal);
        free += n.freeGpuTotal;
      }
      if (any)
        nodeFit.push({
          flavor: f,
          largestFreeGpusOnOneNode: largest / 1000,
          freeGpus: free / 1000,
          podsNeeded: count,
          gpusPerPod: ps.shape.gpu / 1000,
        });
    }
    const quotaWaitToo = options.some((o) => !nodeFailed.includes(o.f) && o.mode !== NOFIT);
    if (nodeFit.length === 0) {
      return {
        ok: false,
        reason: 'NoFittingNode',
        message: `quota allows it, but there is no eligible node of ${nodeFailed.join(', ')} for its pods`,
        waitFlavors: nodeFailed,
        ...(quotaWaitToo ? { quotaWaitToo } : {}),
      };
    }
    const blocks = nodeFit
      .map(
        (n) =>
          `${n.flavor}: largest free on one node ${n.largestFreeGpusOnOneNode}, free in total ${n.freeGpus}`,
      )
      .join('; ');
    const off = reservedOnly(core, job, nodeFailed, ps, count);
    return {
      ok: false,
      reason: 'NoNodeFits',
      message: off
        ? `quota allows it, but ${off.nodes} node(s) with room are reserved from ${new Date(off.start).toISOString()} for a job that has waited long, and this job would borrow there and is not expected to end by then`
        : `quota allows it, but no set of eligible nodes has room for ${count} pod(s) of ${ps.shape.gpu / 1000} GPU (${blocks})`,
      nodeFit,
      waitFlavors: nodeFailed,
      ...(quotaWaitToo ? { quotaWaitToo } : {}),
      ...(off ? { reservedOff: off } : {}),
    };
  }
  const best = [...options].sort((a, b) => a.mode - b.mode)[0];
  if (!best) return { ok: false, reason: 'ExceedsMaxQuota', message: 'no flavor to try', waitFlavors: [] };
  const sf = shortfall(job, best.f, best.r, best.requested);
  const why = sf.nominalOnly ? `: ${NOMINAL_ONLY_WHY}` : '';
  if (best.mode === NOFIT) {
    if (windowWouldAllow(core, q, best.f, best.r, best.requested, sf.nominalOnly === true)) {
      return {
        ok: false,
        reason: 'WindowClosed',
        message: `${sf.resource} on ${sf.flavor}: requested ${sf.requested}, the queue gets at most ${sf.maxAvailable} outside its time window${why}`,
        shortfall: sf,
        waitFlavors: [],
      };
    }
    return {
      ok: false,
      reason: 'ExceedsMaxQuota',
      message: sf.nominalOnly
        ? `${sf.resource} on ${sf.flavor}: requested ${sf.requested} exceeds the queue's nominal (${sf.nominal})${why}`
        : `${sf.resource} on ${sf.flavor}: requested ${sf.requested} exceeds the most the queue can ever get (${sf.maxAvailable})`,
      shortfall: sf,
      waitFlavors: [],
    };
  }
  const numbers = `nominal ${sf.nominal}, used ${sf.used}${sf.nominalOnly ? `, never preempted ${sf.guaranteedUsed ?? 0}` : ''}${sf.borrowingLimit !== undefined ? `, borrowing limit ${sf.borrowingLimit}` : ''}`;
  return {
    ok: false,
    reason: 'WaitingForQuota',
    message: `${sf.resource} on ${sf.flavor}: requested ${sf.requested}, available ${sf.available} (${numbers})${sf.nominalOnly ? `: ${guaranteedWhy(sf)}` : ''}`,
    shortfall: sf,
    waitFlavors: [],
  };
}

/** Kept out only by reservations (reservation.ts): reserved nodes have room, and with them the pods would be
 * placed (a trial, rolled back).
 */
function reservedOnly(
  core: CoreState,
  job: JobState,
  flavors: string[],
  ps: PodSetState,
  count: number,
): { nodes: number; start: number } | null {
  const off = keptOffReserved(core, job, flavors);
  if (!off) return null;
  const eligible = eligibleFor(job);
  for (const f of flavors) {
    const m = core.trail.length;
    const ok = tPlace(core, core.flavors.get(f) as FlavorState, count, ps.shape, eligible) !== null;
    rollback(core, m);
    if (ok) return off;
  }
  return null;
}

/** Would another of the queue's time windows allow the request (a `nominalOnly` job: within that window's nominal)? */
export function windowWouldAllow(
  core: CoreState,
  q: QueueState,
  f: string,
  r: number,
  requested: number,
  withinNominal = false,
): boolean {
  const ws = q.spec.timeWindows ?? [];
  for (let i = 0; i < ws.length; i++) {
    if (i === q.activeWindow) continue;
    const fq = convertQuotas(core, (ws[i] as (typeof ws)[number]).quotas, q.isolation, q.spec.name).get(f);
    if (!fq?.declared[r]) continue;
    const bl = withinNominal ? 0 : fq.borrowingLimit[r];
    if ((fq.nominal[r] as number) + (bl ?? Number.POSITIVE_INFINITY) >= requested) return true;
  }
  return false;
}
