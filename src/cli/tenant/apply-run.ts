// `fairway apply`: running the plan's mutations in order (flavors, priority classes, cohorts,
// tenants, node pools, queues, then with --prune the deletions). The first refusal of a create
// or update stops the run: what was done stays done, and running the same file again does the
// rest, because the next plan starts from what is there. A refused deletion (CONFLICT: still in
// use) stops nothing: it is reported, and the other deletions go on.

import type { ObjectPlan, Plan } from './apply-diff.js';
import { type CliContext, CliError, EXIT } from './context.js';

export interface ApplyFailure {
  kind: string;
  name: string;
  message: string;
  exitCode: number;
}

export interface ApplyOutcome {
  done: { kind: string; name: string; action: string }[];
  failed?: ApplyFailure;
  /** Deletions the server refused (with --prune), in plan order. */
  refused: ApplyFailure[];
}

export async function runPlan(
  plan: Plan,
  ctx: CliContext,
  onDone: (o: ObjectPlan) => void,
  onRefused: (f: ApplyFailure) => void = () => undefined,
): Promise<ApplyOutcome> {
  const outcome: ApplyOutcome = { done: [], refused: [] };
  for (const object of plan.objects) {
    if (object.action !== 'create' && object.action !== 'update' && object.action !== 'delete') continue;
    // Ctrl-C between objects: stop cleanly; the next run picks up from what is there.
    if (ctx.signal?.aborted) {
      outcome.failed = {
        kind: object.kind,
        name: object.name,
        message: 'interrupted before it was applied',
        exitCode: EXIT.INTERRUPTED,
      };
      return outcome;
    }
    try {
      for (const step of object.steps) {
        const data = await ctx.request<Record<string, { id?: string } | null>>(
          step.document,
          step.variables(plan.ids),
        );
        if (step.registers) {
          const id = Object.values(data)[0]?.id;
          if (id) plan.ids.set(step.registers, id);
        }
      }
    } catch (e) {
      if (!(e instanceof CliError)) throw e;
      const failure = {
        kind: object.kind,
        name: object.name,
        message: e.message,
        exitCode: e.exitCode === EXIT.OK ? EXIT.FAILURE : e.exitCode,
      };
      // The server could not be reached or refused the caller: the other deletions would fare no better.
      if (
        object.action === 'delete' &&
        e.exitCode !== EXIT.UNREACHABLE &&
        e.exitCode !== EXIT.AUTH &&
        e.exitCode !== EXIT.RATE_LIMITED
      ) {
        outcome.refused.push(failure);
        onRefused(failure);
        continue;
      }
      outcome.failed = failure;
      return outcome;
    }
    outcome.done.push({ kind: object.kind, name: object.name, action: object.action });
    onDone(object);
  }
  return outcome;
}
