import type { Plugin } from 'graphql-yoga';

export interface ReadinessOptions {
  endpoint?: string;
  /** Resolves when every dependency answers; rejects (or returns a reason) when not. */
  check: () => Promise<void>;
}

/** `/ready`: 200 when the database answers, 503 with the reason otherwise. (`/health` is yoga's liveness check.) */
export function useReadiness(options: ReadinessOptions): Plugin {
  const endpoint = options.endpoint ?? '/ready';
  return {
    async onRequest({ url, endResponse, fetchAPI }) {
      if (url.pathname !== endpoint) return;
      try {
        await options.check();
        endResponse(new fetchAPI.Response(JSON.stringify({ status: 'ready' }), { status: 200, headers: { 'content-type': 'application/json' } }));
      } catch (error) {
        const reason = error instanceof Error ? error.message : String(error);
        endResponse(new fetchAPI.Response(JSON.stringify({ status: 'not-ready', reason }), { status: 503, headers: { 'content-type': 'application/json' } }));
      }
    },
  };
}
