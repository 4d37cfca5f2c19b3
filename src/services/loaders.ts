import DataLoader from 'dataloader';
import type { EntityManager, EntityName } from '@mikro-orm/core';
import { Project, Tenant, User } from '../persistence/entities.js';
import { Queue } from '../persistence/scheduling-entities.js';

/**
 * Per-request batch loaders: a list that resolves relations costs one query per relation,
 * not one per item. They read through the request's EntityManager, so the tenant filter
 * applies to them as to everything else.
 */
export interface Loaders {
  project: DataLoader<string, Project | null>;
  queue: DataLoader<string, Queue | null>;
  tenant: DataLoader<string, Tenant | null>;
  user: DataLoader<string, User | null>;
}

function byId<T extends { id: string }>(em: EntityManager, entity: EntityName<T>) {
  return new DataLoader<string, T | null>(async (ids) => {
    const rows = await em.find(entity, { id: { $in: [...ids] } } as never);
    const found = new Map(rows.map((row) => [row.id, row]));
    return ids.map((id) => found.get(id) ?? null);
  });
}

export function createLoaders(em: EntityManager): Loaders {
  return { project: byId(em, Project), queue: byId(em, Queue), tenant: byId(em, Tenant), user: byId(em, User) };
}
