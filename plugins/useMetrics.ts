import { type DocumentNode, type ExecutionResult, type GraphQLError, getOperationAST } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';

type OperationLabels = { operation_type: string; operation_name: string };

/** The instruments this plugin records into (src/server/metrics/registry.ts's FairwayMetrics is one). */
export interface OperationMetrics {
  operationDuration: { observe(labels: OperationLabels, seconds: number): void };
  operationErrors: { inc(labels: OperationLabels & { code: string }): void };
  subscriptionsOpen: { inc(): void; dec(): void };
  /** The label for an operation name: bounded, so callers cannot fill the label slots. */
  operationLabel(name: string | null | undefined): string;
}

export interface MetricsOptions {
  metrics: OperationMetrics;
  /** The code a caller sees for an error, before yoga's masking (src/server/errors.ts). */
  errorCode: (error: GraphQLError) => string;
}

/** Operations that did not parse or validate (or were refused before): their names are the caller's free
 * text and take no label.
 */
export const INVALID_OPERATION = 'invalid';

interface Operation {
  type: string;
  name: string;
}

/**
 * Per-operation GraphQL metrics: execution time of queries and mutations, errors by code
 * (parse, validation, execution and subscription), and open subscriptions. Operation names are
 * bounded (see FairwayMetrics.operationLabel), and only operations that validated have theirs:
 * the others count as 'invalid', so a caller cannot fill the label slots with names of
 * documents that never ran. (`GET /metrics` itself is a route: src/server/routes/metrics.ts.)
 */
export function useMetrics(options: MetricsOptions): Plugin {
  const { metrics, errorCode } = options;

  const operationOf = (
    document: DocumentNode | undefined | null,
    operationName: string | null | undefined,
  ): Operation => {
    const operation = document ? getOperationAST(document, operationName) : null;
    return {
      type: operation?.operation ?? 'unknown',
      name: metrics.operationLabel(operationName ?? operation?.name?.value),
    };
  };
  const countErrors = (
    operation: Operation,
    errors: readonly GraphQLError[] | undefined,
    fallback?: string,
  ) => {
    for (const error of errors ?? []) {
      const code =
        typeof error.extensions?.code === 'string' ? error.extensions.code : (fallback ?? errorCode(error));
      metrics.operationErrors.inc({ operation_type: operation.type, operation_name: operation.name, code });
    }
  };
  /** Contexts whose errors the hooks below counted (the rest are counted from the final result). */
  const counted = new WeakSet<object>();
  /** yoga's request params (HTTP) or graphql-ws's payload (WebSocket): the requested operation's name. */
  const requestedName = (context: unknown) =>
    (context as { params?: { operationName?: string | null } } | undefined)?.params?.operationName;

  return {
    onParse({ context }) {
      return ({ result }) => {
        if (result instanceof Error) {
          counted.add(context);
          metrics.operationErrors.inc({
            operation_type: 'unknown',
            operation_name: INVALID_OPERATION,
            code: 'GRAPHQL_PARSE_FAILED',
          });
        }
      };
    },

    onValidate({ params, context }) {
      return ({ valid, result }) => {
        if (valid) return;
        counted.add(context);
        const type =
          (params.documentAST ? getOperationAST(params.documentAST, requestedName(context)) : null)
            ?.operation ?? 'unknown';
        countErrors(
          { type, name: INVALID_OPERATION },
          result as readonly GraphQLError[],
          'GRAPHQL_VALIDATION_FAILED',
        );
      };
    },

    // Refused before parsing (a credential that does not verify, a rate limit, a body too
    // large): the errors reach the response without passing the hooks above.
    onExecutionResult({ result, context }) {
      if (counted.has(context) || isAsyncIterable(result) || Array.isArray(result)) return;
      countErrors(
        { type: 'unknown', name: INVALID_OPERATION },
        (result as ExecutionResult).errors as readonly GraphQLError[] | undefined,
      );
    },

    onExecute({ args }) {
      counted.add(args.contextValue as object);
      const operation = operationOf(args.document, args.operationName);
      const started = performance.now();
      const observe = () =>
        metrics.operationDuration.observe(
          { operation_type: operation.type, operation_name: operation.name },
          (performance.now() - started) / 1000,
        );
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
          if (error && typeof error === 'object' && (error as Error).name === 'GraphQLError')
            countErrors(operation, [error as GraphQLError]);
          else
            metrics.operationErrors.inc({
              operation_type: operation.type,
              operation_name: operation.name,
              code: 'INTERNAL_SERVER_ERROR',
            });
        },
      };
    },
  };
}
