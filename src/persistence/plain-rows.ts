import {
  type EntityManager,
  type EntityMetadata,
  type EntityName,
  type EntityProperty,
  type Platform,
  wrap,
} from '@mikro-orm/core';
import { type Columns, findMapped, type RawFindOptions, rawSelect } from './raw-reads.js';

/**
 * An entity's rows read as plain objects of the entity's shape (property names, JSON parsed,
 * dates as Date, booleans as booleans, each relation as `{ id }` like an unloaded reference),
 * without the ORM's entity machinery: `em.map` (identity map, change-tracking snapshot) was the
 * largest single cost of a submit's reads. A plain object is read-only data: it is never
 * persisted, flushed or handed to `em.create` as a relation (use findMapped for that).
 */
export async function findPlain<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  where: Columns,
  options: RawFindOptions = {},
): Promise<T[]> {
  return plainRows(em, entity, await rawSelect(em, entity, where, options));
}

/** Rows of an entity's table as the driver returns them (`select *`, or the columns listed) → plain objects. */
export function plainRows<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  rows: readonly Record<string, unknown>[],
): T[] {
  if (!rows.length) return [];
  const convert = convertersOf(em, entity as never);
  return rows.map((row) => {
    const out: Record<string, unknown> = {};
    for (const [property, column, to] of convert) if (column in row) out[property] = to(row[column]);
    return out as T;
  });
}

type Converter = readonly [property: string, column: string, to: (value: unknown) => unknown];

const converters = new WeakMap<EntityMetadata, Converter[]>();

function convertersOf(em: EntityManager, entity: EntityName<object>): Converter[] {
  const meta = em.getMetadata().find(entity as never)!;
  let known = converters.get(meta);
  if (!known) {
    const platform = em.getPlatform();
    known = meta.props
      .filter((prop) => prop.fieldNames?.length === 1 && prop.persist !== false && isStored(prop))
      .map((prop) => [prop.name, prop.fieldNames[0]!, converterOf(platform, prop)] as const);
    converters.set(meta, known);
  }
  return known;
}

function isStored(prop: EntityProperty): boolean {
  return prop.kind === 'scalar' || prop.kind === 'm:1' || (prop.kind === '1:1' && Boolean(prop.owner));
}

function converterOf(platform: Platform, prop: EntityProperty): (value: unknown) => unknown {
  if (prop.kind !== 'scalar') return (value) => (value == null ? null : { id: String(value) });
  const type = String(prop.runtimeType ?? prop.type).toLowerCase();
  if (prop.customType && type !== 'date')
    return (value) => (value == null ? null : prop.customType!.convertToJSValue(value, platform));
  if (type === 'date' || type.includes('datetime'))
    return (value) =>
      value == null
        ? null
        : new Date(typeof value === 'string' && /^\d+$/.test(value) ? Number(value) : (value as number));
  if (type === 'boolean') return (value) => (value == null ? null : Boolean(value));
  if (type === 'number') return (value) => (value == null ? null : Number(value));
  return (value) => value;
}

/** One row by primary key as a plain object (findPlain), or null. */
export async function findOnePlain<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  id: string,
): Promise<T | null> {
  const [found] = await findPlain(em, entity, { id });
  return found ?? null;
}

/** One row by primary key as a managed entity (raw-reads.ts findMapped): the identity map's if it is there. */
export async function findOneMapped<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  id: string,
): Promise<T | null> {
  const known = em.getUnitOfWork().getById<T>(entity as never, id as never);
  if (known && wrap(known).isInitialized()) return known;
  const [found] = await findMapped(em, entity, { id });
  return found ?? null;
}

/** How a use case reads one row by id: findOnePlain or findOneMapped. */
export type ReadOne = typeof findOnePlain;

/** An entity's stored columns (the table's names), as plainRows reads them. */
export function columnsOf<T extends object>(em: EntityManager, entity: EntityName<T>): string[] {
  return convertersOf(em, entity as never).map(([, column]) => column);
}

/**
 * One entity's plain object out of a joined row whose columns for it are aliased `prefix + column`;
 * null when its id is null (an outer join that found nothing).
 */
export function plainFromJoined<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  row: Record<string, unknown>,
  prefix: string,
): T | null {
  if (row[`${prefix}id`] == null) return null;
  const out: Record<string, unknown> = {};
  for (const [property, column, to] of convertersOf(em, entity as never))
    out[property] = to(row[prefix + column]);
  return out as T;
}
