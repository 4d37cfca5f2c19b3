import { PothosValidationError } from '@pothos/core';
import { GraphQLError, Source, type SourceLocation } from 'graphql';
import { isDatabaseUnavailable } from '../persistence/database-unavailable.js';
import { FairwayError } from '../shared/index.js';

const PUBLIC_CODES = new Set([
  'BAD_USER_INPUT',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'CONFLICT',
  'RATE_LIMITED',
  'GRAPHQL_VALIDATION_FAILED',
  'GRAPHQL_PARSE_FAILED',
  'BAD_REQUEST',
  'OPERATION_RESOLUTION_FAILURE',
  'SERVICE_UNAVAILABLE',
]);

/** What a client is told when the database is down or does not answer in time: nothing of its address, SQL
 * or driver text.
 */
export const DATABASE_UNAVAILABLE_MESSAGE = 'The database is unavailable; try again shortly.';
/** Seconds a client should wait before retrying (the `Retry-After` header where HTTP allows it). */
const RETRY_AFTER_SECONDS = 5;
/** During an outage every request fails the same way: log the first failure, then a count at most this
 * often.
 */
const OUTAGE_LOG_EVERY_MS = 10_000;

export type ErrorLogger = (error: unknown) => void;

/**
 * graphql ships both CJS and ESM builds; yoga and our code may load different ones, so
 * `instanceof GraphQLError` is unreliable across them. Recognise it by name instead.
 */
function isGraphQLError(value: unknown): value is GraphQLError {
  return value instanceof Error && value.name === 'GraphQLError';
}

/**
 * The code a caller sees for an error, before yoga's masking runs (the metrics, request log and
 * tracing plugins run before it): the same decisions as createMaskError, without its logging.
 */
export function errorCode(error: GraphQLError): string {
  const code = error.extensions?.code;
  if (typeof code === 'string') return code;
  const original = error.originalError;
  if (original instanceof FairwayError) return original.code;
  if (original instanceof PothosValidationError) return 'BAD_USER_INPUT';
  if (original && isDatabaseUnavailable(original)) return 'SERVICE_UNAVAILABLE';
  if (original && original.name === 'GraphQLError') return errorCode(original as GraphQLError);
  // graphql-js's own argument and variable coercion errors: no cause, no code (the caller's input).
  if (!original) return 'BAD_USER_INPUT';
  return 'INTERNAL_SERVER_ERROR';
}

/**
 * What a client may see of an error: our typed errors with their code and message;
 * everything else becomes INTERNAL_SERVER_ERROR with no message or stack from inside.
 */
export function createMaskError(log: ErrorLogger) {
  const mask = maskWith(outageLogger(log), log);
  return (error: unknown): Error => {
    const masked = mask(error);
    // graphql-jit's errors (plugins/useGraphqlJit.ts) carry their locations but not the AST nodes they come
    // from, and yoga rebuilds each error from its nodes or source and positions: the client is told the same
    // locations as graphql-js would tell it.
    const locations = isGraphQLError(error) && !error.nodes ? error.locations : undefined;
    if (locations?.length && isGraphQLError(masked) && !masked.nodes && !masked.positions)
      return new GraphQLError(masked.message, {
        ...locatedAt(locations),
        path: masked.path,
        originalError: masked.originalError,
        extensions: masked.extensions,
      });
    return masked;
  };
}

/** A source and positions graphql reads back as these lines and columns (the query text itself is gone). */
function locatedAt(locations: readonly SourceLocation[]): { source: Source; positions: number[] } {
  const width = Math.max(...locations.map((l) => l.column));
  const lines = Math.max(...locations.map((l) => l.line));
  const source = new Source(`${' '.repeat(width)}\n`.repeat(lines));
  return { source, positions: locations.map((l) => (l.line - 1) * (width + 1) + (l.column - 1)) };
}

function maskWith(logOutage: ErrorLogger, log: ErrorLogger) {
  return (error: unknown): Error => {
    const graphQLError = isGraphQLError(error) ? error : null;
    const original: unknown = graphQLError?.originalError ?? error;
    const location = graphQLError
      ? {
          nodes: graphQLError.nodes,
          source: graphQLError.source,
          positions: graphQLError.positions,
          path: graphQLError.path,
        }
      : {};
    if (original instanceof FairwayError) {
      return new GraphQLError(original.message, {
        ...location,
        extensions: { code: original.code, ...(original.details ?? {}) },
      });
    }
    if (original instanceof PothosValidationError) {
      return new GraphQLError(original.message, { ...location, extensions: { code: 'BAD_USER_INPUT' } });
    }
    if (isGraphQLError(original)) {
      const code = original.extensions?.code;
      const status = (original.extensions?.http as { status?: number } | undefined)?.status;
      // Our codes, and anything yoga itself marked as the client's fault (4xx).
      if (
        (typeof code === 'string' && PUBLIC_CODES.has(code)) ||
        (typeof status === 'number' && status >= 400 && status < 500)
      ) {
        return new GraphQLError(original.message, { ...location, extensions: original.extensions });
      }
      if (code === undefined && !original.originalError) {
        // Raised by graphql-js itself while coercing arguments and variables (no cause
        // underneath, no code): the caller's input. The outer message names the variable.
        return new GraphQLError((graphQLError ?? original).message, {
          ...location,
          extensions: { code: 'BAD_USER_INPUT' },
        });
      }
    }
    if (isDatabaseUnavailable(original)) {
      logOutage(original);
      return new GraphQLError(DATABASE_UNAVAILABLE_MESSAGE, {
        ...location,
        // yoga turns `http` into the response status and headers (503 when no data came back) and strips it from the body.
        extensions: {
          code: 'SERVICE_UNAVAILABLE',
          http: { status: 503, headers: { 'retry-after': String(RETRY_AFTER_SECONDS) } },
        },
      });
    }
    log(original);
    return new GraphQLError('Unexpected error.', {
      ...location,
      extensions: { code: 'INTERNAL_SERVER_ERROR' },
    });
  };
}

/** Logs the first database failure of an outage in full, then one line with a count per interval. */
function outageLogger(log: ErrorLogger, now: () => number = Date.now): ErrorLogger {
  let lastLoggedAt = -Infinity;
  let suppressed = 0;
  return (error) => {
    const at = now();
    if (at - lastLoggedAt < OUTAGE_LOG_EVERY_MS) {
      suppressed++;
      return;
    }
    if (suppressed > 0)
      log(
        new Error(
          `database unavailable: ${suppressed} more request(s) failed in the last ${Math.round((at - lastLoggedAt) / 1000)} s`,
        ),
      );
    log(error);
    lastLoggedAt = at;
    suppressed = 0;
  };
}
