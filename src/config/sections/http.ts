import { z } from 'zod';
import { flag, section } from '../section.js';

/** yoga's own name, so its documentation and clients configured for it work unchanged. */
export const DEFAULT_CSRF_HEADER = 'x-graphql-yoga-csrf';

/** `allow`: ids and query text; `only`: ids only (plugins/usePersistedOperationsFile.ts). */
export type PersistedOperationsMode = 'allow' | 'only';

export interface HttpConfig {
  /** Exact origins (scheme://host[:port]) a browser page may call the API from; empty: none. */
  corsOrigins: string[];
  /** Headers (lower case) that mark a GET, form or text/plain request as not a cross-site forgery. */
  csrfHeaders: string[];
  /** Send Strict-Transport-Security (only behind TLS). */
  hsts: boolean;
  /**
   * A manifest of persisted operations, as configured: src/server/http-security/http-security.ts
   * reads and checks the file when the server starts. null: none, every operation is sent as text.
   */
  persistedOperations: { file: string; mode: PersistedOperationsMode } | null;
}

/**
 * Headers a cross-site page can make a browser send without a preflight (CORS-safelisted), or
 * that a proxy in front may add by itself from a cookie (Authorization, Cookie): they prove
 * nothing about who built the request.
 */
const USELESS_CSRF_HEADERS = new Set([
  'accept',
  'accept-language',
  'content-language',
  'content-type',
  'range',
  'authorization',
  'cookie',
  'origin',
  'referer',
]);

const commaList = (value: string | undefined): string[] =>
  (value ?? '')
    .split(',')
    .map((part) => part.trim())
    .filter(Boolean);

const origin = z.string().superRefine((value, ctx) => {
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    url = null;
  }
  if (
    !url ||
    !/^https?:$/.test(url.protocol) ||
    url.origin !== value ||
    !/^([a-z0-9-]+\.)*[a-z0-9-]+$|^\[[0-9a-f:.]+\]$/.test(url.hostname)
  ) {
    ctx.addIssue({
      code: 'custom',
      message: `"${value}" is not an exact origin such as https://portal.example.com (scheme and host, optional port, lower case, no path or trailing slash; no wildcards)`,
    });
  }
});

const csrfHeader = z.string().superRefine((value, ctx) => {
  if (!/^[a-z0-9][a-z0-9-]*$/.test(value))
    ctx.addIssue({ code: 'custom', message: `"${value}" is not a header name (letters, digits, dashes)` });
  else if (USELESS_CSRF_HEADERS.has(value))
    ctx.addIssue({
      code: 'custom',
      message: `"${value}" cannot prove a request is not cross-site (a browser or a proxy sends it without a preflight)`,
    });
});

export const httpSection = section({
  key: 'http',
  title: 'HTTP: CORS, CSRF, security headers, persisted operations',
  description:
    'Browsers may call the API cross-origin only from the listed origins; requests a cross-site page could send without a preflight (GET, `text/plain`, no Content-Type) run only with a CSRF header; form-encoded and multipart POSTs are refused 415. The same defaults in every environment.',
  variables: {
    FAIRWAY_CORS_ORIGINS: z
      .string()
      .optional()
      .transform(commaList)
      .pipe(z.array(origin))
      .describe(
        'Comma list of exact origins (`https://portal.example.com`) whose pages may call the API from a browser; others get no CORS headers. Credentials (cookies) are never allowed.',
      )
      .meta({ typeText: 'comma list of origins', defaultText: 'none' }),
    FAIRWAY_CSRF_HEADERS: z
      .string()
      .optional()
      .transform((v) => commaList(v).map((h) => h.toLowerCase()))
      .pipe(z.array(csrfHeader))
      .describe(
        'Headers, any one of which lets a GET, `text/plain` or Content-Type-less request run (a cross-site page cannot add them without a preflight).',
      )
      .meta({ typeText: 'comma list of header names', defaultText: `\`${DEFAULT_CSRF_HEADER}\`` }),
    FAIRWAY_HSTS: flag(
      '`true` sends `Strict-Transport-Security: max-age=31536000` (only behind TLS).',
      false,
    ),
    FAIRWAY_PERSISTED_OPERATIONS: z
      .string()
      .min(1)
      .optional()
      .describe(
        'A manifest of persisted operations: GraphQL Codegen\'s `persisted-documents.json` (`{"<hash>": "<query>"}`) or Apollo\'s persisted query manifest; read and parsed when the server starts (see `examples/persisted-operations.json`).',
      )
      .meta({ typeText: 'file path' }),
    FAIRWAY_PERSISTED_OPERATIONS_MODE: z
      .enum(['allow', 'only'])
      .optional()
      .describe(
        '`allow`: ids and query text are both accepted; `only`: only ids, over HTTP and WebSocket (text gets `PERSISTED_QUERY_REQUIRED`). Needs `FAIRWAY_PERSISTED_OPERATIONS`.',
      )
      .meta({ defaultText: '`allow`' }),
  },
  resolve: (v, ctx): HttpConfig => {
    if (v.FAIRWAY_PERSISTED_OPERATIONS_MODE && !v.FAIRWAY_PERSISTED_OPERATIONS) {
      ctx.problem(
        'FAIRWAY_PERSISTED_OPERATIONS_MODE',
        'set FAIRWAY_PERSISTED_OPERATIONS to the manifest file too',
      );
    }
    return {
      corsOrigins: [...new Set(v.FAIRWAY_CORS_ORIGINS)],
      csrfHeaders: v.FAIRWAY_CSRF_HEADERS.length ? v.FAIRWAY_CSRF_HEADERS : [DEFAULT_CSRF_HEADER],
      hsts: v.FAIRWAY_HSTS,
      persistedOperations: v.FAIRWAY_PERSISTED_OPERATIONS
        ? { file: v.FAIRWAY_PERSISTED_OPERATIONS, mode: v.FAIRWAY_PERSISTED_OPERATIONS_MODE ?? 'allow' }
        : null,
    };
  },
});
