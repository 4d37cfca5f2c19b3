// fairway quota recommendations | requests | request ID | file | withdraw ID | approve ID | reject ID:
// quota requests of tenant admins and the platform admins' decisions on them.
import { COMMON_HELP, need, parse, positiveInt } from './args.js';
import { type CliContext, CliError, EXIT } from './context.js';
import { age, gpus, table } from './format.js';
import { requireToken, resolveTenant } from './lookup.js';
import { type ResultOf, send } from './operations.js';
import {
  ApproveQuotaRequest,
  amount,
  CancelQuotaRequest,
  GetQuotaRequest,
  isoFlag,
  nominalNow,
  PAGE,
  printOne,
  type QuotaRequest,
  QuotaRequests,
  QuotaTargets,
  Recommendations,
  RejectQuotaRequest,
  RequestQuotaChange,
  requestId,
  STATUS_WORDS,
  STATUSES,
  type Status,
  summary,
  time,
} from './quota-operations.js';

export const QUOTA_HELP = `usage: fairway quota recommendations [--days N] [--json]
       fairway quota requests [--status S] [--tenant SLUG] [--limit N] [--json]
       fairway quota request ID [--json]
       fairway quota file --queue NAME --flavor NAME --amount N --reason TEXT
                          [--starts TIME] [--expires TIME] [--tenant SLUG] [--json]
       fairway quota withdraw ID [--json]
       fairway quota approve ID [--comment TEXT] [--json]
       fairway quota reject ID --comment TEXT [--json]

Requests to change a queue's nominal quota: tenant admins file and withdraw them, platform admins
(not the requester) approve or reject them.

  recommendations    queues that under-use their GPU nominal or borrow nearly all the time, from
                     the last --days N days of usage (1 to 90, default 14), with the figures
                     (tenant admins and auditors: their tenant's; platform admins: every queue)
  requests           the requests you may see, the newest N (--limit, default 50) oldest first;
                     --status PENDING, APPROVED, ACTIVE, EXPIRED, REJECTED or CANCELLED;
                     without --tenant (or FAIRWAY_TENANT), every tenant you may see
  request ID         one request: what was asked and why, its decision, when it applied or ended
  file               (tenant admins) ask for the queue's nominal on the flavor to become --amount
                     (GPUs, or MIG slices / shares on such flavors), for --reason; from --starts
                     once approved (default: on approval), until --expires (default: for good);
                     TIME is YYYY-MM-DD or an ISO time
  withdraw ID        (tenant admins) withdraw a request that has not applied yet
  approve ID         (platform admins) apply it now (or at its start); --comment is optional
  reject ID          (platform admins) refuse it; --comment says why and is required

ID is the request's ID, as file and requests print it.
  --tenant SLUG      when you belong to several tenants (or FAIRWAY_TENANT)
  --json             the recommendations, requests or request as JSON
${COMMON_HELP}`;

const SUBCOMMANDS = [
  'recommendations',
  'requests',
  'request',
  'file',
  'withdraw',
  'approve',
  'reject',
] as const;
type Sub = (typeof SUBCOMMANDS)[number];

/** The flags each subcommand takes (besides --json, --server, --token, --help). */
const FLAGS: Record<Sub, readonly string[]> = {
  recommendations: ['days'],
  requests: ['status', 'tenant', 'limit'],
  request: [],
  file: ['queue', 'flavor', 'amount', 'reason', 'starts', 'expires', 'tenant'],
  withdraw: [],
  approve: ['comment'],
  reject: ['comment'],
};

const KIND_WORDS: Record<string, string> = {
  CONSTANT_BORROWER: 'borrows nearly all the time',
  UNDER_USED: 'uses much less than its nominal',
};
const SUGGESTION_WORDS: Record<string, string> = {
  DEDICATED_POOL: 'more nominal or a dedicated pool',
  SHARED_POOL: 'less nominal, a shared pool',
};

async function recommendations(ctx: CliContext, days: number): Promise<number> {
  requireToken(ctx);
  const { quotaRecommendations: list } = await send(ctx, Recommendations, { days });
  if (ctx.json) {
    ctx.out(JSON.stringify(list));
    return EXIT.OK;
  }
  if (list.length === 0) {
    ctx.out(`no recommendation from the last ${days} days: every queue's use fits its nominal quota`);
    return EXIT.OK;
  }
  const tenants = new Set(list.map((r) => r.queue.tenant.slug)).size > 1;
  const rows = list.map((r) => [
    ...(tenants ? [r.queue.tenant.slug] : []),
    r.queue.name,
    KIND_WORDS[r.kind] ?? r.kind,
    SUGGESTION_WORDS[r.suggestion] ?? r.suggestion,
    gpus(r.currentNominalGpus),
    gpus(r.suggestedNominalGpus),
    r.evidence,
  ]);
  const headers = [
    ...(tenants ? ['TENANT'] : []),
    'QUEUE',
    'FINDING',
    'SUGGESTION',
    'GPUS NOW',
    'SUGGESTED',
    'EVIDENCE',
  ];
  const off = tenants ? 1 : 0;
  ctx.out(`from the last ${days} days of usage (GPUs: MIG and time-slice flavors in device equivalents)`);
  ctx.out(table(headers, rows, new Set([3 + off, 4 + off])));
  return EXIT.OK;
}

async function requests(
  ctx: CliContext,
  opts: { status?: string; tenant?: string; limit: number },
): Promise<number> {
  let status: Status | undefined;
  if (opts.status !== undefined) {
    const s = opts.status.trim().toUpperCase();
    if (!(STATUSES as readonly string[]).includes(s))
      throw new CliError(`--status: '${opts.status}' is not one of ${STATUSES.join(', ')}`, EXIT.USAGE);
    status = s as Status;
  }
  requireToken(ctx);
  const slug = opts.tenant ?? ctx.env.FAIRWAY_TENANT;
  const tenant = slug ? await resolveTenant(ctx, slug) : undefined;
  // Newest first while reading back; printed oldest first, as the graph lists them.
  const list: QuotaRequest[] = [];
  let before: string | null = null;
  for (;;) {
    const { quotaRequests: page }: ResultOf<typeof QuotaRequests> = await send(ctx, QuotaRequests, {
      ...(tenant ? { tenantId: tenant.id } : {}),
      ...(status ? { status } : {}),
      last: Math.min(PAGE, opts.limit - list.length),
      before,
    });
    list.push(...page.edges.map((e) => e.node).reverse());
    if (list.length >= opts.limit || !page.pageInfo.hasPreviousPage || !page.pageInfo.startCursor) break;
    before = page.pageInfo.startCursor;
  }
  list.reverse();
  if (ctx.json) {
    ctx.out(JSON.stringify(list));
    return EXIT.OK;
  }
  if (list.length === 0) {
    ctx.out(
      `no quota requests${tenant ? ` in ${tenant.slug}` : ''}${status ? ` with status ${status}` : ''}`,
    );
    return EXIT.OK;
  }
  const tenants = new Set(list.map((r) => r.tenant.slug)).size > 1;
  const now = Date.now();
  const rows = list.map((r) => [
    r.id,
    r.status,
    ...(tenants ? [r.tenant.slug] : []),
    r.queue.name,
    r.flavor,
    amount(r.nominal, r.resource),
    r.requestedByName ?? '-',
    age(r.createdAt, now),
  ]);
  const headers = ['ID', 'STATUS', ...(tenants ? ['TENANT'] : []), 'QUEUE', 'FLAVOR', 'NOMINAL', 'BY', 'AGE'];
  ctx.out(table(headers, rows, new Set([headers.length - 3, headers.length - 1])));
  return EXIT.OK;
}

async function show(ctx: CliContext, id: string): Promise<number> {
  requireToken(ctx);
  const { quotaRequest: r } = await send(ctx, GetQuotaRequest, { id });
  if (ctx.json) {
    ctx.out(JSON.stringify(r));
    return EXIT.OK;
  }
  const lines: [string, string][] = [
    ['status', `${r.status} (${STATUS_WORDS[r.status] ?? r.status})`],
    ['tenant', r.tenant.slug],
    [
      'queue',
      `${r.queue.name}, ${r.flavor} ${r.resource.toLowerCase()} nominal now ${amount(nominalNow(r), r.resource)}`,
    ],
    [
      'asked',
      `${amount(r.nominal, r.resource)}${r.previousNominal != null ? ` (it was ${amount(r.previousNominal, r.resource)} when it applied)` : ''}`,
    ],
    ['starts', r.startsAt ? time(r.startsAt) : 'on approval'],
    ['expires', r.expiresAt ? time(r.expiresAt) : 'never (for good)'],
    ['requested', `${time(r.createdAt)} by ${r.requestedByName ?? '-'}`],
    ['reason', r.justification],
  ];
  if (r.decidedAt)
    lines.push([
      r.status === 'REJECTED' ? 'rejected' : 'approved',
      `${time(r.decidedAt)} by ${r.decidedByName ?? '-'}${r.decisionNote ? `: ${r.decisionNote}` : ''}`,
    ]);
  if (r.appliedAt) lines.push(['applied', time(r.appliedAt)]);
  if (r.endedAt) lines.push([r.status === 'EXPIRED' ? 'expired' : 'withdrawn', time(r.endedAt)]);
  ctx.out(`request ${r.id}`);
  const width = Math.max(...lines.map(([k]) => k.length));
  for (const [k, v] of lines) ctx.out(`  ${k.padEnd(width)}  ${v}`);
  return EXIT.OK;
}

async function file(
  ctx: CliContext,
  v: {
    queue?: string | undefined;
    flavor?: string | undefined;
    amount?: string | undefined;
    reason?: string | undefined;
    starts?: string | undefined;
    expires?: string | undefined;
    tenant?: string | undefined;
  },
): Promise<number> {
  const queueName = need(v.queue, '--queue NAME');
  const flavor = need(v.flavor, '--flavor NAME');
  const raw = need(v.amount, '--amount N');
  const nominal = Number(raw);
  if (!/^\d+(\.\d+)?$/.test(raw) || !Number.isFinite(nominal))
    throw new CliError(`--amount must be a number, 0 or more, got '${raw}'`, EXIT.USAGE);
  const justification = need(v.reason?.trim(), '--reason TEXT');
  const startsAt = isoFlag(v.starts, '--starts');
  const expiresAt = isoFlag(v.expires, '--expires');
  if (startsAt && expiresAt && expiresAt <= startsAt)
    throw new CliError('--expires must be after --starts', EXIT.USAGE);
  const tenant = await resolveTenant(ctx, v.tenant);
  const targets = await send(ctx, QuotaTargets, { slug: tenant.slug });
  const queue = targets.tenant.queues.find((q) => q.name === queueName);
  if (!queue)
    throw new CliError(
      `no queue '${queueName}' in ${tenant.slug} (${targets.tenant.queues.map((q) => q.name).join(', ') || 'it has none'})`,
      EXIT.NOT_FOUND,
    );
  const known = new Set([...queue.quotas.map((q) => q.flavor), ...targets.flavors.map((f) => f.name)]);
  if (!known.has(flavor))
    throw new CliError(`no flavor '${flavor}' (${[...known].join(', ')})`, EXIT.NOT_FOUND);
  const { requestQuotaChange: r } = await send(ctx, RequestQuotaChange, {
    input: {
      queueId: queue.id,
      flavor,
      nominal,
      justification,
      ...(startsAt ? { startsAt } : {}),
      ...(expiresAt ? { expiresAt } : {}),
    },
  });
  if (ctx.json) ctx.out(JSON.stringify(r));
  else ctx.out(`${summary(r)}; the queue's nominal is ${amount(nominalNow(r), r.resource)} until it applies`);
  return EXIT.OK;
}

export async function runQuota(argv: string[], ctx: CliContext): Promise<number> {
  const { values, positionals } = parse(
    argv,
    {
      days: { type: 'string' },
      status: { type: 'string' },
      tenant: { type: 'string' },
      limit: { type: 'string' },
      queue: { type: 'string' },
      flavor: { type: 'string' },
      amount: { type: 'string' },
      reason: { type: 'string' },
      starts: { type: 'string' },
      expires: { type: 'string' },
      comment: { type: 'string' },
    },
    2,
  );
  if (values.help) {
    ctx.out(QUOTA_HELP);
    return EXIT.OK;
  }
  const [sub, id] = positionals;
  if (sub === undefined)
    throw new CliError(`a subcommand is required: ${SUBCOMMANDS.join(', ')}`, EXIT.USAGE);
  if (!(SUBCOMMANDS as readonly string[]).includes(sub))
    throw new CliError(`unknown subcommand '${sub}' (one of ${SUBCOMMANDS.join(', ')})`, EXIT.USAGE);
  const command = sub as Sub;
  const given = Object.entries(values).filter(
    ([k, v]) => v !== undefined && !['json', 'server', 'token', 'help'].includes(k),
  );
  const stray = given.find(([k]) => !FLAGS[command].includes(k));
  if (stray) throw new CliError(`--${stray[0]} does not go with 'quota ${command}'`, EXIT.USAGE);
  const takesId = command !== 'recommendations' && command !== 'requests' && command !== 'file';
  if (!takesId && id !== undefined) throw new CliError(`unexpected argument '${id}'`, EXIT.USAGE);

  switch (command) {
    case 'recommendations': {
      const days = positiveInt(values.days, '--days', 14);
      if (days > 90) throw new CliError(`--days must be 1 to 90, got ${days}`, EXIT.USAGE);
      return recommendations(ctx, days);
    }
    case 'requests':
      return requests(ctx, {
        ...(values.status !== undefined ? { status: values.status } : {}),
        ...(values.tenant !== undefined ? { tenant: values.tenant } : {}),
        limit: positiveInt(values.limit, '--limit', 50),
      });
    case 'request':
      return show(ctx, requestId(id));
    case 'file':
      return file(ctx, values);
    case 'withdraw': {
      const target = requestId(id);
      requireToken(ctx);
      printOne(ctx, (await send(ctx, CancelQuotaRequest, { id: target })).cancelQuotaRequest);
      return EXIT.OK;
    }
    case 'approve': {
      const target = requestId(id);
      const note = values.comment?.trim() || null;
      requireToken(ctx);
      const r = (await send(ctx, ApproveQuotaRequest, { id: target, note })).approveQuotaRequest;
      printOne(ctx, r);
      if (!ctx.json && r.status === 'ACTIVE')
        ctx.out(
          `${r.queue.name}'s ${r.flavor} nominal: ${amount(r.previousNominal, r.resource)} → ${amount(nominalNow(r), r.resource)}`,
        );
      return EXIT.OK;
    }
    case 'reject': {
      const target = requestId(id);
      const note = values.comment?.trim();
      if (!note) throw new CliError('--comment TEXT is required: a rejection says why', EXIT.USAGE);
      requireToken(ctx);
      printOne(ctx, (await send(ctx, RejectQuotaRequest, { id: target, note })).rejectQuotaRequest);
      return EXIT.OK;
    }
  }
}
