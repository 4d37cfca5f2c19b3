import { type DocumentNode, type ExecutionResult, GraphQLError, getOperationAST } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Principal } from '../src/auth/index.js';

/** Where the lines go (src/server/observability/observability.ts's FairwayLogger is one). */
export interface RequestLogger {
  error(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

/** What is known of the HTTP request being handled, for every line logged while it is. */
export interface RequestLogStore {
  requestId?: string;
}

export interface RequestLoggingOptions {
  logger: RequestLogger;
  /**
   * The request being handled, for every line logged while it is (src/server/observability's
   * requestLogContext, an AsyncLocalStorage the logger's mixin reads): the stack maskError logs
   * for an unexpected error carries the request id the client got in `x-request-id`. HTTP only;
   * over WebSocket the operation's own line has the id.
   */
  requestContext: { run<T>(store: RequestLogStore, fn: () => T): T; getStore(): RequestLogStore | undefined };
  /** The code a caller sees for an error, before yoga's masking (src/server/errors.ts). */
  errorCode: (error: GraphQLError) => string;
  /** Default '/graphql'. */
  graphqlEndpoint?: string;
}

/** Paths polled by machines: logged at debug so they do not drown the rest. */
const QUIET_PATHS = new Set(['/health', '/ready', '/metrics']);
/** A caller with more tenants than this is logged with the first ones and the count. */
const MAX_TENANT_IDS = 20;
/** Operation names are the caller's text: bounded in the log too. */
const MAX_NAME_LENGTH = 100;

interface OperationContext {
  requestId?: string;
  currentUser?: Principal | null;
  params?: { operationName?: string | null };
  request?: Request;
  /** Set by useTracing when tracing is on: the line and the span can be found from each other. */
  traceId?: string;
}

/** One operation as logged: nothing of its variables, its document or the caller's credential. */
interface OperationLine {
  requestId?: string;
  operationName: string | null;
  operationType: string;
  principal: { kind: Principal['kind'] | 'anonymous'; userId?: string; tokenId?: string };
  tenantIds: string[];
  tenantCount?: number;
  platformAdmin: boolean;
  errorCodes: string[];
  traceId?: string;
}

/**
 * One JSON line per GraphQL operation, over HTTP (logged when the response is ready, with its
 * status; a batch gives one line per operation) and over WebSocket (when the result, or a
 * subscription's first answer, is ready). Level: info for success, warn when the caller got
 * an error of its own making (typed codes), error for INTERNAL_SERVER_ERROR,
 * SERVICE_UNAVAILABLE or a 5xx. The unexpected error's stack is logged by maskError, not here.
 */
export function useRequestLogging(options: RequestLoggingOptions): Plugin {
  const { logger, requestContext, errorCode } = options;
  const endpoint = options.graphqlEndpoint ?? '/graphql';
  const requests = new WeakMap<Request, { started: number; lines: OperationLine[] }>();
  const operations = new WeakMap<object, { type: string; name: string | null }>();

  const remember = (
    context: OperationContext,
    document: DocumentNode,
    operationName: string | null | undefined,
  ) => {
    const ast = getOperationAST(document, operationName);
    operations.set(context, {
      type: ast?.operation ?? 'unknown',
      name: ast?.name?.value ?? operationName ?? null,
    });
  };
  const lineFor = (context: OperationContext, codes: string[]): OperationLine => {
    const validated = operations.get(context);
    const requested = context.params?.operationName;
    const name = validated?.name ?? (typeof requested === 'string' ? requested : null);
    return {
      requestId: context.requestId,
      operationName: name === null ? null : name.slice(0, MAX_NAME_LENGTH),
      operationType: validated?.type ?? 'unknown',
      ...callerOf(context.currentUser ?? null),
      errorCodes: [...new Set(codes)],
      ...(context.traceId ? { traceId: context.traceId } : {}),
    };
  };
  const emit = (
    line: Record<string, unknown> & { errorCodes?: string[] },
    status: number | undefined,
    message: string,
  ) => {
    const codes = line.errorCodes ?? [];
    if (
      (status ?? 0) >= 500 ||
      codes.includes('INTERNAL_SERVER_ERROR') ||
      codes.includes('SERVICE_UNAVAILABLE')
    )
      logger.error(line, message);
    else if ((status ?? 0) >= 400 || codes.length > 0) logger.warn(line, message);
    else logger.info(line, message);
  };
  const since = (started: number) => Math.round((performance.now() - started) * 10) / 10;
  const codesOf = (errors: readonly GraphQLError[] | undefined, fallback?: string): string[] =>
    (errors ?? []).map((error) =>
      typeof error.extensions?.code === 'string' ? error.extensions.code : (fallback ?? errorCode(error)),
    );

  return {
    onRequest({ request, requestHandler, setRequestHandler }) {
      requests.set(request, { started: performance.now(), lines: [] });
      // The id is known once the context is built (useRequestId); the bag is filled then.
      const bag: RequestLogStore = {};
      setRequestHandler((req, serverContext) =>
        requestContext.run(bag, () => requestHandler(req, serverContext)),
      );
    },

    onContextBuilding({ context }) {
      const bag = requestContext.getStore();
      const requestId = (context as OperationContext).requestId;
      if (bag && requestId) bag.requestId = requestId;
    },

    onExecute({ args }) {
      const context = args.contextValue as OperationContext;
      remember(context, args.document, args.operationName);
      if (context.request) return; // HTTP: logged with the response
      const started = performance.now();
      return {
        onExecuteDone({ result }) {
          if (isAsyncIterable(result)) return; // incremental delivery over a socket: not enabled
          emit(
            { ...lineFor(context, codesOf(result.errors)), transport: 'ws', durationMs: since(started) },
            undefined,
            'graphql operation',
          );
        },
      };
    },

    onSubscribe({ args }) {
      const context = args.contextValue as OperationContext;
      remember(context, args.document, args.operationName);
      if (context.request) return;
      const started = performance.now();
      return {
        onSubscribeResult({ result }) {
          const line = {
            ...lineFor(context, isAsyncIterable(result) ? [] : codesOf(result.errors)),
            transport: 'ws',
          };
          emit({ ...line, durationMs: since(started) }, undefined, 'graphql subscription started');
          if (!isAsyncIterable(result)) return;
          return {
            onEnd: () => logger.debug({ ...line, durationMs: since(started) }, 'graphql subscription ended'),
          };
        },
        onSubscribeError({ error }) {
          // A stream that ends with an error of its own making (a log follower too slow: RATE_LIMITED)
          // is logged with the code the caller gets, as a GraphQLError's would be.
          const code =
            error && typeof error === 'object' && (error as Error).name === 'GraphQLError'
              ? errorCode(error as GraphQLError)
              : error instanceof Error
                ? errorCode(new GraphQLError(error.message, { originalError: error }))
                : 'INTERNAL_SERVER_ERROR';
          emit(
            { ...lineFor(context, [code]), transport: 'ws', durationMs: since(started) },
            undefined,
            'graphql subscription started',
          );
        },
      };
    },

    onValidate({ context }) {
      const operation = context as OperationContext;
      // Over HTTP a refused document reaches onExecutionResult; over a socket it never goes further.
      if (operation.request) return;
      const started = performance.now();
      return ({ valid, result }) => {
        if (!valid)
          emit(
            {
              ...lineFor(operation, codesOf(result as readonly GraphQLError[], 'GRAPHQL_VALIDATION_FAILED')),
              transport: 'ws',
              durationMs: since(started),
            },
            undefined,
            'graphql operation',
          );
      };
    },

    onExecutionResult({ request, result, context }) {
      const state = requests.get(request);
      if (!state) return;
      // Masked by now: the codes the caller sees. A stream (SSE subscription, @defer) is logged as started.
      const errors = isAsyncIterable(result) ? [] : (result as ExecutionResult).errors;
      state.lines.push(lineFor(context as OperationContext, codesOf(errors)));
    },

    onResponse({ request, response }) {
      const state = requests.get(request);
      if (!state) return;
      requests.delete(request);
      const path = new URL(request.url, 'http://localhost').pathname;
      const http = {
        transport: 'http',
        method: request.method,
        status: response.status,
        durationMs: since(state.started),
      };
      if (path !== endpoint) {
        const line = { ...http, path, requestId: response.headers.get('x-request-id') ?? undefined };
        if (QUIET_PATHS.has(path)) logger.debug(line, 'http request');
        else emit(line, response.status, 'http request');
        return;
      }
      // Refused before any operation ran (unsupported media type, body too large, CSRF…): one line still.
      if (state.lines.length === 0)
        emit(
          {
            ...http,
            requestId: response.headers.get('x-request-id') ?? undefined,
            operationName: null,
            errorCodes: [],
          },
          response.status,
          'graphql request',
        );
      for (const line of state.lines) emit({ ...line, ...http }, response.status, 'graphql operation');
    },
  };
}

/** Who called, by ids only (never an e-mail or a name): the kind, the user, the token, the tenants. */
function callerOf(
  principal: Principal | null,
): Pick<OperationLine, 'principal' | 'tenantIds' | 'tenantCount' | 'platformAdmin'> {
  if (!principal) return { principal: { kind: 'anonymous' }, tenantIds: [], platformAdmin: false };
  const tenants = principal.token
    ? principal.token.tenantId
      ? [principal.token.tenantId]
      : []
    : [...principal.roles.keys()];
  return {
    principal: {
      kind: principal.kind,
      userId: principal.userId,
      ...(principal.token ? { tokenId: principal.token.id } : {}),
    },
    tenantIds: tenants.slice(0, MAX_TENANT_IDS),
    ...(tenants.length > MAX_TENANT_IDS ? { tenantCount: tenants.length } : {}),
    platformAdmin: principal.isPlatformAdmin,
  };
}
