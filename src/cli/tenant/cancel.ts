// fairway cancel JOB
import { COMMON_HELP, need, parse } from './args.js';
import { type CliContext, EXIT } from './context.js';
import { requireToken } from './lookup.js';
import { CancelJob, send } from './operations.js';

export const CANCEL_HELP = `usage: fairway cancel JOB [--json]

Cancels a job (its submitter, the project's admins, tenant admins). A pending job leaves its
queue; a running one is stopped. JOB is the ID that submit and ls print.
  --json             print the job as JSON
${COMMON_HELP}`;

export async function runCancel(argv: string[], ctx: CliContext): Promise<number> {
  const { values, positionals } = parse(argv, {}, 1);
  if (values.help) {
    ctx.out(CANCEL_HELP);
    return EXIT.OK;
  }
  const id = need(positionals[0], 'JOB');
  requireToken(ctx);
  const { cancelJob } = await send(ctx, CancelJob, { id });
  ctx.out(
    ctx.json ? JSON.stringify(cancelJob) : `job ${cancelJob.id}  ${cancelJob.name}: ${cancelJob.state}`,
  );
  return EXIT.OK;
}
