import fs from 'node:fs';
import path from 'node:path';
import type { Plugin } from 'graphql-yoga';

export interface UseConsoleOptions {
  /** The built console (web/dist): index.html and assets/. */
  dir: string;
}

/** The console's own paths (client-side routes): each answers with its index.html. */
const PAGES = /^\/(?:jobs(?:\/[^/]+)?|submit|usage|quota-requests|audit|cluster|policies|break-glass)?$/;
const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.woff2': 'font/woff2',
};

/**
 * The console's policy: its scripts and styles come from this origin only (no inline script), it
 * talks to this origin only, over HTTP and WebSocket; nothing frames it.
 */
export function consolePolicy(host: string | null): string {
  const safe = host && /^[a-z0-9.-]+(:\d{1,5})?$|^\[[0-9a-f:.]+\](:\d{1,5})?$/i.test(host);
  const sockets = safe ? ` ws://${host} wss://${host}` : '';
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data: blob:",
    "font-src 'self'",
    `connect-src 'self'${sockets}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
    "form-action 'none'",
  ].join('; ');
}

/**
 * Serves the web console (web/) at `/` and its client-side routes, and its hashed assets under
 * `/assets/` (cached for good: a new build has new names). GraphiQL stays at /graphql. Without a
 * build the pages say how to make one (npm start builds it when missing).
 */
export function useConsole(options: UseConsoleOptions): Plugin {
  const assets = path.join(options.dir, 'assets');
  let index: string | null = null;
  const page = (): string | null => {
    if (index !== null) return index;
    try {
      index = fs.readFileSync(path.join(options.dir, 'index.html'), 'utf8');
    } catch {
      return null;
    }
    return index;
  };
  return {
    onRequest({ request, url, endResponse, fetchAPI }) {
      if (request.method !== 'GET' && request.method !== 'HEAD') return;
      if (PAGES.test(url.pathname)) {
        const html = page();
        endResponse(
          html === null
            ? new fetchAPI.Response(
                'The console is not built: run `npm run console:build` (npm start does it).',
                {
                  status: 503,
                  headers: { 'content-type': 'text/plain; charset=utf-8' },
                },
              )
            : new fetchAPI.Response(html, {
                status: 200,
                headers: {
                  'content-type': 'text/html; charset=utf-8',
                  'cache-control': 'no-cache',
                  'content-security-policy': consolePolicy(request.headers.get('host')),
                },
              }),
        );
        return;
      }
      if (!url.pathname.startsWith('/assets/')) return;
      const name = url.pathname.slice('/assets/'.length);
      const type = TYPES[path.extname(name)];
      // Only files of the build, by their plain names: no directories, no way out of assets/.
      if (!type || !/^[A-Za-z0-9._-]+$/.test(name)) {
        endResponse(new fetchAPI.Response('Not found', { status: 404 }));
        return;
      }
      return fs.promises.readFile(path.join(assets, name)).then(
        (body) =>
          endResponse(
            new fetchAPI.Response(body, {
              status: 200,
              headers: { 'content-type': type, 'cache-control': 'public, max-age=31536000, immutable' },
            }),
          ),
        () => endResponse(new fetchAPI.Response('Not found', { status: 404 })),
      );
    },
  };
}
