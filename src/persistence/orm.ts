import fs from 'node:fs';
import path from 'node:path';
import { BetterSqliteDriver } from '@mikro-orm/better-sqlite';
import { MikroORM, type Options } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import { PostgreSqlDriver } from '@mikro-orm/postgresql';
import { postgresqlMigrations } from '../../migrations/postgresql/index.js';
import { sqliteMigrations } from '../../migrations/sqlite/index.js';
import { type DatabaseConfig, type DatabaseTimeouts, DEFAULT_DATABASE_TIMEOUTS } from '../config/index.js';
import { auditEntities } from './audit/index.js';
import { clusterEntities } from './cluster/index.js';
import { governanceEntities } from './governance/index.js';
import { inferenceEntities } from './inference/index.js';
import { jobEntities } from './jobs/index.js';
import { logEntities } from './logs/index.js';
import { meteringEntities } from './metering/index.js';
import { schedulingEntities } from './scheduling/index.js';
import { accessEntities, tenancyEntities } from './tenancy/index.js';

export interface OrmOptions {
  database: DatabaseConfig;
  /** Called with every SQL statement; tests count statements with it. */
  onQuery?: (sql: string) => void;
  /** Default: DEFAULT_DATABASE_TIMEOUTS. */
  timeouts?: DatabaseTimeouts;
}

/**
 * How long the PostgreSQL client waits for an answer beyond the server's own statement
 * timeout: a statement that is merely slow is cancelled by the server first (and the
 * connection stays usable); one with no answer at all (packets dropped) is given up here.
 */
const CLIENT_READ_GRACE_MS = 500;

/** The part of a `pg` Client the pool hook touches. */
interface PgConnection {
  query(...args: unknown[]): unknown;
  end(): Promise<void>;
  /** knex's mark of a connection its pool must destroy instead of handing out again. */
  __knex__disposed?: unknown;
}

/**
 * After pg's `query_timeout` the query is still in flight on that connection as far as the
 * protocol goes: every later query would queue behind it and time out too, and knex would
 * keep handing the connection out. So it is marked disposed (knex's pool then destroys it
 * and opens a fresh one when needed) and ended (pg destroys a socket with a query in
 * flight): that is how the server recovers by itself once the database answers again.
 */
function discardOnReadTimeout(connection: PgConnection): void {
  const query = connection.query.bind(connection);
  const onError = (error: unknown) => {
    if (!(error instanceof Error) || error.message !== 'Query read timeout') return;
    // Marked now: the 'end' event that would mark it comes later, after knex may already
    // have handed the connection to the next query.
    connection.__knex__disposed = error;
    void connection.end().catch(() => undefined);
  };
  connection.query = (...args: unknown[]) => {
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === 'function') {
      args[last] = (error: unknown, result: unknown) => {
        if (error) onError(error);
        (callback as (e: unknown, r: unknown) => void)(error, result);
      };
      return query(...args);
    }
    const result = query(...args);
    if (result instanceof Promise) result.catch(onError);
    return result;
  };
}

function postgresTimeouts(t: DatabaseTimeouts): Partial<Options> {
  return {
    pool: {
      acquireTimeoutMillis: t.acquireMs,
      // Opening a connection is bounded by connectionTimeoutMillis below; this is a backstop.
      createTimeoutMillis: t.connectMs + 1000,
      afterCreate: (
        connection: PgConnection,
        done: (error: Error | null, connection: PgConnection) => void,
      ) => {
        discardOnReadTimeout(connection);
        done(null, connection);
      },
    },
    driverOptions: {
      connection: {
        connectionTimeoutMillis: t.connectMs,
        // Sent at connect time; PostgreSQL enforces them per session.
        statement_timeout: t.statementMs,
        query_timeout: t.statementMs + CLIENT_READ_GRACE_MS,
        // A session left inside a transaction (its client vanished) releases its locks.
        idle_in_transaction_session_timeout: Math.max(10_000, 3 * t.statementMs),
        keepAlive: true,
      },
    },
  } as Partial<Options>;
}

/** The part of a better-sqlite3 Database the pool hook touches. */
interface SqliteConnection {
  pragma(sql: string): unknown;
  prepare(sql: string): unknown;
}

/** How many distinct statements one SQLite connection keeps prepared. */
const PREPARED_STATEMENTS = 500;

/**
 * knex's better-sqlite3 client prepares every statement anew (`connection.prepare(sql)` per
 * query): under the dashboard and submit benchmarks that was ~7% of the server's CPU. The
 * ORM sends the same few hundred SQL texts over and over, so the connection keeps the most
 * recently used ones. Safe because knex runs each statement to completion synchronously
 * (`all`/`run`, never a lazy `iterate`), so one statement object is never in use twice at
 * once, and SQLite re-prepares a cached statement by itself after a schema change.
 */
export function cachePreparedStatements(connection: SqliteConnection): void {
  const prepare = connection.prepare.bind(connection);
  const prepared = new Map<string, unknown>();
  connection.prepare = (sql: string) => {
    const cached = prepared.get(sql);
    if (cached !== undefined) {
      // Most recently used last, so the first key is the one to drop.
      prepared.delete(sql);
      prepared.set(sql, cached);
      return cached;
    }
    const statement = prepare(sql);
    prepared.set(sql, statement);
    if (prepared.size > PREPARED_STATEMENTS) prepared.delete(prepared.keys().next().value as string);
    return statement;
  };
}

function sqliteConnectionSetup(t: DatabaseTimeouts, synchronous: 'normal' | 'full'): Partial<Options> {
  return {
    pool: {
      // better-sqlite3 blocks the event loop while it waits for a lock: keep the wait bounded.
      afterCreate: (
        connection: SqliteConnection,
        done: (error: Error | null, connection: unknown) => void,
      ) => {
        try {
          connection.pragma(`busy_timeout = ${Math.floor(t.acquireMs)}`);
          // better-sqlite3 builds default to FULL, an fsync per commit (the submit benchmark's
          // COMMIT was ~7% of the server's CPU and most of its wall time). In WAL mode (set in
          // openDatabase) NORMAL keeps every commit across a killed process (the crash tests)
          // and never corrupts the database; only the last commits before a power cut or a
          // kernel crash can be lost. FAIRWAY_SQLITE_SYNCHRONOUS=full restores FULL.
          connection.pragma(`synchronous = ${synchronous}`);
          cachePreparedStatements(connection);
          done(null, connection);
        } catch (error) {
          done(error as Error, connection);
        }
      },
    },
  } as Partial<Options>;
}

export function ormConfig(options: OrmOptions): Options {
  const { database } = options;
  const timeouts = options.timeouts ?? DEFAULT_DATABASE_TIMEOUTS;
  const logging: Partial<Options> = options.onQuery
    ? { debug: ['query'], logger: (message: string) => options.onQuery!(message) }
    : { debug: false };
  const common: Partial<Options> = {
    entities: [
      ...tenancyEntities,
      ...auditEntities,
      ...accessEntities,
      ...clusterEntities,
      ...jobEntities,
      ...schedulingEntities,
      ...meteringEntities,
      ...governanceEntities,
      ...logEntities,
      ...inferenceEntities,
    ],
    extensions: [Migrator],
    // Requests always fork their own EntityManager; the global one is a bug.
    allowGlobalContext: false,
    // Migrations are listed statically (see migrations/<dialect>/index.ts), so neither
    // tsx nor vitest has to import .ts files by path at run time.
    dynamicImportProvider: (id: string) => import(id),
    ...logging,
  };
  if (database.dialect === 'postgresql') {
    return {
      ...common,
      ...postgresTimeouts(timeouts),
      driver: PostgreSqlDriver,
      clientUrl: database.url,
      migrations: {
        tableName: 'fairway_migrations',
        path: 'migrations/postgresql',
        migrationsList: postgresqlMigrations,
        silent: true,
        transactional: true,
        snapshot: false,
      },
    } as Options;
  }
  if (database.file !== ':memory:') fs.mkdirSync(path.dirname(database.file), { recursive: true });
  return {
    ...common,
    ...sqliteConnectionSetup(timeouts, database.synchronous ?? 'normal'),
    driver: BetterSqliteDriver,
    dbName: database.file,
    migrations: {
      tableName: 'fairway_migrations',
      path: 'migrations/sqlite',
      migrationsList: sqliteMigrations,
      silent: true,
      transactional: true,
      snapshot: false,
    },
  } as Options;
}

export async function openDatabase(options: OrmOptions): Promise<MikroORM> {
  const orm = await MikroORM.init(ormConfig(options));
  if (options.database.dialect === 'sqlite') {
    const connection = orm.em.getConnection() as unknown as { execute(sql: string): Promise<unknown> };
    // WAL lets readers proceed while the scheduler writes; foreign keys are off by default in SQLite.
    if (options.database.file !== ':memory:') await connection.execute('pragma journal_mode = wal');
    await connection.execute('pragma foreign_keys = on');
  }
  return orm;
}

/** Applies pending migrations; returns the names applied. */
export async function migrate(orm: MikroORM): Promise<string[]> {
  const applied = await orm.getMigrator().up();
  return applied.map((m) => m.name);
}

/**
 * Waits (at most `timeoutMs`) until no connection of the pool is in use or awaited: closing the
 * pool under a transaction still running (a request or an event started before the server stopped
 * taking new ones) would fail its COMMIT on a closed client.
 */
export async function drainConnections(orm: MikroORM, timeoutMs = 5000): Promise<void> {
  const knex = (
    orm.em.getConnection() as unknown as { getKnex(): { client: { pool?: PoolStats } } }
  ).getKnex();
  const pool = knex.client.pool;
  if (!pool) return;
  const deadline = Date.now() + timeoutMs;
  let idleTurns = 0;
  // Idle for a few turns in a row: a transaction's statements acquire and release between them.
  while (idleTurns < 3 && Date.now() < deadline) {
    idleTurns = pool.numUsed() + pool.numPendingAcquires() === 0 ? idleTurns + 1 : 0;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

interface PoolStats {
  numUsed(): number;
  numPendingAcquires(): number;
}
