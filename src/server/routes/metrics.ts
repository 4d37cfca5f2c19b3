import { createHash, timingSafeEqual } from 'node:crypto';
import type { Route } from '../../../plugins/useRoutes.js';
import type { IdentityResolver } from '../../auth/index.js';
import { FairwayError } from '../../shared/index.js';
import type { FairwayMetrics } from '../metrics/index.js';
import { jsonRouteError } from './route-errors.js';

export interface MetricsRouteOptions {
  metrics: Pick<FairwayMetrics, 'registry'>;
  /** The same credential check as GraphQL (useFairwayAuth): API tokens and OIDC JWTs. */
  identity: Pick<IdentityResolver, 'resolveAuthorization'>;
  /** FAIRWAY_METRICS_TOKEN: a shared secret a Prometheus server sends as its bearer token. */
  token?: string;
  /** Default '/metrics'. */
  path?: string;
  /** Unexpected errors (server log only; the caller gets a fixed message). */
  logError?: (error: unknown) => void;
}

export type ScrapeRefusal = { status: 401 | 403; code: 'UNAUTHENTICATED' | 'FORBIDDEN'; message: string };

/**
 * Who may scrape: the metrics name every queue (tenant-owned data), so never anonymous. The
 * configured metrics token, compared in constant time, or a platform admin's own credential
 * (API token or JWT); a tenant's credential is refused. Returns null when allowed.
 */
export async function authorizeScrape(
  header: string | null,
  options: Pick<MetricsRouteOptions, 'identity' | 'token'>,
): Promise<ScrapeRefusal | null> {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header?.trim() ?? '')?.[1];
  if (bearer && options.token && sameSecret(bearer, options.token)) return null;
  let principal;
  try {
    principal = await options.identity.resolveAuthorization(header);
  } catch (error) {
    if (error instanceof FairwayError && error.code === 'UNAUTHENTICATED')
      return { status: 401, code: 'UNAUTHENTICATED', message: error.message };
    throw error;
  }
  if (!principal)
    return {
      status: 401,
      code: 'UNAUTHENTICATED',
      message: 'Send "Authorization: Bearer <metrics token or a platform admin\'s credential>".',
    };
  if (!principal.isPlatformAdmin)
    return {
      status: 403,
      code: 'FORBIDDEN',
      message: 'Only platform admins (or the metrics token) may read metrics.',
    };
  return null;
}

/** Constant time whatever the lengths: both sides are hashed to 32 bytes first. */
function sameSecret(given: string, expected: string): boolean {
  const digest = (value: string) => createHash('sha256').update(value).digest();
  return timingSafeEqual(digest(given), digest(expected));
}

/** `GET /metrics`: this app's registry in the Prometheus text format (the instruments: src/server/metrics/registry.ts). */
export function metricsRoute(options: MetricsRouteOptions): Route {
  const { metrics } = options;
  return {
    method: 'GET',
    path: options.path ?? '/metrics',
    async handler({ request, Response }) {
      try {
        const refusal = await authorizeScrape(request.headers.get('authorization'), options);
        if (refusal) return jsonRouteError(Response, refusal.status, refusal.code, refusal.message);
        const body = await metrics.registry.metrics();
        return new Response(body, {
          status: 200,
          headers: { 'content-type': metrics.registry.contentType, 'cache-control': 'no-store' },
        });
      } catch (error) {
        options.logError?.(error);
        return jsonRouteError(Response, 500, 'INTERNAL_SERVER_ERROR', 'Unexpected error.');
      }
    },
  };
}
