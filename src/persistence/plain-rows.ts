import { type EntityManager, type EntityName, wrap } from '@mikro-orm/core';
import { findMapped, findPlain, plainReaderOf } from './raw-reads.js';

// Plain rows (raw-reads.ts findPlain) for what the write path reads by statements of its own: the rows
// of one entity's table, or one entity's columns out of a joined row. A plain object is read-only data:
// it is never persisted, flushed or handed to `em.create` as a relation (use findMapped for that).

export { findPlain };

/** Rows of an entity's table as the driver returns them (`select *`, or the columns listed) → plain objects. */
export function plainRows<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  rows: readonly Record<string, unknown>[],
): T[] {
  if (!rows.length) return [];
  const reader = plainReaderOf(em, entity);
  return rows.map((row) => reader.read(row) as T);
}

/** An entity's mapped columns (the table's names), as findPlain reads them. */
export function columnsOf<T extends object>(em: EntityManager, entity: EntityName<T>): readonly string[] {
  return plainReaderOf(em, entity).columnNames;
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
  return plainReaderOf(em, entity).read(row, prefix) as T;
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
