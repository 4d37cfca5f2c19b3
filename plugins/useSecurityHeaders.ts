import { createHash } from 'node:crypto';
import type { Plugin } from 'graphql-yoga';

export interface UseSecurityHeadersOptions {
  /** Strict-Transport-Security: only when clients reach the server over TLS. */
  hsts: boolean;
  /** Add `Vary: Origin` (the CORS headers depend on the Origin when origins are listed). */
  varyOnOrigin: boolean;
}

/** For everything but HTML: nothing may be loaded, framed or submitted on behalf of a response. */
export const API_CSP = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";
const HSTS = 'max-age=31536000';
/** Responses that carry GraphQL results: never stored by a browser or a shared cache. */
const GRAPHQL_TYPES = [
  'application/json',
  'application/graphql-response+json',
  'text/event-stream',
  'multipart/mixed',
];

/** Inline <script> bodies as the browser sees them (scripts with a src have an empty body). */
function inlineScripts(html: string): string[] {
  const bodies: string[] = [];
  for (const m of html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script\s*>/gi)) {
    if (!/\bsrc\s*=/.test(m[1]!) && m[2]!.length > 0) bodies.push(m[2]!);
  }
  return bodies;
}

/** CSP sources for a page's inline scripts. */
export function scriptHashes(html: string): string[] {
  return inlineScripts(html).map(
    (body) => `'sha256-${createHash('sha256').update(body, 'utf8').digest('base64')}'`,
  );
}

/** A host as it may appear in a CSP source (no spaces, quotes or semicolons from a forged Host header). */
const SAFE_HOST = /^[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/i;

/**
 * The policy for an HTML page we serve (GraphiQL): its scripts are inline, so each is allowed
 * by its SHA-256 instead of 'unsafe-inline'; the Monaco editor runs its language workers from
 * blob: URLs, injects <style> elements and inlines its fonts and icons as data: URLs; the page
 * talks to this origin only, over HTTP and WebSocket.
 */
export function htmlPagePolicy(scriptHashes: string[], host: string | null): string {
  const sockets = host && SAFE_HOST.test(host) ? ` ws://${host} wss://${host}` : '';
  return [
    "default-src 'none'",
    `script-src ${scriptHashes.join(' ') || "'none'"}`,
    "style-src 'self' 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "font-src 'self' data:",
    `connect-src 'self'${sockets}`,
    'worker-src blob:',
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

/**
 * Security headers on every response, whichever plugin answered it (GraphQL, GraphiQL,
 * /health, /ready, /metrics, /usage/export.csv): no MIME sniffing, no referrer, no framing,
 * a CSP, no caching of GraphQL results, and HSTS when configured.
 */
export function useSecurityHeaders(options: UseSecurityHeadersOptions): Plugin {
  // The page is large (~9 MB) and the same for every visit: hash it once per distinct text.
  let lastPage: { html: string; hashes: string[] } | null = null;
  return {
    // Not async: only a GraphiQL page needs to wait (for its text); every other response is done
    // synchronously, without a promise per request.
    onResponse({ request, response, setResponse, fetchAPI }) {
      const headers = response.headers;
      headers.set('x-content-type-options', 'nosniff');
      headers.set('referrer-policy', 'no-referrer');
      headers.set('x-frame-options', 'DENY');
      headers.set('cross-origin-resource-policy', 'same-origin');
      if (options.hsts) headers.set('strict-transport-security', HSTS);
      if (options.varyOnOrigin && !/\borigin\b/i.test(headers.get('vary') ?? ''))
        headers.append('vary', 'Origin');
      const contentType = (headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase();
      if (GRAPHQL_TYPES.includes(contentType) || !headers.has('cache-control'))
        headers.set('cache-control', 'no-store');
      if (contentType !== 'text/html' || !response.body) {
        headers.set('content-security-policy', API_CSP);
        return;
      }
      // A page that brings its own policy (the console's: its scripts are files of this origin) keeps it.
      if (headers.has('content-security-policy')) return;
      // Reading the page consumes it: answer with the same text, status and headers.
      return response.text().then((html) => {
        if (lastPage?.html !== html) lastPage = { html, hashes: scriptHashes(html) };
        headers.set('content-security-policy', htmlPagePolicy(lastPage.hashes, request.headers.get('host')));
        setResponse(
          new fetchAPI.Response(html, { status: response.status, statusText: response.statusText, headers }),
        );
      });
    },
  };
}
