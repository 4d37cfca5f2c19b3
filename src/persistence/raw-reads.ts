import type { EntityManager, EntityName } from '@mikro-orm/core';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { allBound, placeholders } from './bound-sql.js';
import { filteredTenantIds, TENANT_FILTER, type TenantFilterParams } from './tenant-filter.js';

/**
 * Hot reads by hand-written SQL. `em.find` spends ~0.2 ms of CPU per call building the query
 * (criteria, filters, knex) before the SQL, which takes a few microseconds for a config row; the
 * tenant dashboard made four such calls per request. These readers write the SQL themselves
 * and hand the rows to the ORM (`em.map`: managed entities, as a find returns) or keep them
 * plain (job-rows.ts).
 *
 * Raw SQL skips the ORM's filters, so the tenant filter (entities.ts TENANT_FILTER) is applied
 * here from the same parameters: a reader can never see another tenant's rows the ORM would
 * have hidden.
 */

/**
 * The tenant filter's condition on `"tenant_id"` for this EntityManager: none for `{ all: true }`,
 * else the caller's tenants. Without the filter's parameters it refuses, as the ORM does.
 */
export function tenantScope(em: EntityManager): { sql: string; params: string[] } | null {
  const platform = em.getPlatform();
  const scope = em.getFilterParams<TenantFilterParams>(TENANT_FILTER) as TenantFilterParams | undefined;
  if (!scope) throw new Error(`No arguments provided for filter '${TENANT_FILTER}'`);
  const ids = filteredTenantIds(scope);
  if (!ids) return null;
  return { sql: `${platform.quoteIdentifier('tenant_id')} in ${placeholders(ids.length)}`, params: ids };
}

/** Column → value (`=`) or list of values (`in`). Column names are the table's, not the entity's. */
export type Columns = Record<string, string | number | readonly (string | number)[]>;

export interface RawFindOptions {
  /** A column, ascending. */
  orderBy?: string;
  limit?: number;
  /** Only these columns (the table's names; default all). */
  columns?: readonly string[];
  /** Lock the rows until commit (PostgreSQL `for update`, as the ORM's PESSIMISTIC_WRITE; SQLite has one writer). */
  forUpdate?: boolean;
}

/**
 * `em.find(entity, where, { orderBy, limit })` for simple equality/`in` conditions, as managed
 * entities of `em` (the identity map and change tracking work as after a find).
 */
export async function findMapped<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  where: Columns,
  options: RawFindOptions = {},
): Promise<T[]> {
  const rows = await rawSelect(em, entity, where, options);
  return rows.map((row) => em.map(entity, row as never));
}

/**
 * `select * from` an entity's table for simple equality/`in` conditions, with the tenant filter
 * applied from the EntityManager's parameters (as the ORM applies it): the rows as the driver
 * returns them, column names as keys.
 */
export async function rawSelect<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  where: Columns,
  options: RawFindOptions = {},
): Promise<Record<string, unknown>[]> {
  const meta = em.getMetadata().find(entity as never);
  if (!meta) throw new Error(`rawSelect: unknown entity ${String(entity)}`);
  // Quoted as the ORM quotes them (backticks in SQLite, double quotes in PostgreSQL): the statement reads
  // like the ORM's own in the logs.
  const q = (id: string) => em.getPlatform().quoteIdentifier(id);
  const conditions: string[] = [];
  const params: unknown[] = [];
  if (meta.filters?.[TENANT_FILTER]) {
    const scope = tenantScope(em);
    if (scope) {
      conditions.push(scope.sql);
      params.push(...scope.params);
    }
  }
  for (const [column, value] of Object.entries(where)) {
    if (Array.isArray(value)) {
      if (value.length === 0) return [];
      conditions.push(`${q(column)} in ${placeholders(value.length)}`);
      params.push(...value);
    } else {
      conditions.push(`${q(column)} = ?`);
      params.push(value);
    }
  }
  let sql = `select ${options.columns ? options.columns.map(q).join(', ') : '*'} from ${q(meta.tableName)}`;
  if (conditions.length) sql += ` where ${conditions.join(' and ')}`;
  if (options.orderBy) sql += ` order by ${q(options.orderBy)} asc`;
  if (options.limit !== undefined) {
    sql += ' limit ?';
    params.push(options.limit);
  }
  if (options.forUpdate && em.getDriver() instanceof PostgreSqlDriver) sql += ' for update';
  return allBound<Record<string, unknown>>(em, sql, params);
}
