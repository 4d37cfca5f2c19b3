import type { EntityManager, EntityName } from '@mikro-orm/core';
import DataLoader from 'dataloader';
import { Queue } from '../persistence/cluster/index.js';
import { JobEvent } from '../persistence/jobs/index.js';
import { findMapped, findPlain } from '../persistence/raw-reads.js';
import { Membership, Project, Tenant, User } from '../persistence/tenancy/index.js';

/**
 * Per-request batch loaders: a list that resolves relations costs one query per relation,
 * not one per item. They read through the request's EntityManager, so the tenant filter
 * applies to them as to everything else. Projects, queues and tenants come back as plain rows
 * (raw-reads.ts findPlain: not managed, relations as `{ id }`): change them through an entity.
 */
export interface Loaders {
  project: DataLoader<string, Project | null>;
  queue: DataLoader<string, Queue | null>;
  tenant: DataLoader<string, Tenant | null>;
  user: DataLoader<string, User | null>;
  /** A person's tenant membership, keyed `<tenantId>:<userId>` (the name a tenant knows a project member by). */
  membership: DataLoader<string, Membership | null>;
  /** Every event of each job, oldest first (a job has a handful); `pageInMemory` (paging.ts) pages them. */
  jobEvents: DataLoader<string, JobEvent[]>;
}

function byId<T extends { id: string }>(em: EntityManager, entity: EntityName<T>, plain = false) {
  return new DataLoader<string, T | null>(async (ids) => {
    // Without the query builder (raw-reads.ts: same rows, same tenant filter), as managed entities or as
    // plain rows.
    const rows = await (plain ? findPlain : findMapped)(em, entity, { id: [...ids] });
    const found = new Map(rows.map((row) => [row.id, row]));
    return ids.map((id) => found.get(id) ?? null);
  });
}

function eventsByJob(em: EntityManager) {
  return new DataLoader<string, JobEvent[]>(async (jobIds) => {
    const rows = await em.find(JobEvent, { job: { $in: [...jobIds] } }, { orderBy: { id: 'asc' } });
    const byJob = new Map<string, JobEvent[]>(jobIds.map((id) => [id, []]));
    for (const row of rows) byJob.get(row.job.id)?.push(row);
    return jobIds.map((id) => byJob.get(id) ?? []);
  });
}

function membershipByTenantAndUser(em: EntityManager) {
  return new DataLoader<string, Membership | null>(async (keys) => {
    const pairs = keys.map((key) => key.split(':') as [string, string]);
    const rows = await em.find(
      Membership,
      {
        tenant: { $in: [...new Set(pairs.map(([t]) => t))] },
        user: { $in: [...new Set(pairs.map(([, u]) => u))] },
      },
      { populate: ['user'] },
    );
    const found = new Map(rows.map((m) => [`${m.tenant.id}:${m.user.id}`, m]));
    return keys.map((key) => found.get(key) ?? null);
  });
}

export function createLoaders(em: EntityManager): Loaders {
  return {
    // Read for display and for rights, never changed through a loader: plain rows, no entity hydration.
    project: byId(em, Project, true),
    queue: byId(em, Queue, true),
    tenant: byId(em, Tenant, true),
    user: byId(em, User),
    membership: membershipByTenantAndUser(em),
    jobEvents: eventsByJob(em),
  };
}
