// fairway submit -f job.yaml: validated locally, names resolved, sent once (idempotent retries).
import fs from 'node:fs/promises';
import { COMMON_HELP, need, parse } from './args.js';
import { type CliContext, CliError, EXIT } from './context.js';
import { standing } from './format.js';
import { idempotencyKeyOf, type JobFile, parseJobFile } from './job-file.js';
import { requireToken } from './lookup.js';
import { SubmitJob, type SubmitJobInput, send, Targets } from './operations.js';

export const SUBMIT_HELP = `usage: fairway submit -f FILE [--idempotency-key KEY] [--json]

Submits the job described in FILE (YAML; see examples/job.yaml). The file is checked first:
a bad file exits 2 naming file:line, and nothing is sent. The idempotency key is derived from
the file's content unless given, so running the same submit again returns the same job
instead of a second one; change the file (e.g. its name) or pass a new key to submit again.

  -f, --file FILE            the job file ('-' reads standard input)
  --idempotency-key KEY      use this key instead (up to 128 characters)
  --json                     print the job as JSON
${COMMON_HELP}`;

/** The file's names (tenant, project slug, queue name) as the IDs the graph takes. */
async function resolveTargets(
  ctx: CliContext,
  job: JobFile,
): Promise<{ queueId?: string; projectId?: string }> {
  const out: { queueId?: string; projectId?: string } = {};
  if (job.queueId) out.queueId = job.queueId;
  if (job.projectId) out.projectId = job.projectId;
  if ((job.queue && !job.queueId) || (job.project && !job.projectId)) {
    const targets = await send(ctx, Targets, {});
    const inTenant = <T extends { slug: string }>(t: T) => !job.tenant || t.slug === job.tenant;
    if (job.queue && !job.queueId) {
      const matches = targets.queues.filter((q) => q.name === job.queue && inTenant(q.tenant));
      if (matches.length === 0)
        throw new CliError(
          `no queue '${job.queue}'${job.tenant ? ` in ${job.tenant}` : ''} among your tenants' queues`,
          EXIT.NOT_FOUND,
        );
      if (matches.length > 1)
        throw new CliError(
          `queue '${job.queue}' exists in several of your tenants (${matches.map((q) => q.tenant.slug).join(', ')}): add 'tenant:' to the file`,
          EXIT.USAGE,
        );
      out.queueId = matches[0]!.id;
    }
    if (job.project && !job.projectId) {
      const matches = targets.viewer.memberships
        .map((m) => m.tenant)
        .filter(inTenant)
        .flatMap((t) => t.projects.edges.map((e) => ({ ...e.node, tenant: t.slug })))
        .filter((p) => p.slug === job.project);
      if (matches.length === 0)
        throw new CliError(`no project '${job.project}' among your tenants' projects`, EXIT.NOT_FOUND);
      if (matches.length > 1)
        throw new CliError(
          `project '${job.project}' exists in several of your tenants: add 'tenant:' to the file`,
          EXIT.USAGE,
        );
      out.projectId = matches[0]!.id;
    }
  }
  return out;
}

export function toSubmitInput(
  job: JobFile,
  ids: { queueId?: string; projectId?: string },
  idempotencyKey: string,
): SubmitJobInput {
  const input: SubmitJobInput = { name: job.name, podSets: job.podSets, idempotencyKey, ...ids };
  if (job.priorityClass) input.priorityClass = job.priorityClass;
  if (job.expectedDurationSeconds !== undefined) input.expectedDurationSeconds = job.expectedDurationSeconds;
  if (job.maxRunSeconds !== undefined) input.maxRunSeconds = job.maxRunSeconds;
  if (job.checkpoint) input.checkpoint = job.checkpoint;
  if (job.workloadType) input.workloadType = job.workloadType;
  if (job.latencySensitive !== undefined) input.latencySensitive = job.latencySensitive;
  if (job.simulate) input.simulate = job.simulate;
  if (job.container) {
    const { env, ...container } = job.container;
    input.container = {
      ...container,
      ...(env === undefined
        ? {}
        : {
            env: Array.isArray(env)
              ? env
              : Object.entries(env).map(([k, v]) => ({ name: k, value: String(v) })),
          }),
    };
  }
  return input;
}

async function readSource(ctx: CliContext, file: string): Promise<string> {
  if (file === '-') {
    let data = '';
    for await (const chunk of ctx.stdin ?? process.stdin)
      data += typeof chunk === 'string' ? chunk : (chunk as Buffer).toString('utf8');
    return data;
  }
  try {
    return await fs.readFile(file, 'utf8');
  } catch (error) {
    throw new CliError(
      `cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      EXIT.USAGE,
    );
  }
}

export async function runSubmit(argv: string[], ctx: CliContext): Promise<number> {
  const { values } = parse(argv, {
    file: { type: 'string', short: 'f' },
    'idempotency-key': { type: 'string' },
  });
  if (values.help) {
    ctx.out(SUBMIT_HELP);
    return EXIT.OK;
  }
  const file = need(values.file, '-f FILE');
  const key = values['idempotency-key'];
  if (key !== undefined && (key.length === 0 || key.length > 128))
    throw new CliError('--idempotency-key must be 1 to 128 characters', EXIT.USAGE);
  // Everything local first: a bad file or a missing login sends nothing.
  const job = parseJobFile(await readSource(ctx, file), file === '-' ? '<stdin>' : file);
  requireToken(ctx);
  const input = toSubmitInput(
    job,
    await resolveTargets(ctx, job),
    key ?? job.idempotencyKey ?? idempotencyKeyOf(job),
  );
  const { submitJob } = await send(ctx, SubmitJob, { input });
  if (ctx.json) ctx.out(JSON.stringify({ ...submitJob, idempotencyKey: input.idempotencyKey }));
  else {
    ctx.out(`job ${submitJob.id}  ${submitJob.name}  queue ${submitJob.queue.name}`);
    ctx.out(standing(submitJob));
    if (submitJob.state === 'PENDING' || submitJob.state === 'ADMITTED' || submitJob.state === 'RUNNING')
      ctx.out(`follow it: fairway watch ${submitJob.id}`);
  }
  return EXIT.OK;
}
