import type { EntityManager, MikroORM } from '@mikro-orm/core';

/**
 * Defence in depth for tenant-owned rows: every EntityManager a request uses has this
 * filter on, so a query that forgot its tenant condition still cannot read another
 * tenant's rows. Param `{ all: true }` is reserved for platform admins and system work.
 */
export const TENANT_FILTER = 'tenant';
export interface TenantFilterParams {
  all?: boolean;
  tenantIds?: string[];
}
/**
 * Stands for "no tenant" when a caller belongs to none: MikroORM renders `$in: []` as
 * `in ()` in the join conditions of populated relations, which PostgreSQL rejects. The nil
 * UUID is never an id (ids are UUIDv7), so the filter still matches nothing.
 */
const NO_TENANT = '00000000-0000-0000-0000-000000000000';

/** The filter every tenant-owned entity declares (identity and scheduling alike). */
export const tenantFilter = {
  [TENANT_FILTER]: {
    name: TENANT_FILTER,
    default: true,
    cond: (params: TenantFilterParams) => {
      const tenantIds = filteredTenantIds(params);
      return tenantIds ? { tenant: { $in: tenantIds } } : {};
    },
  },
};

/** The tenants the filter lets through with these parameters: null for all of them. Raw SQL readers
 * (raw-reads.ts) apply the same.
 */
export function filteredTenantIds(params: TenantFilterParams): string[] | null {
  if (params.all) return null;
  return params.tenantIds?.length ? [...params.tenantIds] : [NO_TENANT];
}

/** A fresh EntityManager with the tenant filter set as given. */
export function scopedEntityManager(orm: MikroORM, params: TenantFilterParams): EntityManager {
  const em = orm.em.fork({ clear: true });
  em.setFilterParams(TENANT_FILTER, params);
  return em;
}

/** For system work that must see every tenant (auth lookups, the scheduler, seeding). */
export const systemEntityManager = (orm: MikroORM): EntityManager => scopedEntityManager(orm, { all: true });
