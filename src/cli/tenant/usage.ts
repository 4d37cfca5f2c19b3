// fairway usage: GPU-hours (and cost, for those who may see money) from the usage rollup.
import { COMMON_HELP, parse } from './args.js';
import { type CliContext, CliError, EXIT } from './context.js';
import { table } from './format.js';
import { resolveTenant } from './lookup.js';
import { type ResultOf, send, USAGE_DIMENSIONS, Usage, type UsageDimension } from './operations.js';

export const USAGE_HELP = `usage: fairway usage [--from DATE] [--to DATE] [--group-by DIM[,DIM…]] [--granularity G] [--tenant SLUG] [--json]

GPU-hours, CPU-hours, jobs and (tenant admins, auditors) cost of the tenant. Members and
viewers see their own jobs only, and no cost.

  --from DATE        start, YYYY-MM-DD or an ISO time (default: the 1st of this month, UTC)
  --to DATE          end, exclusive (default: now)
  --group-by LIST    ${USAGE_DIMENSIONS.join(', ')} (comma list, any case)
  --granularity G    HOUR, DAY or MONTH rows (default MONTH)
  --tenant SLUG      when you belong to several tenants (or FAIRWAY_TENANT)
  --json             the report as JSON
${COMMON_HELP}`;

const GRANULARITIES = ['HOUR', 'DAY', 'MONTH'] as const;

function date(value: string | undefined, flag: string, fallback: Date): string {
  if (value === undefined) return fallback.toISOString();
  const ms = Date.parse(/^\d{4}-\d{2}-\d{2}$/.test(value) ? `${value}T00:00:00Z` : value);
  if (Number.isNaN(ms))
    throw new CliError(`${flag} must be a date (YYYY-MM-DD) or an ISO time, got '${value}'`, EXIT.USAGE);
  return new Date(ms).toISOString();
}

type Row = ResultOf<typeof Usage>['usage']['rows'][number];

const COLUMN: Record<UsageDimension, [string, (r: Row) => string | null | undefined]> = {
  PROJECT: ['PROJECT', (r) => r.project?.slug],
  USER: ['USER', (r) => r.user],
  QUEUE: ['QUEUE', (r) => r.queue?.name],
  FLAVOR: ['FLAVOR', (r) => r.flavor],
  PRIORITY_CLASS: ['CLASS', (r) => r.priorityClass],
  TENANT: ['TENANT', (r) => r.tenant?.slug],
};

export async function runUsage(argv: string[], ctx: CliContext): Promise<number> {
  const { values } = parse(argv, {
    from: { type: 'string' },
    to: { type: 'string' },
    'group-by': { type: 'string' },
    granularity: { type: 'string' },
    tenant: { type: 'string' },
  });
  if (values.help) {
    ctx.out(USAGE_HELP);
    return EXIT.OK;
  }
  const now = new Date();
  const from = date(values.from, '--from', new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)));
  const to = date(values.to, '--to', now);
  if (from >= to) throw new CliError('--from must be before --to', EXIT.USAGE);
  const groupBy = (values['group-by'] ?? '')
    .split(',')
    .map((s) => s.trim().toUpperCase().replace('-', '_'))
    .filter(Boolean);
  const badDimension = groupBy.find((d) => !(USAGE_DIMENSIONS as readonly string[]).includes(d));
  if (badDimension)
    throw new CliError(
      `--group-by: '${badDimension}' is not one of ${USAGE_DIMENSIONS.join(', ')}`,
      EXIT.USAGE,
    );
  const granularity = (values.granularity ?? 'MONTH').toUpperCase();
  if (!(GRANULARITIES as readonly string[]).includes(granularity))
    throw new CliError(`--granularity must be one of ${GRANULARITIES.join(', ')}`, EXIT.USAGE);
  const tenant = await resolveTenant(ctx, values.tenant);
  const { usage } = await send(ctx, Usage, {
    tenantId: tenant.id,
    from,
    to,
    groupBy: groupBy as UsageDimension[],
    granularity: granularity as (typeof GRANULARITIES)[number],
  });
  if (ctx.json) {
    ctx.out(JSON.stringify(usage));
    return EXIT.OK;
  }
  const withCost = usage.total.cost != null || usage.rows.some((r) => r.cost != null);
  const dims = (usage.groupBy as UsageDimension[]).map((d) => COLUMN[d]);
  const headers = [
    'PERIOD',
    ...dims.map(([h]) => h),
    'GPU-HOURS',
    'CPU-HOURS',
    'JOBS',
    ...(withCost ? [`COST (${usage.currency})`] : []),
  ];
  const cells = (
    period: string,
    r: Pick<Row, 'gpuHours' | 'cpuHours' | 'jobs' | 'cost'>,
    dimCells: string[],
  ) => [
    period,
    ...dimCells,
    r.gpuHours.toFixed(2),
    r.cpuHours.toFixed(1),
    String(r.jobs),
    ...(withCost ? [r.cost == null ? '-' : r.cost.toFixed(2)] : []),
  ];
  const period = (iso: string | null | undefined) =>
    iso
      ? granularity === 'HOUR'
        ? `${iso.slice(0, 13)}h`
        : granularity === 'DAY'
          ? iso.slice(0, 10)
          : iso.slice(0, 7)
      : '';
  const rows = usage.rows.map((r) =>
    cells(
      period(r.periodStart),
      r,
      dims.map(([, pick]) => pick(r) ?? '-'),
    ),
  );
  rows.push(
    cells(
      'total',
      usage.total,
      dims.map(() => ''),
    ),
  );
  const firstNumber = 1 + dims.length;
  ctx.out(`${tenant.slug}: ${usage.from.slice(0, 16)}Z … ${usage.to.slice(0, 16)}Z`);
  ctx.out(table(headers, rows, new Set(headers.map((_, i) => i).filter((i) => i >= firstNumber))));
  return EXIT.OK;
}
