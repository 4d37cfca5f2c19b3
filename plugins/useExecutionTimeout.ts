import type { Plugin } from '@envelop/core';
import { GraphQLError, getOperationAST, type ExecutionResult } from 'graphql';

export interface ExecutionTimeoutOptions {
  /** A query still executing after this long is answered with a typed error. */
  maxExecutionMs: number;
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
      setExecuteFn(async (executionArgs) => {
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<ExecutionResult>((resolve) => {
          timer = setTimeout(
            () =>
              resolve({
                errors: [
                  new GraphQLError(`The query took longer than ${options.maxExecutionMs} ms and was stopped; ask for less (a smaller page, fewer nested lists).`, {
                    extensions: { code: 'BAD_USER_INPUT', limit: 'execution-time' },
                  }),
                ],
              }),
            options.maxExecutionMs,
          );
        });
        try {
          return await Promise.race([Promise.resolve(executeFn(executionArgs) as ExecutionResult | Promise<ExecutionResult>), timedOut]);
        } finally {
          clearTimeout(timer);
        }
      });
    },
  };
}
