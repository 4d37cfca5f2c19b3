import { randomUUID } from 'node:crypto';
import { stringify } from 'csv-stringify/sync';
import type { Route } from '../../../plugins/useRoutes.js';
import { decodeId } from '../../../schema/common.js';
import type { IdentityResolver, Principal } from '../../auth/index.js';
import type { ServiceContext } from '../../services/context.js';
import {
  currencyOf,
  monthRange,
  readUsage,
  type UsageDimension,
  type UsageRow,
} from '../../services/metering/index.js';
import { memberName } from '../../services/tenancy/index.js';
import { type ErrorCode, FairwayError } from '../../shared/index.js';
import { jsonRouteError } from './route-errors.js';

export interface UsageExportRouteOptions {
  /** The same credential check as GraphQL (useFairwayAuth): API tokens and OIDC JWTs. */
  identity: Pick<IdentityResolver, 'resolveAuthorization'>;
  /** The caller's service context (src/server/context/service-context.ts, `forRoute`). */
  createContext: (principal: Principal, request: { requestId: string }) => ServiceContext;
  /** Default '/usage/export.csv'. */
  path?: string;
  /** Unexpected errors (server log only; the caller gets a fixed message). */
  logError?: (error: unknown) => void;
}

/** Every dimension: the showback/chargeback grain. */
const GROUP_BY: UsageDimension[] = ['TENANT', 'PROJECT', 'QUEUE', 'USER', 'PRIORITY_CLASS', 'FLAVOR'];
const HEADER = [
  'month',
  'tenant',
  'project',
  'queue',
  'user',
  'priority_class',
  'flavor',
  'gpu_hours',
  'cost',
  'currency',
  'efficiency',
  'jobs',
  'cpu_hours',
  'memory_gib_hours',
];
const STATUS: Record<ErrorCode, number> = {
  BAD_USER_INPUT: 400,
  UNAUTHENTICATED: 401,
  FORBIDDEN: 403,
  NOT_FOUND: 404,
  CONFLICT: 409,
  RATE_LIMITED: 429,
};

/**
 * `GET /usage/export.csv?month=YYYY-MM[&tenantId=<global id>]`: the month's usage of one tenant
 * (or, without tenantId, platform-wide for platform admins), one line per tenant × project ×
 * queue × person × priority class × flavor and a final TOTAL line. It is the same readUsage
 * call as the graph's `usage` (MONTH granularity), so its totals are the graph's. Errors are
 * JSON `{ error: { code, message } }`; another tenant's id answers exactly as an unknown one.
 */
export function usageExportRoute(options: UsageExportRouteOptions): Route {
  return {
    method: 'GET',
    path: options.path ?? '/usage/export.csv',
    async handler({ request, url, Response }) {
      try {
        const principal = await options.identity.resolveAuthorization(request.headers.get('authorization'));
        if (!principal)
          throw new FairwayError(
            'UNAUTHENTICATED',
            'Sign in first: send "Authorization: Bearer <API token or OIDC JWT>".',
          );
        const ctx = options.createContext(principal, {
          requestId: request.headers.get('x-request-id') ?? randomUUID(),
        });
        const month = url.searchParams.get('month') ?? '';
        const tenantParam = url.searchParams.get('tenantId');
        const tenantId = tenantParam ? decodeId(tenantParam, 'Tenant') : null;
        const range = monthRange(month);
        const report = await readUsage(ctx, { tenantId, groupBy: GROUP_BY, granularity: 'MONTH', ...range });
        const currency = currencyOf(ctx);
        const lines: unknown[][] = [HEADER];
        for (const row of report.rows)
          lines.push([month, ...(await names(ctx, row)), ...figures(row, currency)]);
        lines.push(['TOTAL', '', '', '', '', '', '', ...figures(report.total, currency)]);
        const who = tenantId ? ((await ctx.loaders.tenant.load(tenantId))?.slug ?? 'tenant') : 'platform';
        return new Response(stringify(lines, { cast: { string: inertCell } }), {
          status: 200,
          headers: {
            'content-type': 'text/csv; charset=utf-8',
            'content-disposition': `attachment; filename="usage-${who}-${month}.csv"`,
            'cache-control': 'no-store',
          },
        });
      } catch (error) {
        if (error instanceof FairwayError)
          return jsonRouteError(Response, STATUS[error.code], error.code, error.message);
        options.logError?.(error);
        return jsonRouteError(Response, 500, 'INTERNAL_SERVER_ERROR', 'Unexpected error.');
      }
    },
  };
}

/**
 * Text a spreadsheet would run as a formula (a leading `=`, `+`, `-`, `@`, tab or carriage return, as
 * OWASP's CSV-injection guidance lists) is given a leading `'`, so a person's or project's name stays
 * text. Numbers are numbers, never touched.
 */
export function inertCell(value: string): string {
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}

/** Numbers unrounded: the CSV adds up to exactly what the graph says. Cost empty when money is hidden. */
function figures(row: UsageRow, currency: string): unknown[] {
  return [
    row.gpuHours,
    row.cost ?? '',
    currency,
    row.efficiency ?? '',
    row.jobs,
    row.cpuHours,
    row.memoryGibHours,
  ];
}

/** Slugs and names as the row's tenant knows them (the loaders read through the caller's tenant filter). */
async function names(ctx: ServiceContext, row: UsageRow): Promise<string[]> {
  const [tenant, project, queue, membership] = await Promise.all([
    row.tenantId ? ctx.loaders.tenant.load(row.tenantId) : null,
    row.projectId ? ctx.loaders.project.load(row.projectId) : null,
    row.queueId ? ctx.loaders.queue.load(row.queueId) : null,
    row.userId && row.tenantId ? ctx.loaders.membership.load(`${row.tenantId}:${row.userId}`) : null,
  ]);
  return [
    tenant?.slug ?? '',
    project?.slug ?? '',
    queue?.name ?? '',
    membership ? memberName(membership) : '',
    row.priorityClass ?? '',
    row.flavor ?? '',
  ];
}
