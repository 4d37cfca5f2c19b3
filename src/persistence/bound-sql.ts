import type { EntityManager, EntityMetadata, EntityProperty, Platform } from '@mikro-orm/core';
import type { Knex } from '@mikro-orm/knex';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';

/**
 * Statements the scheduler leader runs once per job, sent with bound parameters instead of
 * through the ORM's query builder. MikroORM inlines every value into the SQL text, so each
 * per-job statement was a new text: built by the ORM and prepared anew by the database. With
 * `?` placeholders the text repeats, so SQLite reuses the prepared statement (see
 * cachePreparedStatements in orm.ts) and the ORM's query building is skipped.
 *
 * They run on the knex of the EntityManager's current transaction (inside writeFenced, the
 * fenced transaction: a rollback undoes them), are logged like the ORM's own statements (the
 * onQuery hook the statement-count tests use), and their errors are converted as the ORM's
 * are (database-unavailable.ts reads those).
 */

/** The parts of MikroORM's SQL connection used here (AbstractSqlConnection, not in the core typings). */
interface SqlConnection {
  getKnex(): Knex;
  executeQuery<T>(query: string, cb: () => Promise<T>, context?: Record<string, unknown>): Promise<T>;
  transformRawResult<T>(res: unknown, method: 'all' | 'run'): T;
}

function connectionOf(em: EntityManager): SqlConnection {
  return em.getConnection() as unknown as SqlConnection;
}

async function execute<T>(
  em: EntityManager,
  sql: string,
  params: readonly unknown[],
  method: 'all' | 'run',
): Promise<T> {
  const connection = connectionOf(em);
  const trx = em.getTransactionContext<Knex.Transaction>();
  try {
    return await connection.executeQuery(
      sql,
      async () => {
        const query = connection.getKnex().raw(sql, params as Knex.RawBinding[]);
        if (trx) query.transacting(trx);
        return connection.transformRawResult<T>(await query, method);
      },
      { query: sql, params },
    );
  } catch (error) {
    throw (em.getDriver() as unknown as { convertException(e: unknown): Error }).convertException(error);
  }
}

/** Runs a statement with `?` placeholders; returns the rows it changed. */
export async function runBound(em: EntityManager, sql: string, params: readonly unknown[]): Promise<number> {
  const result = await execute<{ affectedRows: number }>(em, sql, params, 'run');
  return result.affectedRows;
}

/** Runs a query with `?` placeholders; returns its rows. */
export function allBound<T>(em: EntityManager, sql: string, params: readonly unknown[]): Promise<T[]> {
  return execute<T[]>(em, sql, params, 'all');
}

/** A property's value as the ORM stores it: JSON as text, bigints as text, dates as ms on SQLite. */
export function toColumnValue(platform: Platform, prop: EntityProperty, value: unknown): unknown {
  if (value == null) return null;
  let v = prop.customType
    ? prop.customType.convertToDatabaseValue(value, platform, { mode: 'query-data', fromQuery: true })
    : value;
  if (v instanceof Date) v = platform.processDateProperty(v);
  return v;
}

/** An entity's table and its properties' columns, quoted for the dialect. */
export interface TableOf {
  table: string;
  column(property: string): string;
  value(property: string, value: unknown): unknown;
}

const tables = new WeakMap<EntityMetadata, TableOf>();

export function tableOf(em: EntityManager, entityName: string): TableOf {
  const meta = em.getMetadata().get(entityName);
  const known = tables.get(meta);
  if (known) return known;
  const platform = em.getPlatform();
  const prop = (property: string) => {
    const p = meta.properties[property];
    if (!p) throw new Error(`${entityName} has no property ${property}`);
    return p;
  };
  const table: TableOf = {
    table: platform.quoteIdentifier(meta.tableName),
    column: (property) => platform.quoteIdentifier(prop(property).fieldNames[0]!),
    value: (property, value) => toColumnValue(platform, prop(property), value),
  };
  tables.set(meta, table);
  return table;
}

/**
 * Row counts a multi-row INSERT is cut into: the SQL text depends on the row count, so only
 * these few texts are ever sent (and prepared once each).
 */
const INSERT_CHUNKS = [128, 64, 32, 16, 8, 4, 2, 1];

/** Cuts `count` items into INSERT_CHUNKS-sized runs: [start, size] each, in order. */
export function* chunks(count: number): Generator<[number, number]> {
  let next = 0;
  while (next < count) {
    const size = INSERT_CHUNKS.find((n) => n <= count - next)!;
    yield [next, size];
    next += size;
  }
}

/** `(?, ?, …)` with n placeholders. */
export function placeholders(n: number): string {
  return `(${Array.from({ length: n }, () => '?').join(', ')})`;
}

/**
 * Inserts rows (objects keyed by property name, every row with the same properties in the
 * same order) into an entity's table, in chunks of INSERT_CHUNKS rows, in the rows' order.
 * `suffix` follows each statement's values (an `on conflict …` clause).
 */
export async function insertRows(
  em: EntityManager,
  entityName: string,
  rows: readonly Record<string, unknown>[],
  suffix = '',
): Promise<void> {
  if (!rows.length) return;
  const t = tableOf(em, entityName);
  const properties = Object.keys(rows[0]!);
  const head = `insert into ${t.table} (${properties.map((p) => t.column(p)).join(', ')}) values `;
  const tuple = placeholders(properties.length);
  for (const [start, size] of chunks(rows.length)) {
    const params: unknown[] = [];
    for (const row of rows.slice(start, start + size))
      for (const p of properties) params.push(t.value(p, row[p]));
    await runBound(em, head + Array.from({ length: size }, () => tuple).join(', ') + suffix, params);
  }
}

/**
 * Updates many rows of an entity's table by id, one statement per chunk (INSERT_CHUNKS sizes, so the
 * texts repeat): each row's new values for `properties`, in that order, matched on its id and, with a
 * guard, only where the guard's property still has the guard's value (a job cancelled meanwhile is
 * left alone). Returns the ids of the rows changed. The values travel as a `values` list joined to the
 * table (`update … from`, SQLite 3.33+ and PostgreSQL), cast to the columns' types on PostgreSQL.
 */
export async function updateRows(
  em: EntityManager,
  entityName: string,
  properties: readonly string[],
  rows: readonly { id: string; values: readonly unknown[] }[],
  guard?: { property: string; value: unknown },
): Promise<string[]> {
  if (!rows.length) return [];
  const meta = em.getMetadata().get(entityName);
  const t = tableOf(em, entityName);
  const castsTo = em.getDriver() instanceof PostgreSqlDriver;
  const slot = (property: string) =>
    castsTo ? `cast(? as ${meta.properties[property]!.columnTypes[0]})` : '?';
  const names = ['id', ...properties.map((_, i) => `c${i}`)];
  const tuple = `(${['id', ...properties].map(slot).join(', ')})`;
  const set = properties.map((p, i) => `${t.column(p)} = v.c${i}`).join(', ');
  const where = `${t.table}.${t.column('id')} = v.id${guard ? ` and ${t.table}.${t.column(guard.property)} = ?` : ''}`;
  const changed: string[] = [];
  for (const [start, size] of chunks(rows.length)) {
    const params: unknown[] = [];
    for (const row of rows.slice(start, start + size)) {
      params.push(row.id);
      row.values.forEach((value, i) => params.push(t.value(properties[i]!, value)));
    }
    if (guard) params.push(t.value(guard.property, guard.value));
    const sql = `with v(${names.join(', ')}) as (values ${Array.from({ length: size }, () => tuple).join(', ')}) update ${t.table} set ${set} from v where ${where} returning ${t.table}.${t.column('id')} as id`;
    for (const r of await allBound<{ id: string }>(em, sql, params)) changed.push(String(r.id));
  }
  return changed;
}
