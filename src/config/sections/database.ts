import path from 'node:path';
import { z } from 'zod';
import { ConfigError } from '../errors.js';
import { millis, section } from '../section.js';

/**
 * How long Fairway waits on its database before it gives up and answers SERVICE_UNAVAILABLE,
 * so an outage (refused, or packets dropped without an answer) fails requests in seconds
 * instead of hanging them. See `ormConfig` for how each maps onto the drivers.
 */
export interface DatabaseTimeouts {
  /** Opening a connection (TCP and the PostgreSQL handshake). */
  connectMs: number;
  /** PostgreSQL: waiting for a pooled connection. SQLite: waiting for another process's write lock (busy
   * timeout).
   */
  acquireMs: number;
  /** One statement (PostgreSQL `statement_timeout`; the client stops waiting for an answer a little later). */
  statementMs: number;
}

export const DEFAULT_DATABASE_TIMEOUTS: Readonly<DatabaseTimeouts> = Object.freeze({
  connectMs: 3000,
  acquireMs: 3000,
  statementMs: 4000,
});

/** Which database, and how to reach it (what `openDatabase` needs). */
export type DatabaseConfig =
  | { dialect: 'sqlite'; file: string; synchronous?: 'normal' | 'full' }
  | { dialect: 'postgresql'; url: string };

/** The database section: the connection, with its timeouts. */
export type DatabaseSettings = (
  | { dialect: 'sqlite'; file: string; synchronous: 'normal' | 'full' }
  | { dialect: 'postgresql'; url: string }
) & { timeouts: DatabaseTimeouts };

export function parseDatabaseUrl(url: string | undefined, dataDir: string): DatabaseConfig {
  if (!url) return { dialect: 'sqlite', file: path.resolve(dataDir, 'fairway.db') };
  if (/^postgres(ql)?:\/\//.test(url)) return { dialect: 'postgresql', url };
  const sqlite = /^(sqlite|file):(\/\/)?(.+)$/.exec(url);
  if (sqlite) {
    const file = sqlite[3]!;
    return { dialect: 'sqlite', file: file === ':memory:' ? file : path.resolve(file) };
  }
  throw new ConfigError([
    `DATABASE_URL: "${redactUrl(url)}" is not supported; use postgres://user@host:5432/db or sqlite:path/to/file.db`,
  ]);
}

function redactUrl(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}

export const databaseSection = section({
  key: 'database',
  title: 'Database',
  description:
    'SQLite (the default, one file) or PostgreSQL, and how long Fairway waits on it before a request fails with `SERVICE_UNAVAILABLE`.',
  variables: {
    DATABASE_URL: z
      .string()
      .min(1)
      .optional()
      .describe(
        '`postgres://user:password@host:5432/db` for PostgreSQL, or `sqlite:path/to.db` (`sqlite::memory:` for a throw-away one). A password is never echoed in messages.',
      )
      .meta({
        typeText: 'URL (`postgres://`, `postgresql://`, `sqlite:`, `file:`)',
        defaultText: 'SQLite at `<FAIRWAY_DATA_DIR>/fairway.db`',
      }),
    FAIRWAY_SQLITE_SYNCHRONOUS: z
      .enum(['normal', 'full'])
      .default('normal')
      .describe(
        'SQLite (WAL mode): `normal` keeps every commit across a killed process and never corrupts the file, but the last commits before a power cut or kernel crash can be lost; `full` fsyncs every commit (several times slower submits).',
      ),
    FAIRWAY_DB_CONNECT_TIMEOUT_MS: millis(100, 600_000)
      .default(DEFAULT_DATABASE_TIMEOUTS.connectMs)
      .describe(
        'PostgreSQL: milliseconds before opening a connection is given up (refused or unanswered: the request fails with `SERVICE_UNAVAILABLE`).',
      ),
    FAIRWAY_DB_ACQUIRE_TIMEOUT_MS: millis(100, 600_000)
      .default(DEFAULT_DATABASE_TIMEOUTS.acquireMs)
      .describe(
        "Milliseconds to wait for a pooled connection (PostgreSQL), or for another process's write lock (SQLite busy timeout).",
      ),
    FAIRWAY_DB_STATEMENT_TIMEOUT_MS: millis(100, 3_600_000)
      .default(DEFAULT_DATABASE_TIMEOUTS.statementMs)
      .describe(
        'PostgreSQL `statement_timeout` in milliseconds; the client gives up on an unanswered statement 500 ms later and replaces the connection; a session idle inside a transaction is ended after 3× this (at least 10 s). Applies to migrations too: raise it for a long migration.',
      ),
  },
  resolve: (v, ctx): DatabaseSettings => {
    const timeouts = {
      connectMs: v.FAIRWAY_DB_CONNECT_TIMEOUT_MS,
      acquireMs: v.FAIRWAY_DB_ACQUIRE_TIMEOUT_MS,
      statementMs: v.FAIRWAY_DB_STATEMENT_TIMEOUT_MS,
    };
    let connection: DatabaseConfig;
    try {
      connection = parseDatabaseUrl(v.DATABASE_URL, ctx.dataDir);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      for (const problem of error.problems)
        ctx.problem('DATABASE_URL', problem.replace(/^DATABASE_URL: /, ''));
      connection = parseDatabaseUrl(undefined, ctx.dataDir);
    }
    return connection.dialect === 'sqlite'
      ? { ...connection, synchronous: v.FAIRWAY_SQLITE_SYNCHRONOUS, timeouts }
      : { ...connection, timeouts };
  },
});
