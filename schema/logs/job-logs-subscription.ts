import { getJob } from '../../src/services/jobs/index.js';
import type { LogBatch } from '../../src/services/logs/index.js';
import { contentSettingsOf, mayReadContentWith } from '../../src/services/tenancy/index.js';
import { forbidden } from '../../src/shared/index.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';
import { reloadingSubscription } from '../reloading-subscription.js';
import { LogLineRef } from './log-line.js';

const LogBatchRef = builder.objectRef<LogBatch>('JobLogBatch').implement({
  description: 'Lines written since the last batch, oldest first.',
  fields: (t) => ({
    run: t.int({ nullable: true, resolve: (b) => b.run }),
    lines: t.field({ type: [LogLineRef], resolve: (b) => b.lines }),
    cursor: t.string({
      description:
        'Pass as `after` to a new jobLogs (on any replica) to go on from here without a line twice.',
      resolve: (b) => b.cursor,
    }),
    ended: t.boolean({
      description: 'The last batch: the job ended and all its lines were sent.',
      resolve: (b) => b.ended,
    }),
  }),
});

type Watched = Awaited<ReturnType<typeof watch>>;

async function watch(
  args: {
    id: string | number;
    podSet?: string | null;
    pod?: number | null;
    tail?: number | null;
    after?: string | null;
    follow?: boolean | null;
  },
  ctx: Parameters<typeof getJob>[0],
) {
  const job = await getJob(ctx, decodeId(String(args.id), 'Job'));
  if (!ctx.logs) throw new Error('job logs are not wired into this context');
  const source = await ctx.logs.follow(ctx, job, args);
  const scope = {
    tenant: { id: job.tenant.id },
    project: job.project ? { id: job.project.id } : null,
    submittedBy: job.submittedBy ? { id: job.submittedBy.id } : null,
  };
  const settings = await contentSettingsOf(ctx, job);
  ctx.em.clear();
  return { source, scope, settings, follow: args.follow !== false };
}

async function* batches(w: Watched): AsyncGenerator<{ batch: LogBatch; w: Watched }> {
  for await (const batch of w.source) {
    yield { batch, w };
    if (!w.follow) return;
  }
}

builder.subscriptionFields((t) => ({
  jobLogs: t.field({
    type: LogBatchRef,
    description:
      "A job's output as it is written, in batches: first the last `tail` lines of the current run (0–10000, default 100), then new lines, run after run, until the job ends (the last batch says `ended`). `follow: false` sends the first batch only. Who may read it: as Job.logs; another tenant's job is NOT_FOUND. A reader that lets more than FAIRWAY_LOG_FOLLOW_BUFFER_LINES wait is ended with RATE_LIMITED; resume with the last batch's cursor as `after`.",
    authScopes: { authenticated: true },
    args: {
      id: t.arg.id({ required: true }),
      podSet: t.arg.string(),
      pod: t.arg.int(),
      tail: t.arg.int(),
      after: t.arg.string(),
      follow: t.arg.boolean(),
    },
    ...reloadingSubscription({
      watch,
      source: (w) => batches(w),
      // Rights as they are now (the event's caller re-authenticated), without SQL: the job's scope
      // and its project's content settings as read when the stream opened.
      reload: ({ batch, w }, _args, ctx) => {
        if (!mayReadContentWith(ctx, w.scope, w.settings))
          throw forbidden("You may not read this job's logs.");
        return batch;
      },
      storedFields: [],
    }),
  }),
}));
