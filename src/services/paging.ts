import type { EntityManager, EntityName, FilterQuery } from '@mikro-orm/core';

/** Keyset page over ids (UUIDv7, so id order is creation order). */
export interface PageQuery {
  after?: string;
  before?: string;
  limit: number;
  inverted: boolean;
}

/** One keyset page ordered by id; `inverted` walks backwards for `last`/`before`. */
export async function findPage<T extends { id: string }>(
  em: EntityManager,
  entity: EntityName<T>,
  where: FilterQuery<T>,
  page: PageQuery,
  populate: string[] = [],
): Promise<T[]> {
  const idCondition: Record<string, string> = {};
  if (page.after) idCondition.$gt = page.after;
  if (page.before) idCondition.$lt = page.before;
  const condition = Object.keys(idCondition).length > 0 ? { $and: [where, { id: idCondition }] } : where;
  return em.find(entity, condition as FilterQuery<T>, {
    orderBy: { id: page.inverted ? 'desc' : 'asc' } as never,
    limit: page.limit,
    populate: populate as never,
  });
}

/** The keyset page `findPage` would read (ids ascending, `inverted` walks back), taken from rows already loaded. */
export function pageInMemory<T extends { id: string }>(rows: readonly T[], page: PageQuery): T[] {
  const inRange = rows.filter(
    (row) => (!page.after || row.id > page.after) && (!page.before || row.id < page.before),
  );
  return (page.inverted ? inRange.reverse() : inRange).slice(0, page.limit);
}
