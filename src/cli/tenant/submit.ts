// fairway submit -f job.yaml: validated locally, names resolved, sent once (idempotent retries).
import fs from 'node:fs/promises';
import { COMMON_HELP, need, parse } from './args.js';
import { type CliContext, CliError, EXIT } from './context.js';
import { standing } from './format.js';
import { idempotencyKeyOf, type JobFile, parseJobFile } from './job-file.js';
import { jobFileInput, namesTargets, TargetProblem, targetIdsOf } from './job-file-core.js';
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
  const targets = namesTargets(job) ? await send(ctx, Targets, {}) : null;
  try {
    return targetIdsOf(job, targets);
  } catch (error) {
    if (error instanceof TargetProblem)
      throw new CliError(error.message, error.notFound ? EXIT.NOT_FOUND : EXIT.USAGE);
    throw error;
  }
}

export function toSubmitInput(
  job: JobFile,
  ids: { queueId?: string; projectId?: string },
  idempotencyKey: string,
): SubmitJobInput {
  return jobFileInput(job, ids, idempotencyKey);
}

/** A file's text, or standard input for '-' (a file that cannot be read is a usage error). */
export async function readSource(ctx: CliContext, file: string): Promise<string> {
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
