/**
 * Recognises errors that mean "the database cannot be reached or did not answer in time",
 * as opposed to errors in what we asked of it (a constraint, a bad statement: bugs or
 * conflicts). Clients get SERVICE_UNAVAILABLE for the first kind (try again shortly), and
 * the server stays up: such errors are expected during an outage.
 *
 * The errors arrive in several shapes: raw `pg` and socket errors, knex's pool timeout,
 * MikroORM's DriverException (which copies `code` and the message of the error it wraps),
 * better-sqlite3's SqliteError; sometimes wrapped in `cause` or an AggregateError (a
 * connection refused on every address of a host name).
 */

/** Socket-level failures: nothing answers at that address, or the connection broke. */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'EHOSTDOWN',
  'ENETUNREACH',
  'ENETDOWN',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * PostgreSQL SQLSTATEs of an unavailable server: class 08 (connection exception), admin or
 * crash shutdown, "the database system is starting up", too many connections, and our own
 * statement timeout (57014: a statement cancelled because it ran too long).
 */
const SERVER_UNAVAILABLE_STATES = new Set(['57P01', '57P02', '57P03', '53300', '57014']);

/** SQLite: another process holds the write lock longer than the busy timeout. */
const SQLITE_BUSY_CODES = new Set([
  'SQLITE_BUSY',
  'SQLITE_BUSY_SNAPSHOT',
  'SQLITE_BUSY_RECOVERY',
  'SQLITE_BUSY_TIMEOUT',
]);

/**
 * Messages of errors that carry no code: pg's own timeouts and broken clients, knex's pool.
 * MikroORM prefixes the driver's message with the SQL ("select … - Query read timeout"),
 * so each is matched as the whole message or as what follows the last " - ".
 */
const MESSAGES = [
  /^Knex: Timeout acquiring a connection/,
  /^Connection terminated/, // pg: "… unexpectedly", "… due to connection timeout"
  /^Query read timeout$/, // pg: query_timeout
  /^timeout expired$/, // pg: connectionTimeoutMillis
  /is not queryable$/, // pg: a client whose connection failed or was closed
  /^Connection ended unexpectedly/,
  /^read ECONNRESET/,
  /^connect ECONNREFUSED/,
];

function driverMessage(message: string): string {
  const firstLine = message.split('\n')[0]!;
  const separator = firstLine.lastIndexOf(' - ');
  return separator >= 0 ? firstLine.slice(separator + 3) : firstLine;
}

export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (depth > 5 || error === null || typeof error !== 'object') return false;
  const e = error as {
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    originalError?: unknown;
    errors?: unknown;
  };
  const code = typeof e.code === 'string' ? e.code : undefined;
  if (code && (NETWORK_CODES.has(code) || SQLITE_BUSY_CODES.has(code))) return true;
  // pg puts the SQLSTATE in `code`; class 08 is "connection exception" as a whole.
  if (code && /^[0-9A-Z]{5}$/.test(code) && (code.startsWith('08') || SERVER_UNAVAILABLE_STATES.has(code)))
    return true;
  if (typeof e.message === 'string') {
    const whole = e.message.split('\n')[0]!;
    const last = driverMessage(e.message);
    if (MESSAGES.some((m) => m.test(whole) || m.test(last))) return true;
  }
  if (Array.isArray(e.errors) && e.errors.some((inner) => isDatabaseUnavailable(inner, depth + 1)))
    return true;
  // GraphQLError keeps what a resolver threw in `originalError`; other wrappers use `cause`.
  return isDatabaseUnavailable(e.originalError, depth + 1) || isDatabaseUnavailable(e.cause, depth + 1);
}
