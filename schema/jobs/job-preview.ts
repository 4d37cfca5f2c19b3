import { encodeGlobalID } from '@pothos/plugin-relay';
import { z } from 'zod';
import { getQueue } from '../../src/services/cluster/index.js';
import type { SubmitJobInput } from '../../src/services/jobs/index.js';
import { type Preview, previewJob, previewMessage } from '../../src/services/jobs/index.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';
import { SubmitJobInputRef, toSubmitInput, validateSubmit } from './job-submit.js';
import { PlacementRef, placementLines } from './placement.js';

const PreviewVictimRef = builder
  .objectRef<{ victimId: string; reason: string; sameTenant: boolean }>('PreviewPreemption')
  .implement({
    fields: (t) => ({
      reason: t.exposeString('reason'),
      jobId: t.id({
        nullable: true,
        description: 'Only for jobs of your own tenant.',
        resolve: (v) => (v.sameTenant ? encodeGlobalID('Job', v.victimId) : null),
      }),
    }),
  });

/** Exported so schema/metering/usage.ts adds the cost estimate; `submit` is what was previewed. */
export const JobPreviewRef = builder
  .objectRef<
    Preview & {
      tenantId: string;
      queueName: string;
      victims: { victimId: string; reason: string; sameTenant: boolean }[];
      submit: SubmitJobInput;
    }
  >('JobPreview')
  .implement({
    description: 'What would happen if the job were submitted now. Nothing is changed.',
    fields: (t) => ({
      admissible: t.exposeBoolean('admissible', { description: 'It would be admitted in the next cycle.' }),
      borrowed: t.exposeBoolean('borrowed'),
      mode: t.string({
        nullable: true,
        description: 'fit, borrow, preempt or preempt-borrow.',
        resolve: (p) => p.admission?.mode ?? null,
      }),
      placement: t.field({ type: [PlacementRef], resolve: (p) => placementLines(p.admission) }),
      wouldPreempt: t.field({ type: [PreviewVictimRef], resolve: (p) => p.victims }),
      reason: t.string({ nullable: true, resolve: (p) => p.reason ?? null }),
      message: t.string({
        nullable: true,
        description: "Why it would wait, in the same words as a pending job's reason.",
        resolve: (p, _a, ctx) => previewMessage(ctx, p, p.queueName),
      }),
    }),
  });

builder.mutationFields((t) => ({
  previewJob: t.field({
    type: JobPreviewRef,
    description: 'The what-if: would this job fit now, borrow, preempt whom. Changes nothing.',
    authScopes: { authenticated: true },
    args: {
      input: t.arg({
        type: SubmitJobInputRef,
        required: true,
        validate: z.any().refine(validateSubmit, 'minCount must not exceed count'),
      }),
    },
    resolve: async (_r, { input }, ctx) => {
      const submit = toSubmitInput(input);
      const preview = await previewJob(ctx, submit);
      const queue = await getQueue(ctx, submit.queueId ?? (await projectQueue(ctx, submit.projectId)));
      return previewView(ctx, preview, queue, submit);
    },
  }),
}));

/** A preview as the graph shows it: victims of other tenants without their ids. */
export async function previewView(
  ctx: GraphQLContext,
  preview: Preview,
  queue: { name: string; tenant: { id: string } },
  submit: SubmitJobInput,
) {
  const victims = await Promise.all(
    preview.wouldPreempt.map(async (v) => {
      const victimQueueId = ctx.scheduler.queueIdOf(v.victimQueue);
      const victimQueue = victimQueueId ? await ctx.loaders.queue.load(victimQueueId) : null;
      return {
        victimId: v.victimId,
        reason: v.reason,
        sameTenant: victimQueue?.tenant.id === queue.tenant.id,
      };
    }),
  );
  return { ...preview, tenantId: queue.tenant.id, queueName: queue.name, victims, submit };
}

async function projectQueue(ctx: GraphQLContext, projectId: string | null | undefined): Promise<string> {
  const project = projectId ? await ctx.loaders.project.load(projectId) : null;
  return project?.defaultQueueId ?? '';
}
