// The price book as of one read: flavor prices and priority-class multipliers, each versioned by
// the time it takes effect. The ledger prices every interval at its start and splits intervals
// at price changes, so a price set for the future never changes a cost already written.
import type { EntityManager } from '@mikro-orm/core';
import type { FlavorUnits } from '../../core/metering/index.js';
import { allBound } from '../bound-sql.js';
import { dateOf } from '../raw-reads.js';

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
  // One statement for the three tables (read once per charging transaction, on the leader's hot path).
  const q = (id: string) => em.getPlatform().quoteIdentifier(id);
  const rows = await allBound<{
    k: string;
    key: string;
    at: unknown;
    v: number | string | null;
    fk: string | null;
  }>(
    em,
    [
      `select 'p' as k, ${q('flavor')} as ${q('key')}, ${q('effective_from')} as at, ${q('price_per_unit_hour')} as v, null as fk from ${q('flavor_prices')}`,
      `select 'm', ${q('priority_class')}, ${q('effective_from')}, ${q('multiplier')}, null from ${q('price_multipliers')}`,
      `select 'f', ${q('name')}, null, ${q('slices_per_gpu')}, ${q('kind')} from ${q('flavors')}`,
    ].join(' union all '),
    [],
  );
  // As the ORM reads a date: SQLite stores ms, PostgreSQL's driver (as MikroORM sets it up) hands text over.
  const at = (value: unknown) => dateOf(em.getPlatform(), value)!.getTime();
  const of = (kind: string) => rows.filter((r) => r.k === kind);
  return {
    prices: new PriceBook(
      of('p').map((r) => ({ flavor: r.key, effectiveFrom: at(r.at), pricePerUnitHour: Number(r.v) })),
      of('m').map((r) => ({ priorityClass: r.key, effectiveFrom: at(r.at), multiplier: Number(r.v) })),
    ),
    flavors: new Map(
      of('f').map((r) => [
        r.key,
        { kind: r.fk as FlavorUnits['kind'], slicesPerGpu: r.v == null ? null : Number(r.v) },
      ]),
    ),
  };
}
