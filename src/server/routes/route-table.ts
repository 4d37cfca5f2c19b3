import type { Route } from '../../../plugins/useRoutes.js';
import { type MetricsRouteOptions, metricsRoute } from './metrics.js';
import { type ReadinessRouteOptions, readinessRoute } from './readiness.js';
import { type UsageExportRouteOptions, usageExportRoute } from './usage-export.js';

export { methodNotAllowed } from './route-errors.js';

export interface ServerRoutesOptions {
  readiness: ReadinessRouteOptions;
  usageExport: UsageExportRouteOptions;
  metrics: MetricsRouteOptions;
}

/**
 * The server's plain HTTP routes beside `/graphql`, served by plugins/useRoutes.ts: `/ready`,
 * `/usage/export.csv` and `/metrics`. (`/health` is yoga's own liveness check.)
 */
export function serverRoutes(options: ServerRoutesOptions): Route[] {
  return [
    readinessRoute(options.readiness),
    usageExportRoute(options.usageExport),
    metricsRoute(options.metrics),
  ];
}
