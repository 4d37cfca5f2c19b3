// How a queue stands against its quota, as the policies see it: over nominal, within nominal with a
// request, the weighted dominant resource share (fair sharing, cached per usage version) and the
// decayed usage history (closed-form exponential decay, no stepping).
import { RESOURCE_COUNT } from './quota.js';
import type { CoreState, QueueState } from './state.js';

export function historyAt(core: CoreState, q: QueueState, now: number): number {
  const h = core.halfLife;
  if (h === null) return 0;
  const dt = Math.max(0, now - q.history.at);
  const decay = 2 ** (-dt / h);
  // Closed form of ∫ rate·2^(−(t−s)/h) ds over the interval: exact, no stepping.
  return q.history.value * decay + (q.history.rateMilli / 1000) * (h / Math.LN2) * (1 - decay);
}

export function historyChange(
  core: CoreState,
  q: QueueState,
  now: number,
  deltaMilli: number,
  penalty: number,
): void {
  if (core.halfLife === null) return;
  q.history.value = historyAt(core, q, now) + penalty;
  q.history.at = now;
  q.history.rateMilli += deltaMilli;
}

/** Weighted dominant resource share: borrowed (usage above nominal, summed over flavors) × 1000 / lendable,
 * max over resources, / weight.
 */
export function weightedShare(q: QueueState): number {
  if (q.shareCache.version === q.usageVersion) return q.shareCache.value;
  const value = computeWeightedShare(q);
  q.shareCache.version = q.usageVersion;
  q.shareCache.value = value;
  return value;
}

export function computeWeightedShare(q: QueueState): number {
  if (!q.node.parent) return 0;
  let drs = 0;
  for (let r = 0; r < RESOURCE_COUNT; r++) {
    let borrowed = 0;
    for (const fq of q.node.flavors.values()) {
      if (!fq.declared[r]) continue;
      borrowed += Math.max(0, (fq.usage[r] as number) - (fq.subtree[r] as number));
    }
    if (borrowed <= 0) continue;
    const lend = q.lendable[r] as number;
    drs = Math.max(drs, lend > 0 ? (borrowed * 1000) / lend : Number.POSITIVE_INFINITY);
  }
  if (drs === 0) return 0;
  if (q.weight === 0) return Number.POSITIVE_INFINITY;
  return drs / q.weight;
}

export function overNominal(q: QueueState, f: string, r: number): boolean {
  const fq = q.node.flavors.get(f);
  return !!fq && !!fq.declared[r] && (fq.usage[r] as number) > (fq.nominal[r] as number);
}

/** Would the queue stay within its nominal quota with `request` added (its quota is owed to it)? */
export function withinNominal(q: QueueState, request: Map<string, number[]>): boolean {
  for (const [f, v] of request)
    for (let r = 0; r < RESOURCE_COUNT; r++) {
      const x = v[r] as number;
      if (x === 0 || !q.node.flavors.get(f)?.declared[r]) continue;
      if (usageOf(q, f, r) + x > nominalOf(q, f, r)) return false;
    }
  return true;
}

export function usageOf(q: QueueState, f: string, r: number): number {
  return (q.node.flavors.get(f)?.usage[r] as number | undefined) ?? 0;
}

export function nominalOf(q: QueueState, f: string, r: number): number {
  return (q.node.flavors.get(f)?.nominal[r] as number | undefined) ?? 0;
}

export function anyOverNominal(q: QueueState): boolean {
  for (const f of q.node.flavors.keys())
    for (let r = 0; r < RESOURCE_COUNT; r++) if (overNominal(q, f, r)) return true;
  return false;
}
