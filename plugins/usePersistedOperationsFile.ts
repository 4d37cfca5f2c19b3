import { usePersistedOperations } from '@graphql-yoga/plugin-persisted-operations';
import type { Plugin } from 'graphql-yoga';

/** allow: persisted ids and query text are both accepted; only: nothing but persisted ids. */
export type PersistedOperationsMode = 'allow' | 'only';

export interface UsePersistedOperationsFileOptions {
  mode: PersistedOperationsMode;
  /** Operation id (the hash a client sends) → query text, read and parsed at start. */
  operations: ReadonlyMap<string, string>;
}

/** The typed refusals, shared with the WebSocket transport so both say the same thing. */
export const PERSISTED_QUERY_NOT_FOUND = {
  code: 'PERSISTED_QUERY_NOT_FOUND',
  message: "No persisted operation has this id: the client and the server's manifest are out of step.",
} as const;
export const PERSISTED_QUERY_REQUIRED = {
  code: 'PERSISTED_QUERY_REQUIRED',
  message:
    "This server runs only persisted operations: send the operation's id in extensions.persistedQuery.sha256Hash (or documentId), not its text.",
} as const;

/**
 * The id a client sent: Apollo's and GraphQL Codegen's `extensions.persistedQuery`
 * (`{ version: 1, sha256Hash }`), or the `documentId` of the GraphQL-over-HTTP persisted
 * documents proposal. null when there is none.
 */
export function persistedOperationId(params: { extensions?: unknown; documentId?: unknown }): string | null {
  const persistedQuery = (
    params.extensions as { persistedQuery?: { version?: unknown; sha256Hash?: unknown } } | null | undefined
  )?.persistedQuery;
  if (
    persistedQuery &&
    typeof persistedQuery === 'object' &&
    persistedQuery.version === 1 &&
    typeof persistedQuery.sha256Hash === 'string'
  )
    return persistedQuery.sha256Hash;
  if (typeof params.documentId === 'string' && params.documentId) return params.documentId;
  return null;
}

// A refusal of the request itself: 400, and it passes the error mask as the client's fault.
const refusal = (error: { code: string; message: string }) => ({
  message: error.message,
  extensions: { code: error.code, http: { status: 400 } },
});

/**
 * Persisted operations from a manifest (yoga's plugin over an in-memory map): a portal sends
 * an id instead of the query; in `only` mode nothing else runs, so a stolen token used from a
 * script can still only run what the portal runs.
 */
export function usePersistedOperationsFile(options: UsePersistedOperationsFileOptions): Plugin {
  const { mode, operations } = options;
  return usePersistedOperations({
    getPersistedOperation: (id) => operations.get(id) ?? null,
    allowArbitraryOperations: mode === 'allow',
    extractPersistedOperationId: (params) => persistedOperationId(params as never),
    customErrors: {
      notFound: refusal(PERSISTED_QUERY_NOT_FOUND),
      persistedQueryOnly: refusal(PERSISTED_QUERY_REQUIRED),
      keyNotFound:
        mode === 'only'
          ? refusal(PERSISTED_QUERY_REQUIRED)
          : refusal({
              code: 'BAD_REQUEST',
              message: 'Send a query, or a persisted operation id in extensions.persistedQuery.sha256Hash.',
            }),
    },
  }) as Plugin;
}
