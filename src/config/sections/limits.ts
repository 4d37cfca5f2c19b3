import { z } from 'zod';
import { optionalFlag, section } from '../section.js';

/**
 * How much one request may ask of the server (before these, any caller, even a
 * VIEWER, could stall the server for everyone with a deeply nested or heavily aliased query,
 * a 10 MB padded query, or a batch of operations). Applied by plugins/useQueryLimits.ts and
 * src/server/app.ts.
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
  /** A query still executing after this many ms is answered with a typed error
   * (plugins/useExecutionTimeout.ts).
   */
  maxExecutionMs: number;
  /** `__schema` / `__type` queries answered; off in production unless enabled. */
  introspection: boolean;
  /** "Did you mean …?" in validation errors; off in production unless enabled (they reveal the schema). */
  fieldSuggestions: boolean;
}

export const DEFAULT_QUERY_LIMITS: Readonly<Omit<QueryLimits, 'introspection' | 'fieldSuggestions'>> =
  Object.freeze({
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
  });

const d = DEFAULT_QUERY_LIMITS;

export const limitsSection = section({
  key: 'limits',
  title: 'Query limits',
  description:
    'How much one request may ask of the server. A query too deep, with too many aliases, tokens or directives, or too costly is refused before anything runs, with `BAD_USER_INPUT` (HTTP 400), a message naming the limit and `extensions.limit`; nothing is written or audited.',
  variables: {
    FAIRWAY_MAX_DEPTH: z.coerce
      .number()
      .int()
      .min(1)
      .max(1000)
      .default(d.maxDepth)
      .describe('Deepest selection a query may make (fragments flattened; introspection exempt).'),
    FAIRWAY_MAX_ALIASES: z.coerce
      .number()
      .int()
      .min(0)
      .max(100_000)
      .default(d.maxAliases)
      .describe('Aliased fields in one operation (`__typename` aliases are free).'),
    FAIRWAY_MAX_COST: z.coerce
      .number()
      .int()
      .min(1)
      .max(100_000_000)
      .default(d.maxCost)
      .describe(
        "graphql-armor's cost of an operation: 2 per object, 1 per scalar, ×1.5 per level, × a page's `first`/`last` (the tenant dashboard with three pages of 500 costs ~138,000).",
      ),
    FAIRWAY_MAX_TOKENS: z.coerce
      .number()
      .int()
      .min(100, 'must be at least 100')
      .max(10_000_000)
      .default(d.maxTokens)
      .describe("Lexical tokens in a query's text, counted while parsing."),
    FAIRWAY_MAX_DIRECTIVES: z.coerce
      .number()
      .int()
      .min(0)
      .max(100_000)
      .default(d.maxDirectives)
      .describe('Directives in one operation.'),
    FAIRWAY_MAX_BODY_BYTES: z.coerce
      .number()
      .int()
      .min(1024, 'must be at least 1024')
      .max(1_000_000_000)
      .default(d.maxBodyBytes)
      .describe('Largest HTTP request body, in bytes; larger is answered 413 before it is read.'),
    FAIRWAY_MAX_BATCH: z.coerce
      .number()
      .int()
      .min(0)
      .max(1000)
      .default(d.maxBatch)
      .describe('Operations in one batched (JSON array) request; `0` refuses batches.'),
    FAIRWAY_MAX_EXECUTION_MS: z.coerce
      .number()
      .int()
      .min(1)
      .max(600_000)
      .default(d.maxExecutionMs)
      .describe(
        'Milliseconds a query may execute; one still running is answered `BAD_USER_INPUT` (`extensions.limit: "execution-time"`). Mutations run to their commit (bounded by the statement timeout).',
      ),
    FAIRWAY_INTROSPECTION: optionalFlag(
      'Answer `__schema` / `__type` queries.',
      '`true` unless `NODE_ENV=production`',
    ),
    FAIRWAY_FIELD_SUGGESTIONS: optionalFlag(
      '"Did you mean …?" hints in validation errors (they reveal the schema).',
      '`true` unless `NODE_ENV=production`',
    ),
  },
  resolve: (v, ctx): QueryLimits => ({
    maxDepth: v.FAIRWAY_MAX_DEPTH,
    maxAliases: v.FAIRWAY_MAX_ALIASES,
    maxCost: v.FAIRWAY_MAX_COST,
    maxTokens: v.FAIRWAY_MAX_TOKENS,
    maxDirectives: v.FAIRWAY_MAX_DIRECTIVES,
    maxBodyBytes: v.FAIRWAY_MAX_BODY_BYTES,
    maxBatch: v.FAIRWAY_MAX_BATCH,
    maxExecutionMs: v.FAIRWAY_MAX_EXECUTION_MS,
    introspection: v.FAIRWAY_INTROSPECTION ?? ctx.nodeEnv !== 'production',
    fieldSuggestions: v.FAIRWAY_FIELD_SUGGESTIONS ?? ctx.nodeEnv !== 'production',
  }),
});
