// A validated queue's quotas: at an instant (time windows), as the core takes its windows, summed.
import type { TimeWindowSpec } from '../core/scheduling/index.js';
import { windowOpen } from '../core/scheduling/index.js';
import type { Resource, ResourceQuota, SimQueue, SimQuotas } from './queues-types.js';

/**
 * The queue's quotas at instant `at`: its base quotas with the first open time window's laid over
 * them (flavors/resources the window does not name keep their base values) — the core's rule.
 * The queue itself when it has no window.
 */
export function queueAt(q: SimQueue, at: number): SimQueue {
  if (!q.timeWindows || q.timeWindows.length === 0) return q;
  const w = q.timeWindows.find((x) => windowOpen(x, at));
  if (!w) return q;
  const quotas: SimQuotas = {};
  for (const [f, res] of Object.entries(q.quotas)) quotas[f] = { ...res };
  for (const [f, res] of Object.entries(w.quotas)) quotas[f] = { ...(quotas[f] ?? {}), ...res };
  return { ...q, quotas };
}

/**
 * The windows as a policy passes them to the core: as written (`fairway`), or with the static
 * policy's rule applied to their quotas too (borrowingLimit 0 on every declared resource:
 * the queue keeps exactly the nominal its schedule gives it). Undefined without windows.
 */
export function coreTimeWindows(q: SimQueue, noBorrowing: boolean): TimeWindowSpec[] | undefined {
  if (!q.timeWindows || q.timeWindows.length === 0) return undefined;
  return q.timeWindows.map((w) => {
    if (!noBorrowing) return { ...w, days: [...w.days], quotas: w.quotas };
    const quotas: SimQuotas = {};
    for (const [f, res] of Object.entries(w.quotas)) {
      const fq: SimQuotas[string] = {};
      for (const [r, lim] of Object.entries(res) as [Resource, ResourceQuota | undefined][])
        if (lim) fq[r] = { nominal: lim.nominal, borrowingLimit: 0 };
      quotas[f] = fq;
    }
    return { ...w, days: [...w.days], quotas };
  });
}

/** Nominal GPU quota of a queue summed over flavors. */
export function nominalGpus(q: SimQueue): number {
  let s = 0;
  for (const f of Object.values(q.quotas)) s += f.gpu?.nominal ?? 0;
  return s;
}
