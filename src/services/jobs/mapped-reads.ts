import { type EntityManager, type EntityName, wrap } from '@mikro-orm/core';
import { findMapped } from '../../persistence/raw-reads.js';

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
