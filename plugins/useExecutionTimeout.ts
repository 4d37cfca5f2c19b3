import type { Plugin } from '@envelop/core';
import { type ExecutionResult, GraphQLError, getOperationAST } from 'graphql';

export interface ExecutionTimeoutOptions {
  /** A query still executing after this long is answered with a typed error. */
  maxExecutionMs: number;
}

function timeoutError(maxExecutionMs: number): GraphQLError {
  return new GraphQLError(
    `The query took longer than ${maxExecutionMs} ms and was stopped; ask for less (a smaller page, fewer nested lists).`,
    {
      extensions: { code: 'BAD_USER_INPUT', limit: 'execution-time' },
    },
  );
}

/**
 * Bounds how long a client waits for a query: past `maxExecutionMs` the answer is
 * BAD_USER_INPUT with `extensions.limit: "execution-time"` (ask for less: a smaller page, fewer
 * nested lists). Queries only: a mutation runs to its commit (bounded by the database's
 * statement timeout), so its answer never claims a failure for a change that was made; a
 * subscription's lifetime is its purpose.
 *
 * The abandoned execution finishes in the background (graphql-js cannot stop one); what stops
 * it from holding the database is the statement timeout, and the turns per caller
 * (useCallerConcurrency) stop one caller from piling such queries up.
 */
export function useExecutionTimeout(options: ExecutionTimeoutOptions): Plugin {
  return {
    onExecute({ args, executeFn, setExecuteFn }) {
      if (getOperationAST(args.document, args.operationName)?.operation !== 'query') return;
      setExecuteFn((executionArgs) => {
        const started = performance.now();
        let result: ExecutionResult | PromiseLike<ExecutionResult>;
        try {
          result = executeFn(executionArgs) as ExecutionResult | PromiseLike<ExecutionResult>;
        } catch (error) {
          return Promise.reject(error);
        }
        // Finished without waiting (nothing asynchronous to bound): no timer, no promise.
        if (typeof (result as { then?: unknown }).then !== 'function') return result;
        const pending = result as PromiseLike<ExecutionResult>;
        // One timer and one promise per query, settled by whichever comes first; the limit counts from the
        // start of execution.
        const left = Math.max(0, options.maxExecutionMs - (performance.now() - started));
        return new Promise<ExecutionResult>((resolve, reject) => {
          const timer = setTimeout(() => resolve({ errors: [timeoutError(options.maxExecutionMs)] }), left);
          pending.then(
            (value) => {
              clearTimeout(timer);
              resolve(value);
            },
            (error: unknown) => {
              clearTimeout(timer);
              reject(error);
            },
          );
        });
      });
    },
  };
}
