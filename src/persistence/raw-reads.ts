import {
  BooleanType,
  DateTimeType,
  type EntityManager,
  type EntityMetadata,
  type EntityName,
  type EntityProperty,
  ReferenceKind,
} from '@mikro-orm/core';
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
  /** Only these columns (the table's names; findPlain: default every mapped one). */
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
  const meta = metadataOf(em, entity);
  const rows = await selectRows(em, meta, '*', where, options);
  return rows.map((row) => em.map(entity, row as never));
}

/**
 * The rows `em.find(entity, where, { orderBy, limit })` would return, as plain objects that no
 * EntityManager manages: each property the entity maps to a column of its table (its columns
 * listed, none by `*`), converted as the ORM converts it, and each many-to-one relation as
 * `{ id }` (as an unloaded reference). No identity map, no change-tracking snapshot: hydrating
 * the dashboard's tenant, queues and projects as entities cost more than reading them. Read-only —
 * a change goes through the entity. Each row's class is named `<Entity>Row` (the graph's
 * `isTypeOf` knows them).
 */
export async function findPlain<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  where: Columns,
  options: RawFindOptions = {},
): Promise<T[]> {
  const meta = metadataOf(em, entity);
  const reader = plainReader(em, meta);
  const q = (id: string) => em.getPlatform().quoteIdentifier(id);
  const rows = await selectRows(
    em,
    meta,
    options.columns?.map(q).join(', ') ?? reader.columns,
    where,
    options,
  );
  return rows.map((row) => reader.read(row) as T);
}

function metadataOf<T extends object>(em: EntityManager, entity: EntityName<T>): EntityMetadata {
  const meta = em.getMetadata().find(entity as never);
  if (!meta) throw new Error(`raw read: unknown entity ${String(entity)}`);
  return meta;
}

/** `select <columns> from <table> where <tenant filter> and <where> order by … limit …`, bound. */
async function selectRows(
  em: EntityManager,
  meta: EntityMetadata,
  columns: string,
  where: Columns,
  options: RawFindOptions,
): Promise<Record<string, unknown>[]> {
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
  let sql = `select ${columns} from ${q(meta.tableName)}`;
  if (conditions.length) sql += ` where ${conditions.join(' and ')}`;
  if (options.orderBy) sql += ` order by ${q(options.orderBy)} asc`;
  if (options.limit !== undefined) {
    sql += ' limit ?';
    params.push(options.limit);
  }
  if (options.forUpdate && em.getDriver() instanceof PostgreSqlDriver) sql += ' for update';
  return allBound<Record<string, unknown>>(em, sql, params);
}

export interface PlainReader {
  /** The select list: every mapped column, quoted. */
  columns: string;
  /** The mapped columns' names, unquoted. */
  columnNames: readonly string[];
  /**
   * A row as read (column names as keys, or `prefix` + column name in a joined row) → the plain
   * object; a column the row lacks (a narrower select) leaves its property out.
   */
  read(raw: Record<string, unknown>, prefix?: string): object;
}

const readers = new WeakMap<EntityMetadata, PlainReader>();

/** An entity's plain-row reader (findPlain's), for rows read by other statements (plain-rows.ts). */
export function plainReaderOf<T extends object>(em: EntityManager, entity: EntityName<T>): PlainReader {
  return plainReader(em, metadataOf(em, entity));
}

/** Built once per entity from its metadata: a column added to the entity is read without a change here. */
function plainReader(em: EntityManager, meta: EntityMetadata): PlainReader {
  const known = readers.get(meta);
  if (known) return known;
  const platform = em.getPlatform();
  const fields: { property: string; column: string; convert: (value: unknown) => unknown }[] = [];
  for (const prop of meta.props) {
    if (prop.persist === false || prop.formula || prop.fieldNames?.length !== 1) continue;
    const column = prop.fieldNames[0]!;
    if (prop.kind === ReferenceKind.MANY_TO_ONE || prop.kind === ReferenceKind.ONE_TO_ONE) {
      if (!prop.owner && prop.kind === ReferenceKind.ONE_TO_ONE) continue;
      fields.push({ property: prop.name, column, convert: (v) => (v == null ? null : { id: String(v) }) });
    } else if (prop.kind === ReferenceKind.SCALAR) {
      fields.push({ property: prop.name, column, convert: scalarConverter(platform, prop) });
    }
  }
  // A class per entity, named for the graph's isTypeOf (schema/tenancy/tenant.ts isEntity).
  const Row = { [`${meta.className}Row`]: class {} }[`${meta.className}Row`]!;
  const reader: PlainReader = {
    columns: fields.map((f) => platform.quoteIdentifier(f.column)).join(', '),
    columnNames: fields.map((f) => f.column),
    read(raw, prefix = '') {
      const row = new Row() as Record<string, unknown>;
      for (const f of fields) {
        const key = prefix + f.column;
        if (key in raw) row[f.property] = f.convert(raw[key]);
      }
      return row;
    },
  };
  readers.set(meta, reader);
  return reader;
}

type Platform = ReturnType<EntityManager['getPlatform']>;

/** A column's value as the ORM hydrates it: JSON parsed, dates as Date, SQLite's 0/1 as booleans. */
function scalarConverter(platform: Platform, prop: EntityProperty): (value: unknown) => unknown {
  const custom = prop.customType;
  if (custom && !(custom instanceof DateTimeType) && !(custom instanceof BooleanType))
    return (v) => (v == null ? null : custom.convertToJSValue(v, platform));
  switch (prop.runtimeType) {
    case 'Date':
      return (v) => dateOf(platform, v);
    case 'boolean':
      return (v) => (v == null ? null : Boolean(v));
    case 'number':
      return (v) => (v == null ? null : Number(v));
    default:
      return (v) => v ?? null;
  }
}

/** A date column's value as read (a Date, SQLite's stored number, PostgreSQL's text) → a Date, as the ORM reads it. */
export function dateOf(platform: Platform, value: unknown): Date | null {
  if (value == null) return null;
  if (value instanceof Date) return value;
  const parsed = platform.parseDate(value as string);
  return parsed instanceof Date ? parsed : new Date(value as string);
}
