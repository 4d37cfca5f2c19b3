// `fairway apply -f platform.yaml`: platform as code. Parse and validate the file (nothing is
// sent on a bad one), read what the platform holds, show the difference, and (unless --check)
// make it so in dependency order. Idempotent: a second run finds nothing to do and sends no
// mutation. Objects on the server that the file does not name are reported and left alone;
// with --prune, the flavors, cohorts, node pools and priority classes among them are deleted
// (shown in the plan first; what the server refuses, still in use, is reported).
import { parseArgs } from 'node:util';
import { computePlan } from './apply-diff.js';
import { describe, planJson, planLines, summary } from './apply-print.js';
import { runPlan } from './apply-run.js';
import { readPlatformSpec } from './apply-spec.js';
import { readServerState } from './apply-state.js';
import { type CliContext, CliError, EXIT } from './context.js';

export const APPLY_HELP = `usage: fairway apply -f FILE [--check] [--prune] [--json]

Platform admins: make flavors, priority classes, cohorts, tenants, node pools and queues what
FILE (YAML) says. Shows the difference first; fields the file leaves out are left as they are;
objects not in the file are reported as "not managed" and left alone (unless --prune).

  -f, --file FILE   the platform file (see examples/platform.yaml); - reads stdin
  --check           show the difference and stop: exit 8 when there is one, 0 when none
  --dry-run         the same as --check
  --prune           also delete the flavors, cohorts, node pools and priority classes the file
                    does not name (after every create and update; listed with "-" in the plan).
                    The server refuses what is still in use (CONFLICT): reported, the rest goes
                    on. Tenants and queues are never deleted (archive a tenant: status: ARCHIVED)
  --json            the plan (and what was applied) as one JSON object on stdout
  -h, --help        this help

exit: 0 applied or nothing to do, 2 bad flags or file (nothing sent), 3 not a platform admin,
5 a change the API cannot make (nothing sent) or a deletion refused, 8 --check found
differences; a refusal while applying exits with its error's code (see 'fairway help'); run
again to finish.`;

const DONE: Record<string, string> = { create: 'created', update: 'updated', delete: 'deleted' };

export async function runApply(argv: string[], ctx: CliContext): Promise<number> {
  let flags;
  try {
    flags = parseArgs({
      args: argv,
      options: {
        file: { type: 'string', short: 'f' },
        check: { type: 'boolean' },
        'dry-run': { type: 'boolean' },
        json: { type: 'boolean' },
        prune: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
      strict: true,
      allowPositionals: false,
    }).values;
  } catch (e) {
    ctx.err(`fairway apply: ${(e as Error).message}`);
    return EXIT.USAGE;
  }
  if (flags.help) {
    ctx.out(APPLY_HELP);
    return EXIT.OK;
  }
  if (!flags.file) {
    ctx.err('fairway apply: -f FILE is required');
    return EXIT.USAGE;
  }
  const json = ctx.json || flags.json === true;
  const checkOnly = flags.check === true || flags['dry-run'] === true;
  const file = flags.file;
  try {
    const spec = await readPlatformSpec(file, ctx.stdin);
    if (!ctx.token) throw new CliError('not logged in: run fairway login or set FAIRWAY_TOKEN', EXIT.AUTH);
    const plan = computePlan(spec, await readServerState(ctx), { prune: flags.prune === true });
    const counts = summary(plan);
    const changes = counts.create + counts.update + counts.delete;
    const report: Record<string, unknown> = { file, check: checkOnly, ...planJson(plan) };
    if (!json) for (const line of planLines(plan, file)) ctx.out(line);

    if (counts.blocked) {
      // Nothing is sent: half an apply would leave the platform as neither side says.
      if (json) ctx.out(JSON.stringify({ ...report, applied: [] }));
      else
        ctx.err(
          `fairway apply: ${counts.blocked} object(s) cannot be applied (see "cannot apply" above); nothing was changed`,
        );
      return EXIT.CONFLICT;
    }
    if (checkOnly || changes === 0) {
      if (json) ctx.out(JSON.stringify({ ...report, applied: [] }));
      else if (changes === 0) ctx.out('Nothing to do.');
      return checkOnly && changes > 0 ? EXIT.DIFF : EXIT.OK;
    }

    const outcome = await runPlan(
      plan,
      ctx,
      (o) => {
        if (!json) ctx.out(`${DONE[o.action]} ${describe(o)}`);
      },
      (f) => {
        if (!json) ctx.out(`not deleted ${f.kind} ${f.name}: ${f.message}`);
      },
    );
    if (json)
      ctx.out(
        JSON.stringify({
          ...report,
          applied: outcome.done,
          ...(outcome.failed ? { failed: outcome.failed } : {}),
          ...(plan.prune ? { refused: outcome.refused } : {}),
        }),
      );
    if (outcome.failed) {
      const f = outcome.failed;
      ctx.err(`fairway apply: ${f.kind} ${f.name} failed: ${f.message}`);
      ctx.err(
        `fairway apply: ${outcome.done.length} of ${changes} change(s) applied before it; fix the cause and run again to apply the rest`,
      );
      return f.exitCode;
    }
    const deleted = outcome.done.filter((d) => d.action === 'delete').length;
    if (!json)
      ctx.out(
        `Applied: ${counts.create} created, ${counts.update} updated${plan.prune ? `, ${deleted} deleted` : ''}.`,
      );
    if (outcome.refused.length) {
      ctx.err(
        `fairway apply: ${outcome.refused.length} object(s) not deleted: the server refused (see "not deleted" above); everything else was applied`,
      );
      return outcome.refused[0]!.exitCode;
    }
    return EXIT.OK;
  } catch (e) {
    if (!(e instanceof CliError)) throw e;
    ctx.err(e.exitCode === EXIT.USAGE ? e.message : `fairway apply: ${e.message}`);
    return e.exitCode;
  }
}
