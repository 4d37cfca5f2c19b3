// Bulk inserts for the bench's load, per database, on a connection of the ORM's own pool.
// Measured first through knex's multi-row INSERTs: 6–9k rows/s on this shared machine (about
// 50 µs of CPU a row binding 20,000 parameters per statement), 2–3 min per database for a
// million rows. These are the drivers' fast paths instead: better-sqlite3 runs one prepared
// statement per row inside a transaction (no SQL to parse per batch), and PostgreSQL takes a
// batch as one array per column (insert … select from unnest(…)): 20 parameters a statement.
import type { MikroORM } from '@mikro-orm/core';
import type { EntityManager as SqlEntityManager } from '@mikro-orm/knex';

export type Dialect = 'sqlite' | 'postgresql';

export const knexOf = (orm: MikroORM) => (orm.em as unknown as SqlEntityManager).getKnex();

export interface TableShape {
  table: string;
  /** Column names and their PostgreSQL types (for the unnest casts). */
  columns: [name: string, pgType: string][];
}

export const RECORDS: TableShape = {
  table: 'usage_records',
  columns: [
    ['id', 'uuid'],
    ['job_id', 'uuid'],
    ['tenant_id', 'uuid'],
    ['project_id', 'varchar'],
    ['queue_id', 'varchar'],
    ['user_id', 'varchar'],
    ['priority_class', 'varchar'],
    ['flavor', 'varchar'],
    ['started_at', 'timestamptz'],
    ['ended_at', 'timestamptz'],
    ['duration_ms', 'bigint'],
    ['gpu_units', 'float8'],
    ['gpu_seconds', 'float8'],
    ['cpu_seconds', 'float8'],
    ['memory_gib_seconds', 'float8'],
    ['used_gpu_seconds', 'float8'],
    ['unit_price_per_hour', 'float8'],
    ['cost', 'float8'],
    ['closed_by', 'text'],
    ['first_of_job', 'boolean'],
  ],
};

export const HOURLY: TableShape = {
  table: 'usage_hourly',
  columns: [
    ['id', 'uuid'],
    ['hour', 'timestamptz'],
    ['tenant_id', 'uuid'],
    ['project_id', 'varchar'],
    ['queue_id', 'varchar'],
    ['user_id', 'varchar'],
    ['priority_class', 'varchar'],
    ['flavor', 'varchar'],
    ['gpu_seconds', 'float8'],
    ['used_gpu_seconds', 'float8'],
    ['measured_gpu_seconds', 'float8'],
    ['cpu_seconds', 'float8'],
    ['memory_gib_seconds', 'float8'],
    ['cost', 'float8'],
    ['jobs', 'int'],
  ],
};

/** Rows are arrays in the shape's column order; dates as Date, booleans as boolean. */
export interface BulkWriter {
  insert(shape: TableShape, rows: unknown[][]): Promise<void>;
  /** Commits what was inserted so far and opens the next transaction. */
  commit(): Promise<void>;
  /** Commits and gives the connection back. */
  close(): Promise<void>;
}

interface SqliteConnection {
  prepare(sql: string): { run(...values: unknown[]): unknown };
  exec(sql: string): unknown;
}
interface PgConnection {
  query(sql: string, values?: unknown[]): Promise<unknown>;
}

export async function bulkWriter(orm: MikroORM, dialect: Dialect): Promise<BulkWriter> {
  const client = knexOf(orm).client as {
    acquireConnection(): Promise<unknown>;
    releaseConnection(c: unknown): Promise<unknown>;
  };
  const connection = await client.acquireConnection();
  if (dialect === 'sqlite') {
    const db = connection as SqliteConnection;
    const statements = new Map<string, { run(...values: unknown[]): unknown }>();
    // SQLite keeps datetimes as epoch ms (MikroORM's mapping there) and booleans as 0/1.
    const value = (v: unknown) =>
      v instanceof Date ? v.getTime() : typeof v === 'boolean' ? (v ? 1 : 0) : v;
    db.exec('begin');
    return {
      async insert(shape, rows) {
        let statement = statements.get(shape.table);
        if (!statement) {
          statement = db.prepare(
            `insert into ${shape.table} (${shape.columns.map(([c]) => c).join(',')}) values (${shape.columns.map(() => '?').join(',')})`,
          );
          statements.set(shape.table, statement);
        }
        for (const row of rows) statement.run(...row.map(value));
      },
      async commit() {
        db.exec('commit');
        db.exec('begin');
      },
      async close() {
        db.exec('commit');
        await client.releaseConnection(connection);
      },
    };
  }
  const db = connection as PgConnection;
  await db.query('begin');
  return {
    async insert(shape, rows) {
      const arrays = shape.columns.map((_, i) => rows.map((r) => r[i] ?? null));
      const unnest = shape.columns.map(([, type], i) => `$${i + 1}::${type}[]`).join(', ');
      await db.query(
        `insert into ${shape.table} (${shape.columns.map(([c]) => c).join(',')}) select * from unnest(${unnest})`,
        arrays,
      );
    },
    async commit() {
      await db.query('commit');
      await db.query('begin');
    },
    async close() {
      await db.query('commit');
      await client.releaseConnection(connection);
    },
  };
}
