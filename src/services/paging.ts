import type { EntityManager, EntityName, FilterQuery } from '@mikro-orm/core';
import type { PageQuery } from './context.js';

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
