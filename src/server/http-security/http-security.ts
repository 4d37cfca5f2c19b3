import fs from 'node:fs';
import path from 'node:path';
import { useCSRFPrevention } from '@graphql-yoga/plugin-csrf-prevention';
import { parse } from 'graphql';
import type { Plugin, YogaServerOptions } from 'graphql-yoga';
import { z } from 'zod';
import {
  PERSISTED_QUERY_NOT_FOUND,
  PERSISTED_QUERY_REQUIRED,
  type PersistedOperationsMode,
  persistedOperationId,
  usePersistedOperationsFile,
} from '../../../plugins/usePersistedOperationsFile.js';
import { useRefuseFormBodies } from '../../../plugins/useRefuseFormBodies.js';
import { useSecurityHeaders } from '../../../plugins/useSecurityHeaders.js';
import { ConfigError, type DeepReadonly, type HttpConfig } from '../../config/index.js';

export type { PersistedOperationsMode } from '../../../plugins/usePersistedOperationsFile.js';

/** A manifest read and checked at start: operation id → query text. */
export interface PersistedOperations {
  mode: PersistedOperationsMode;
  /** Where it came from (for messages). */
  source: string;
  operations: ReadonlyMap<string, string>;
}

export interface HttpSecurityConfig {
  /** Exact origins (scheme://host[:port]) a browser page may call the API from; empty: none. */
  corsOrigins: string[];
  /** Headers (lower case) that mark a GET, form or text/plain request as not a cross-site forgery. */
  csrfHeaders: string[];
  /** Send Strict-Transport-Security (only behind TLS). */
  hsts: boolean;
  /** null: no manifest, every operation is sent as text. */
  persistedOperations: PersistedOperations | null;
}

/**
 * The runtime settings from the configuration's section (src/config/sections/http.ts): the
 * persisted-operations manifest it names is read and checked now, at start.
 */
export function httpSecurityFromConfig(section: DeepReadonly<HttpConfig>): HttpSecurityConfig {
  const manifest = section.persistedOperations;
  return {
    corsOrigins: [...section.corsOrigins],
    csrfHeaders: [...section.csrfHeaders],
    hsts: section.hsts,
    persistedOperations: manifest ? loadPersistedOperations(manifest.file, manifest.mode) : null,
  };
}

const apolloManifest = z.object({
  format: z.literal('apollo-persisted-query-manifest'),
  version: z.literal(1),
  operations: z.array(z.object({ id: z.string().min(1), body: z.string().min(1) }).loose()),
});
const flatManifest = z.record(z.string().min(1), z.string().min(1, 'an empty query'));

/**
 * Reads a manifest in either format clients emit: GraphQL Codegen's client preset
 * (`persisted-documents.json`, `{ "<hash>": "<query text>" }`) or Apollo's
 * (`@apollo/generate-persisted-query-manifest`, `{ format: "apollo-persisted-query-manifest",
 * version: 1, operations: [{ id, body, … }] }`). Every query is parsed now, so a broken
 * manifest stops the server at start instead of failing one portal call at a time.
 */
export function loadPersistedOperations(file: string, mode: PersistedOperationsMode): PersistedOperations {
  const variable = 'FAIRWAY_PERSISTED_OPERATIONS';
  const source = path.resolve(file);
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(source, 'utf8'));
  } catch (error) {
    const reason =
      (error as NodeJS.ErrnoException).code === 'ENOENT'
        ? 'no such file'
        : error instanceof SyntaxError
          ? `not JSON (${error.message})`
          : String((error as Error).message ?? error);
    throw new ConfigError([`${variable}: cannot read ${source}: ${reason}`]);
  }
  let entries: [string, string][];
  const asApollo = apolloManifest.safeParse(json);
  if (asApollo.success) {
    entries = asApollo.data.operations.map((op) => [op.id, op.body]);
  } else {
    const claimsApollo = !!json && typeof json === 'object' && 'format' in json;
    const asFlat = flatManifest.safeParse(json);
    if (!asFlat.success || claimsApollo) {
      // Report against the format the file claims to be.
      const issue = (claimsApollo ? asApollo.error : asFlat.error)!.issues[0]!;
      throw new ConfigError([
        `${variable}: ${source} is neither { "<hash>": "<query>" } (GraphQL Codegen) nor an Apollo persisted query manifest: ${issue.path.join('.') || 'top level'}: ${issue.message}`,
      ]);
    }
    entries = Object.entries(asFlat.data);
  }
  if (entries.length === 0) throw new ConfigError([`${variable}: ${source} holds no operations`]);
  const operations = new Map<string, string>();
  for (const [id, query] of entries) {
    if (operations.has(id) && operations.get(id) !== query)
      throw new ConfigError([`${variable}: ${source}: id ${id} names two different operations`]);
    try {
      parse(query);
    } catch (error) {
      throw new ConfigError([
        `${variable}: ${source}: operation ${id} does not parse: ${(error as Error).message}`,
      ]);
    }
    operations.set(id, query);
  }
  return { mode, source, operations };
}

type CorsOption = YogaServerOptions<Record<string, unknown>, Record<string, unknown>>['cors'];

/**
 * CORS for the listed origins only. yoga's default reflects any Origin (with credentials);
 * a factory answering `false` sends no CORS header at all, so a browser refuses to hand an
 * unlisted page the response and its preflight fails. Same-origin pages, curl and the CLI
 * need no CORS header. Credentials stay off even for listed origins: Fairway reads the
 * Authorization header (allowed here like any requested header), never a cookie.
 */
function corsFor(origins: string[]): CorsOption {
  const listed = new Set(origins);
  return (request: Request) => {
    const requestOrigin = request.headers.get('origin');
    if (!requestOrigin || !listed.has(requestOrigin)) return false;
    return {
      origin: [requestOrigin],
      credentials: false,
      methods: ['GET', 'POST'],
      exposedHeaders: ['x-request-id', 'retry-after'],
      maxAge: 600,
    };
  };
}

/** The yoga options and plugins for CORS, CSRF prevention, security headers and persisted operations. */
export async function httpSecurity(
  config: HttpSecurityConfig,
): Promise<{ cors: CorsOption; plugins: Plugin[] }> {
  const plugins: Plugin[] = [
    useSecurityHeaders({ hsts: config.hsts, varyOnOrigin: config.corsOrigins.length > 0 }),
    // Before the CSRF check: these are refused whatever headers they carry (the API takes no uploads).
    useRefuseFormBodies(),
    useCSRFPrevention({ requestHeaders: config.csrfHeaders }),
  ];
  const persisted = config.persistedOperations;
  if (persisted)
    plugins.push(
      usePersistedOperationsFile({ mode: persisted.mode, operations: persisted.operations }) as Plugin,
    );
  return { cors: corsFor(config.corsOrigins), plugins };
}

export type WebSocketOperationCheck = (payload: {
  query?: string;
  extensions?: Record<string, unknown>;
}) => { query: string } | { error: string; code: string };

/**
 * The same rule for graphql-ws subscribe messages, which do not pass through yoga's HTTP
 * parameters (and so not through the plugin above): a persisted id becomes its text, an
 * unknown one is refused, and in `only` mode text without an id is refused. null without a
 * manifest (nothing to check).
 */
export function webSocketOperationCheck(config: HttpSecurityConfig): WebSocketOperationCheck | null {
  const persisted = config.persistedOperations;
  if (!persisted) return null;
  return (payload) => {
    const id = persistedOperationId(payload as Record<string, unknown>);
    if (payload.query) {
      if (persisted.mode === 'only')
        return { error: PERSISTED_QUERY_REQUIRED.message, code: PERSISTED_QUERY_REQUIRED.code };
      return { query: payload.query };
    }
    if (id === null)
      return persisted.mode === 'only'
        ? { error: PERSISTED_QUERY_REQUIRED.message, code: PERSISTED_QUERY_REQUIRED.code }
        : {
            error: 'Send a query, or a persisted operation id in extensions.persistedQuery.sha256Hash.',
            code: 'BAD_REQUEST',
          };
    const query = persisted.operations.get(id);
    return query === undefined
      ? { error: PERSISTED_QUERY_NOT_FOUND.message, code: PERSISTED_QUERY_NOT_FOUND.code }
      : { query };
  };
}
