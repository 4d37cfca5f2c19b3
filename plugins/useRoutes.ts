import type { Plugin } from 'graphql-yoga';

/** What a route's handler is given: the request, its parsed URL and yoga's Response class. */
export interface RouteRequest {
  request: Request;
  url: URL;
  Response: typeof globalThis.Response;
}

/** One plain HTTP endpoint beside GraphQL (`/metrics`, `/ready`, …): its handler answers the whole request. */
export interface Route {
  /** The method it answers ('GET'), or '*' for every method. */
  method: string;
  /** The exact path ('/metrics'). */
  path: string;
  handler: (request: RouteRequest) => Response | Promise<Response>;
}

export interface RoutesOptions {
  /** The route table (src/server/routes/route-table.ts). */
  routes: readonly Route[];
  /** The answer for a path of the table asked with a method none of its routes answers. */
  methodNotAllowed: (allowed: readonly string[], Response: typeof globalThis.Response) => Response;
}

/**
 * Serves a table of plain HTTP routes before anything GraphQL happens: a request to one of its
 * paths is answered by that route's handler and goes no further; every other request passes.
 */
export function useRoutes(options: RoutesOptions): Plugin {
  const byPath = new Map<string, Route[]>();
  for (const route of options.routes) byPath.set(route.path, [...(byPath.get(route.path) ?? []), route]);

  return {
    // Not async: every request passes here, and only a route's own requests need to wait.
    onRequest({ request, url, endResponse, fetchAPI }) {
      const routes = byPath.get(url.pathname);
      if (!routes) return;
      const route = routes.find((r) => r.method === '*' || r.method === request.method);
      if (!route) {
        endResponse(
          options.methodNotAllowed(
            routes.map((r) => r.method),
            fetchAPI.Response,
          ),
        );
        return;
      }
      return Promise.resolve(route.handler({ request, url, Response: fetchAPI.Response })).then(endResponse);
    },
  };
}
