// The fairness arithmetic of the replay metrics: Jain's index and each tenant's GPU entitlement
// (nominal first, then fair-share weights, by weighted water-filling).
import type { TenantInfo } from './engine.js';

/** Jain's fairness index of non-negative values; null for an empty list. */
export function jain(xs: readonly number[]): number | null {
  if (xs.length === 0) return null;
  let s = 0;
  let s2 = 0;
  for (const x of xs) {
    s += x;
    s2 += x * x;
  }
  if (s2 === 0) return 1;
  return (s * s) / (xs.length * s2);
}

/**
 * Weighted water-filling: share `amount` among entries in proportion to `weights`,
 * never giving an entry more than its cap; what a capped entry leaves is shared again.
 * Entries with weight 0 receive nothing.
 */
export function waterFill(caps: readonly number[], weights: readonly number[], amount: number): number[] {
  const out = caps.map(() => 0);
  let left = amount;
  let active = caps.map((_c, i) => i).filter((i) => caps[i]! > 1e-12 && weights[i]! > 0);
  while (left > 1e-12 && active.length > 0) {
    const wsum = active.reduce((s, i) => s + weights[i]!, 0);
    const level = left / wsum;
    const capped = active.filter((i) => caps[i]! - out[i]! <= level * weights[i]! + 1e-12);
    if (capped.length === 0) {
      for (const i of active) out[i]! += level * weights[i]!;
      left = 0;
      break;
    }
    for (const i of capped) {
      left -= caps[i]! - out[i]!;
      out[i] = caps[i]!;
    }
    const set = new Set(capped);
    active = active.filter((i) => !set.has(i));
  }
  return out;
}

/**
 * Instantaneous GPU entitlement of each tenant given its demand:
 * 1. guaranteed part g = min(demand, nominal) (if Σg exceeds capacity, capacity is
 *    water-filled by nominal);
 * 2. the capacity left, C − Σg, is water-filled over the unmet demand (demand − g) in
 *    proportion to the tenants' fair-share weights;
 * 3. anything still left goes, equally, to unmet demand of zero-weight tenants.
 * So Σ entitlement = min(Σ demand, C) and no tenant is entitled to more than it demands.
 */
export function entitlement(
  demand: readonly number[],
  tenants: readonly TenantInfo[],
  capacity: number,
): number[] {
  const n = demand.length;
  const caps1 = demand.map((d, i) => Math.min(d, tenants[i]!.nominalGpus));
  const sum1 = caps1.reduce((s, x) => s + x, 0);
  const g =
    sum1 <= capacity
      ? caps1
      : waterFill(
          caps1,
          tenants.map((t) => t.nominalGpus),
          capacity,
        );
  let left = capacity - g.reduce((s, x) => s + x, 0);
  const unmet = demand.map((d, i) => Math.max(0, d - g[i]!));
  const h = waterFill(
    unmet,
    tenants.map((t) => t.weight),
    left,
  );
  left -= h.reduce((s, x) => s + x, 0);
  const out = new Array<number>(n);
  for (let i = 0; i < n; i++) out[i] = g[i]! + h[i]!;
  if (left > 1e-9) {
    const caps3 = unmet.map((u, i) => (tenants[i]!.weight === 0 ? u - h[i]! : 0));
    const z = waterFill(
      caps3,
      tenants.map((t) => (t.weight === 0 ? 1 : 0)),
      left,
    );
    for (let i = 0; i < n; i++) out[i]! += z[i]!;
  }
  return out;
}
