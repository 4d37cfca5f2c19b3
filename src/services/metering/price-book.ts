import type { EntityManager } from '@mikro-orm/core';
import DataLoader from 'dataloader';
import { DEFAULT_CURRENCY } from '../../config/index.js';
import { Flavor, PriorityClassRow } from '../../persistence/cluster/index.js';
import { FlavorPrice, loadMeteringTables, PriceMultiplier } from '../../persistence/metering/index.js';
import { badInput, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import { requirePlatformAdmin, requirePrincipal, type ServiceContext } from '../context.js';
import type { Loaders } from '../loaders.js';

/**
 * The price book's write side and its listing. Prices are platform list prices: anyone
 * signed in reads them; platform admins set them. A price takes effect at `effectiveFrom`,
 * never earlier than now: the ledger stores each interval's cost, so a cost already written
 * never changes, and a price may not be slipped under time already charged.
 */

export interface SetFlavorPriceInput {
  flavor: string;
  pricePerUnitHour: number;
  /** Default: now. Must not be in the past. */
  effectiveFrom?: Date | null;
}

export interface SetPriceMultiplierInput {
  priorityClass: string;
  multiplier: number;
  effectiveFrom?: Date | null;
}

/** A version of a price, with whether it is the one in effect now. */
export interface PriceVersion<T> {
  row: T;
  current: boolean;
}

export interface PriceBookView {
  flavorPrices: PriceVersion<FlavorPrice>[];
  multipliers: PriceVersion<PriceMultiplier>[];
}

/** The epoch-0 price a new flavor gets: its creation price applies to all time before any change. */
export const INITIAL_PRICE_FROM = new Date(0);

/** Written beside a new flavor (createFlavor, the demo seed), in the caller's transaction. */
export function writeInitialFlavorPrice(
  em: EntityManager,
  flavor: string,
  pricePerUnitHour: number,
): FlavorPrice {
  return em.create(FlavorPrice, { flavor, pricePerUnitHour, effectiveFrom: INITIAL_PRICE_FROM });
}

function effectiveFromOf(ctx: ServiceContext, requested: Date | null | undefined): Date {
  const now = ctx.now();
  if (!requested) return now;
  if (Number.isNaN(requested.getTime())) throw badInput('effectiveFrom must be a valid instant.');
  if (requested.getTime() < now.getTime())
    throw badInput('effectiveFrom must not be in the past: costs already charged never change.');
  return requested;
}

function requireAmount(value: number, what: string): void {
  if (!Number.isFinite(value) || value < 0) throw badInput(`${what} must be a finite number, 0 or more.`);
  if (value > 1_000_000) throw badInput(`${what} must be at most 1000000.`);
}

/**
 * Checks a new version of a flavor's price (an amount, not in the past) and adds it in the
 * caller's transaction (setFlavorPrice, updateFlavor); the flavor is the caller's to check.
 */
export function addFlavorPriceVersion(
  ctx: ServiceContext,
  em: EntityManager,
  input: SetFlavorPriceInput,
): FlavorPrice {
  requireAmount(input.pricePerUnitHour, 'pricePerUnitHour');
  const effectiveFrom = effectiveFromOf(ctx, input.effectiveFrom);
  return em.create(FlavorPrice, {
    flavor: input.flavor,
    pricePerUnitHour: input.pricePerUnitHour,
    effectiveFrom,
  });
}

const priceLoaders = new WeakMap<Loaders, DataLoader<string, FlavorPrice[]>>();

/** Every version of each flavor's price, oldest first: one query per request (keyed by its loaders). */
function flavorPricesLoader(ctx: Pick<ServiceContext, 'em' | 'loaders'>): DataLoader<string, FlavorPrice[]> {
  let loader = priceLoaders.get(ctx.loaders);
  if (!loader) {
    const em = ctx.em;
    loader = new DataLoader<string, FlavorPrice[]>(async (flavors) => {
      const rows = await em.find(
        FlavorPrice,
        { flavor: { $in: [...flavors] } },
        { orderBy: { effectiveFrom: 'asc' } },
      );
      return flavors.map((f) => rows.filter((r) => r.flavor === f));
    });
    priceLoaders.set(ctx.loaders, loader);
  }
  return loader;
}

/** The version of a flavor's price in effect now (null: none yet): what the ledger charges now. */
export async function currentFlavorPrice(
  ctx: Pick<ServiceContext, 'em' | 'loaders' | 'now'>,
  flavor: string,
): Promise<FlavorPrice | null> {
  const now = ctx.now().getTime();
  let current: FlavorPrice | null = null;
  for (const version of await flavorPricesLoader(ctx).load(flavor))
    if (version.effectiveFrom.getTime() <= now) current = version;
  return current;
}

export async function setFlavorPrice(ctx: ServiceContext, input: SetFlavorPriceInput): Promise<FlavorPrice> {
  return auditedMutation(ctx, { action: 'price.setFlavorPrice', input: { ...input } }, async (em) => {
    requirePlatformAdmin(ctx);
    requireAmount(input.pricePerUnitHour, 'pricePerUnitHour');
    effectiveFromOf(ctx, input.effectiveFrom);
    if (!(await em.count(Flavor, { name: input.flavor }))) throw notFound('Flavor');
    const row = addFlavorPriceVersion(ctx, em, input);
    await em.flush();
    return { result: row, tenantId: null, targetType: 'FlavorPrice', targetId: row.id };
  });
}

export async function setPriceMultiplier(
  ctx: ServiceContext,
  input: SetPriceMultiplierInput,
): Promise<PriceMultiplier> {
  return auditedMutation(ctx, { action: 'price.setMultiplier', input: { ...input } }, async (em) => {
    requirePlatformAdmin(ctx);
    requireAmount(input.multiplier, 'multiplier');
    const effectiveFrom = effectiveFromOf(ctx, input.effectiveFrom);
    if (!(await em.count(PriorityClassRow, { name: input.priorityClass }))) throw notFound('PriorityClass');
    const row = em.create(PriceMultiplier, {
      priorityClass: input.priorityClass,
      multiplier: input.multiplier,
      effectiveFrom,
    });
    await em.flush();
    return { result: row, tenantId: null, targetType: 'PriceMultiplier', targetId: row.id };
  });
}

/** Versions in effect now and scheduled for later (superseded ones are history: the ledger keeps what they
 * charged).
 */
function currentAndScheduled<T extends { effectiveFrom: Date }>(
  rows: T[],
  keyOf: (row: T) => string,
  now: number,
): PriceVersion<T>[] {
  const byKey = new Map<string, T[]>();
  for (const row of rows) byKey.set(keyOf(row), [...(byKey.get(keyOf(row)) ?? []), row]);
  const out: PriceVersion<T>[] = [];
  for (const key of [...byKey.keys()].sort()) {
    const versions = byKey.get(key)!.sort((a, b) => a.effectiveFrom.getTime() - b.effectiveFrom.getTime());
    const past = versions.filter((v) => v.effectiveFrom.getTime() <= now);
    const current = past.at(-1);
    if (current) out.push({ row: current, current: true });
    for (const v of versions) if (v.effectiveFrom.getTime() > now) out.push({ row: v, current: false });
  }
  return out;
}

export async function listPrices(ctx: ServiceContext): Promise<PriceBookView> {
  requirePrincipal(ctx);
  const now = ctx.now().getTime();
  const [prices, multipliers] = await Promise.all([
    ctx.em.find(FlavorPrice, {}),
    ctx.em.find(PriceMultiplier, {}),
  ]);
  return {
    flavorPrices: currentAndScheduled(prices, (p) => p.flavor, now),
    multipliers: currentAndScheduled(multipliers, (m) => m.priorityClass, now),
  };
}

/** Price of one flavor unit-hour at `at` for a class, as the ledger prices it (PriceBook: latest flavor price × latest multiplier; 0 / 1 when none). */
export async function unitPriceAt(
  em: EntityManager,
  flavor: string,
  priorityClass: string,
  at: Date,
): Promise<number> {
  return (await loadMeteringTables(em)).prices.unitPrice(flavor, priorityClass, at.getTime());
}

/** The installation's currency (FAIRWAY_CURRENCY), as the service context carries it. */
export function currencyOf(ctx: Pick<ServiceContext, 'currency'>): string {
  return ctx.currency ?? DEFAULT_CURRENCY;
}
