// `fairway apply`: running the plan's mutations in order (flavors, priority classes, cohorts,
// tenants, node pools, queues). The first refusal stops the run: what was done stays done, and
// running the same file again does the rest, because the next plan starts from what is there.

import type { ObjectPlan, Plan } from './apply-diff.js';
import { type CliContext, CliError, EXIT } from './context.js';

export interface ApplyOutcome {
  done: { kind: string; name: string; action: string }[];
  failed?: { kind: string; name: string; message: string; exitCode: number };
}

export async function runPlan(
  plan: Plan,
  ctx: CliContext,
  onDone: (o: ObjectPlan) => void,
): Promise<ApplyOutcome> {
  const outcome: ApplyOutcome = { done: [] };
  for (const object of plan.objects) {
    if (object.action !== 'create' && object.action !== 'update') continue;
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
      outcome.failed = {
        kind: object.kind,
        name: object.name,
        message: e.message,
        exitCode: e.exitCode === EXIT.OK ? EXIT.FAILURE : e.exitCode,
      };
      return outcome;
    }
    outcome.done.push({ kind: object.kind, name: object.name, action: object.action });
    onDone(object);
  }
  return outcome;
}
