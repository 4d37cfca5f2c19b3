// fairway ls: the tenant's jobs, newest last, as a table or JSON.
import { COMMON_HELP, parse, positiveInt } from './args.js';
import { type CliContext, CliError, EXIT } from './context.js';
import { age, gpus, table } from './format.js';
import { resolveTenant } from './lookup.js';
import { JOB_STATES, type JobState, ListJobs, send, Targets, type VariablesOf } from './operations.js';

export const LS_HELP = `usage: fairway ls [--state S[,S…]] [--queue NAME] [--limit N] [--tenant SLUG] [--json]

Lists the tenant's jobs you may see, the newest N (default 20), oldest of them first.

  --state LIST       ${JOB_STATES.join(', ')} (comma list, any case)
  --queue NAME       one queue's jobs
  --limit N          at most N jobs (default 20)
  --tenant SLUG      when you belong to several tenants (or FAIRWAY_TENANT)
  --json             a JSON array of jobs
${COMMON_HELP}`;

export async function runLs(argv: string[], ctx: CliContext): Promise<number> {
  const { values } = parse(argv, {
    state: { type: 'string' },
    queue: { type: 'string' },
    limit: { type: 'string' },
    tenant: { type: 'string' },
  });
  if (values.help) {
    ctx.out(LS_HELP);
    return EXIT.OK;
  }
  const limit = positiveInt(values.limit, '--limit', 20);
  const filter: NonNullable<VariablesOf<typeof ListJobs>['filter']> = {};
  if (values.state !== undefined) {
    const states = values.state
      .split(',')
      .map((s) => s.trim().toUpperCase())
      .filter(Boolean);
    const bad = states.find((s) => !(JOB_STATES as readonly string[]).includes(s));
    if (bad !== undefined || states.length === 0)
      throw new CliError(
        `--state: '${bad ?? values.state}' is not one of ${JOB_STATES.join(', ')}`,
        EXIT.USAGE,
      );
    filter.states = states as JobState[];
  }
  const tenant = await resolveTenant(ctx, values.tenant);
  if (values.queue !== undefined) {
    const queue = (await send(ctx, Targets, {})).queues.find(
      (q) => q.name === values.queue && q.tenant.id === tenant.id,
    );
    if (!queue) throw new CliError(`no queue '${values.queue}' in ${tenant.slug}`, EXIT.NOT_FOUND);
    filter.queueId = queue.id;
  }
  const { jobs } = await send(ctx, ListJobs, { tenantId: tenant.id, filter, last: limit });
  const list = jobs.edges.map((e) => e.node);
  if (ctx.json) {
    ctx.out(JSON.stringify(list));
    return EXIT.OK;
  }
  if (list.length === 0) {
    ctx.out(`no jobs in ${tenant.slug}${values.state || values.queue ? ' matching the filter' : ''}`);
    return EXIT.OK;
  }
  const now = Date.now();
  const rows = list.map((j) => [
    j.id,
    j.name,
    j.state,
    j.queue.name,
    j.state === 'PENDING' && j.position?.inQueue != null
      ? `${j.position.inQueue}/${j.position.queueLength ?? '?'}`
      : '-',
    gpus(j.gpus),
    age(j.submittedAt, now),
  ]);
  ctx.out(table(['ID', 'NAME', 'STATE', 'QUEUE', 'POSITION', 'GPUS', 'AGE'], rows, new Set([5, 6])));
  return EXIT.OK;
}
