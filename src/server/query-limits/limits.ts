/**
 * How much one request may ask of the server: the one place the query limits live, with their
 * defaults. Before these, any caller (even a VIEWER) could stall the server for everyone with a
 * deeply nested or heavily aliased query, a 10 MB padded query, or a batch of operations
 * (issue 13). Each limit can be overridden from the environment (see src/config/index.ts and the
 * README's Configuration).
 *
 * The defaults were set by measuring what the repo's own clients send (tests, README examples,
 * bench:api, the schema-walking cross-tenant suite): each accepts all of them with room to spare.
 */
export interface QueryLimits {
  /** Deepest selection (fields inside fields; fragments flattened; introspection exempt). */
  maxDepth: number;
  /** Aliased fields in one operation. */
  maxAliases: number;
  /** graphql-armor's cost: 2 per object and 1 per scalar, ×1.5 per level of depth, × `first`/`last` of a page. */
  maxCost: number;
  /** Lexical tokens in the query text: refused while parsing, before anything is built. */
  maxTokens: number;
  /** Directives in one operation. */
  maxDirectives: number;
  /** Bytes of an HTTP request body; more is answered 413 before the body is read. */
  maxBodyBytes: number;
  /** Operations in one batched HTTP request; 0: batching off (an array body is refused). */
  maxBatch: number;
  /** A query still executing after this many ms is answered with a typed error (plugins/useExecutionTimeout.ts). */
  maxExecutionMs: number;
  /** `__schema` / `__type` queries answered; off in production unless enabled. */
  introspection: boolean;
  /** "Did you mean …?" in validation errors; off in production unless enabled (they reveal the schema). */
  fieldSuggestions: boolean;
}

export const DEFAULT_QUERY_LIMITS: Omit<QueryLimits, 'introspection' | 'fieldSuggestions'> = {
  maxDepth: 15,
  maxAliases: 30,
  // The tenant dashboard of test/persistence/sql-count.test.ts (three pages of 500 jobs) costs ~138,000.
  maxCost: 250_000,
  maxTokens: 5_000,
  maxDirectives: 50,
  maxBodyBytes: 1_000_000,
  maxBatch: 0,
  // The tenant dashboard answers in tens of ms; 10 s is a query gone wrong, not a slow page.
  maxExecutionMs: 10_000,
};

/** The limits for an environment: introspection and suggestions are on everywhere but production. */
export function resolveQueryLimits(env: 'development' | 'production' | 'test', overrides: Partial<QueryLimits> = {}): QueryLimits {
  const defined = Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined)) as Partial<QueryLimits>;
  return { ...DEFAULT_QUERY_LIMITS, introspection: env !== 'production', fieldSuggestions: env !== 'production', ...defined };
}
