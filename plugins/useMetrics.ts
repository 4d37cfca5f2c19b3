import { createHash, timingSafeEqual } from 'node:crypto';
import { getOperationAST, type DocumentNode, type ExecutionResult, type GraphQLError } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { PothosValidationError } from '@pothos/core';
import type { IdentityResolver } from '../src/auth/identity.js';
import { INVALID_OPERATION, type FairwayMetrics } from '../src/server/metrics/registry.js';
import { FairwayError } from '../src/shared/client-errors.js';
import { isDatabaseUnavailable } from '../src/persistence/database-unavailable.js';
import { jsonRouteError } from '../src/server/routes/route-errors.js';

export interface MetricsOptions {
  metrics: FairwayMetrics;
  /** The same credential check as GraphQL (useFairwayAuth): API tokens and OIDC JWTs. */
  identity: IdentityResolver;
  /** FAIRWAY_METRICS_TOKEN: a shared secret a Prometheus server sends as its bearer token. */
  token?: string;
  /** Default '/metrics'. */
  endpoint?: string;
  /** Unexpected errors (server log only; the caller gets a fixed message). */
  logError?: (error: unknown) => void;
}

export type ScrapeRefusal = { status: 401 | 403; code: 'UNAUTHENTICATED' | 'FORBIDDEN'; message: string };

/**
 * Who may scrape: the metrics name every queue (tenant-owned data), so never anonymous. The
 * configured metrics token, compared in constant time, or a platform admin's own credential
 * (API token or JWT); a tenant's credential is refused. Returns null when allowed.
 */
export async function authorizeScrape(header: string | null, options: Pick<MetricsOptions, 'identity' | 'token'>): Promise<ScrapeRefusal | null> {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header?.trim() ?? '')?.[1];
  if (bearer && options.token && sameSecret(bearer, options.token)) return null;
  let principal;
  try {
    principal = await options.identity.resolveAuthorization(header);
  } catch (error) {
    if (error instanceof FairwayError && error.code === 'UNAUTHENTICATED') return { status: 401, code: 'UNAUTHENTICATED', message: error.message };
    throw error;
  }
  if (!principal) return { status: 401, code: 'UNAUTHENTICATED', message: 'Send "Authorization: Bearer <metrics token or a platform admin\'s credential>".' };
  if (!principal.isPlatformAdmin) return { status: 403, code: 'FORBIDDEN', message: 'Only platform admins (or the metrics token) may read metrics.' };
  return null;
}

/** Constant time whatever the lengths: both sides are hashed to 32 bytes first. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/**
 * The code a caller sees for an error, before yoga's masking runs (it runs after this plugin):
 * the same decisions as createMaskError, without its logging.
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

interface Operation {
  type: string;
  name: string;
}

/**
 * `GET /metrics` (Prometheus text format) and per-operation GraphQL metrics: execution time
 * of queries and mutations, errors by code (parse, validation, execution and subscription),
 * and open subscriptions. Operation names are bounded (see FairwayMetrics.operationLabel), and
 * only operations that validated have theirs: the others count as 'invalid', so a caller
 * cannot fill the label slots with names of documents that never ran.
 */
export function useMetrics(options: MetricsOptions): Plugin {
  const endpoint = options.endpoint ?? '/metrics';
  const { metrics } = options;

  const operationOf = (document: DocumentNode | undefined | null, operationName: string | null | undefined): Operation => {
    const operation = document ? getOperationAST(document, operationName) : null;
    return { type: operation?.operation ?? 'unknown', name: metrics.operationLabel(operationName ?? operation?.name?.value) };
  };
  const countErrors = (operation: Operation, errors: readonly GraphQLError[] | undefined, fallback?: string) => {
    for (const error of errors ?? []) {
      const code = typeof error.extensions?.code === 'string' ? error.extensions.code : (fallback ?? errorCode(error));
      metrics.operationErrors.inc({ operation_type: operation.type, operation_name: operation.name, code });
    }
  };
  /** Contexts whose errors the hooks below counted (the rest are counted from the final result). */
  const counted = new WeakSet<object>();
  /** yoga's request params (HTTP) or graphql-ws's payload (WebSocket): the requested operation's name. */
  const requestedName = (context: unknown) => (context as { params?: { operationName?: string | null } } | undefined)?.params?.operationName;
  type Fetch = { Response: typeof Response };
  const scrape = async (request: Request, endResponse: (response: Response) => void, fetchAPI: Fetch) => {
    try {
      const refusal = await authorizeScrape(request.headers.get('authorization'), options);
      if (refusal) {
        endResponse(jsonRouteError(fetchAPI.Response, refusal.status, refusal.code, refusal.message));
        return;
      }
      const body = await metrics.registry.metrics();
      endResponse(new fetchAPI.Response(body, { status: 200, headers: { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' } }));
    } catch (error) {
      options.logError?.(error);
      endResponse(jsonRouteError(fetchAPI.Response, 500, 'INTERNAL_SERVER_ERROR', 'Unexpected error.'));
    }
  };

  return {
    // Not async: every request passes here, and only a scrape needs to wait.
    onRequest({ request, url, endResponse, fetchAPI }) {
      if (url.pathname !== endpoint) return;
      if (request.method !== 'GET') {
        endResponse(jsonRouteError(fetchAPI.Response, 405, 'METHOD_NOT_ALLOWED', 'Use GET.'));
        return;
      }
      return scrape(request, endResponse, fetchAPI);
    },

    onParse({ context }) {
      return ({ result }) => {
        if (result instanceof Error) {
          counted.add(context);
          metrics.operationErrors.inc({ operation_type: 'unknown', operation_name: INVALID_OPERATION, code: 'GRAPHQL_PARSE_FAILED' });
        }
      };
    },

    onValidate({ params, context }) {
      return ({ valid, result }) => {
        if (valid) return;
        counted.add(context);
        const type = (params.documentAST ? getOperationAST(params.documentAST, requestedName(context)) : null)?.operation ?? 'unknown';
        countErrors({ type, name: INVALID_OPERATION }, result as readonly GraphQLError[], 'GRAPHQL_VALIDATION_FAILED');
      };
    },

    // Refused before parsing (a credential that does not verify, a rate limit, a body too
    // large): the errors reach the response without passing the hooks above.
    onExecutionResult({ result, context }) {
      if (counted.has(context) || isAsyncIterable(result) || Array.isArray(result)) return;
      countErrors({ type: 'unknown', name: INVALID_OPERATION }, (result as ExecutionResult).errors as readonly GraphQLError[] | undefined);
    },

    onExecute({ args }) {
      counted.add(args.contextValue as object);
      const operation = operationOf(args.document, args.operationName);
      const started = performance.now();
      const observe = () => metrics.operationDuration.observe({ operation_type: operation.type, operation_name: operation.name }, (performance.now() - started) / 1000);
      return {
        onExecuteDone({ result }) {
          if (!isAsyncIterable(result)) {
            countErrors(operation, result.errors);
            observe();
            return;
          }
          // Incremental delivery (@defer/@stream): the operation lasts until its last part.
          return { onNext: ({ result: part }) => countErrors(operation, part.errors), onEnd: observe };
        },
      };
    },

    onSubscribe({ args }) {
      counted.add(args.contextValue as object);
      const operation = operationOf(args.document, args.operationName);
      return {
        onSubscribeResult({ result }) {
          if (!isAsyncIterable(result)) {
            countErrors(operation, result.errors);
            return;
          }
          metrics.subscriptionsOpen.inc();
          let open = true;
          return {
            onNext: ({ result: event }) => countErrors(operation, event.errors),
            onEnd: () => {
              if (open) metrics.subscriptionsOpen.dec();
              open = false;
            },
          };
        },
        onSubscribeError({ error }) {
          if (error && typeof error === 'object' && (error as Error).name === 'GraphQLError') countErrors(operation, [error as GraphQLError]);
          else metrics.operationErrors.inc({ operation_type: operation.type, operation_name: operation.name, code: 'INTERNAL_SERVER_ERROR' });
        },
      };
    },
  };
}
