import type { Route } from '../../../plugins/useRoutes.js';
import { metricsRoute, type MetricsRouteOptions } from './metrics.js';
import { readinessRoute, type ReadinessRouteOptions } from './readiness.js';
import { usageExportRoute, type UsageExportRouteOptions } from './usage-export.js';

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
  return [readinessRoute(options.readiness), usageExportRoute(options.usageExport), metricsRoute(options.metrics)];
}
