import type { Plugin } from '@envelop/core';
import { useGraphQlJit } from '@envelop/graphql-jit';
import { type DocumentNode, Kind } from 'graphql';

export interface GraphqlJitOptions {
  /** Executions of a document on the standard executor before it is compiled (default 1: compiled the
   * second time it is seen). One-off documents never pay for a compilation that costs more than it saves.
   */
  compileAfter?: number;
  /** A document graphql-jit could not compile (it then runs on the standard executor). */
  onCompileError?: (error: unknown) => void;
}

/**
 * Queries and mutations executed by graphql-jit (compiled to JavaScript per document) instead of
 * graphql-js's interpreter. The resolvers are the same (Pothos's, with their scope-auth rules and
 * typed errors); only the walk over the selection is compiled.
 *
 * - Documents come from yoga's parser cache (the same object for the same text), so the compiled
 *   query is cached by document (a WeakMap: it goes when yoga's cache drops the document).
 * - Only documents with exactly one operation: @envelop/graphql-jit caches by document alone, so a
 *   document whose operations a client picks by `operationName` would run the one compiled first.
 * - Subscriptions stay on the standard executor (useSubscriptionEventContext runs each event).
 * - Install it before useExecutionTimeout, which bounds whatever executor it finds.
 */
export function useGraphqlJit(options: GraphqlJitOptions = {}): Plugin {
  const compileAfter = options.compileAfter ?? 1;
  const seen = new WeakMap<DocumentNode, number>();
  const eligible = (document: DocumentNode): boolean => {
    const times = (seen.get(document) ?? 0) + 1;
    if (times <= compileAfter) {
      // Counted until it qualifies; then the answer no longer changes.
      seen.set(document, times);
      return false;
    }
    return singleOperation(document);
  };
  const jit = useGraphQlJit(
    {},
    {
      enableIf: (args) => eligible(args.document),
      onError: (result) => options.onCompileError?.(result),
    },
  );
  return {
    // Queries and mutations only: the plugin's own onSubscribe is not installed.
    onExecute: jit.onExecute,
  };
}

const operationsOf = new WeakMap<DocumentNode, boolean>();

function singleOperation(document: DocumentNode): boolean {
  let single = operationsOf.get(document);
  if (single === undefined) {
    single = document.definitions.filter((d) => d.kind === Kind.OPERATION_DEFINITION).length === 1;
    operationsOf.set(document, single);
  }
  return single;
}
