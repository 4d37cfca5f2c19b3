// The price book as of one read: flavor prices and priority-class multipliers, each versioned by
// the time it takes effect. The ledger prices every interval at its start and splits intervals
// at price changes, so a price set for the future never changes a cost already written.
import type { EntityManager } from '@mikro-orm/core';
import type { FlavorUnits } from '../../core/metering/index.js';
import { Flavor } from '../cluster/index.js';
import { findPlain } from '../plain-rows.js';
import { FlavorPrice, PriceMultiplier } from './entities.js';

interface Version {
  from: number;
  value: number;
}

/** Versions sorted by `from`; the value in effect at `at` is the last one with from <= at. */
function valueAt(versions: readonly Version[] | undefined, at: number, fallback: number): number {
  if (!versions) return fallback;
  let value = fallback;
  for (const v of versions) {
    if (v.from > at) break;
    value = v.value;
  }
  return value;
}

function group(rows: { key: string; from: number; value: number }[]): Map<string, Version[]> {
  const out = new Map<string, Version[]>();
  for (const r of rows) {
    const list = out.get(r.key) ?? [];
    list.push({ from: r.from, value: r.value });
    out.set(r.key, list);
  }
  for (const list of out.values()) list.sort((a, b) => a.from - b.from);
  return out;
}

export class PriceBook {
  private readonly prices: Map<string, Version[]>;
  private readonly multipliers: Map<string, Version[]>;

  constructor(
    prices: { flavor: string; effectiveFrom: number; pricePerUnitHour: number }[],
    multipliers: { priorityClass: string; effectiveFrom: number; multiplier: number }[],
  ) {
    this.prices = group(
      prices.map((p) => ({ key: p.flavor, from: p.effectiveFrom, value: p.pricePerUnitHour })),
    );
    this.multipliers = group(
      multipliers.map((m) => ({ key: m.priorityClass, from: m.effectiveFrom, value: m.multiplier })),
    );
  }

  /** Price of one flavor unit for one hour at `at` (ms), the class multiplier included; 0 for an unpriced flavor. */
  unitPrice(flavor: string, priorityClass: string, at: number): number {
    return valueAt(this.prices.get(flavor), at, 0) * valueAt(this.multipliers.get(priorityClass), at, 1);
  }

  /** Instants in (from, to) where the flavor's price or the class's multiplier changes. */
  changesWithin(flavor: string, priorityClass: string, from: number, to: number): number[] {
    const all = [...(this.prices.get(flavor) ?? []), ...(this.multipliers.get(priorityClass) ?? [])];
    return all.map((v) => v.from).filter((t) => t > from && t < to);
  }
}

/** What the ledger reads once per transaction: the price book and how each flavor counts. */
export interface MeteringTables {
  prices: PriceBook;
  flavors: Map<string, FlavorUnits>;
}

export async function loadMeteringTables(em: EntityManager): Promise<MeteringTables> {
  // One after the other: inside a transaction the three share one connection.
  // Plain rows (plain-rows.ts): read once per charging transaction, and never changed through.
  const prices = await findPlain(em, FlavorPrice, {});
  const multipliers = await findPlain(em, PriceMultiplier, {});
  const flavors = await findPlain(em, Flavor, {});
  return {
    prices: new PriceBook(
      prices.map((p) => ({
        flavor: p.flavor,
        effectiveFrom: p.effectiveFrom.getTime(),
        pricePerUnitHour: p.pricePerUnitHour,
      })),
      multipliers.map((m) => ({
        priorityClass: m.priorityClass,
        effectiveFrom: m.effectiveFrom.getTime(),
        multiplier: m.multiplier,
      })),
    ),
    flavors: new Map(flavors.map((f) => [f.name, { kind: f.kind, slicesPerGpu: f.slicesPerGpu ?? null }])),
  };
}
