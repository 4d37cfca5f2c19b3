import type { Route } from '../../../plugins/useRoutes.js';
import { type ConsoleOidcOptions, consoleOidcRoutes } from './console-oidc.js';
import { type MetricsRouteOptions, metricsRoute } from './metrics.js';
import { type ReadinessRouteOptions, readinessRoute } from './readiness.js';
import { type UsageExportRouteOptions, usageExportRoute } from './usage-export.js';

export { methodNotAllowed } from './route-errors.js';

export interface ServerRoutesOptions {
  readiness: ReadinessRouteOptions;
  usageExport: UsageExportRouteOptions;
  metrics: MetricsRouteOptions;
  consoleOidc: ConsoleOidcOptions;
}

/**
 * The server's plain HTTP routes beside `/graphql`, served by plugins/useRoutes.ts: `/ready`,
 * `/usage/export.csv`, `/metrics`, and the console's `/console/config` and `/console/oidc/token`. (`/health` is yoga's own liveness check.)
 */
export function serverRoutes(options: ServerRoutesOptions): Route[] {
  return [
    readinessRoute(options.readiness),
    usageExportRoute(options.usageExport),
    metricsRoute(options.metrics),
    ...consoleOidcRoutes(options.consoleOidc),
  ];
}
