import { getJob } from '../src/services/jobs.js';
import { jobPositionStream, type JobPosition } from '../src/services/job-position-stream.js';
import type { JobExplanation } from '../src/services/pending-reasons.js';
import type { Job } from '../src/persistence/scheduling-entities.js';
import { builder } from './builder.js';
import { JobStateEnum, decodeId } from './common.js';
import { PendingReasonRef } from './pending-reason.js';
import { reloadingSubscription } from './reloading-subscription.js';
import { JobRef } from './refs.js';

export const JobPositionRef = builder.objectRef<JobExplanation>('JobPosition').implement({
  description: "Where a pending job stands. Counts only: other tenants' jobs ahead are never named.",
  fields: (t) => ({
    inQueue: t.int({ nullable: true, description: '1-based, in its queue.', resolve: (e) => e.positionInQueue ?? null }),
    queueLength: t.int({ nullable: true, resolve: (e) => e.queuePending ?? null }),
    inCohort: t.int({ nullable: true, description: "1-based, in the cohort's admission order (fair share and borrowing included).", resolve: (e) => e.positionInCohort ?? null }),
    cohortLength: t.int({ nullable: true, resolve: (e) => e.cohortPending ?? null }),
  }),
});

const JobPositionUpdateRef = builder.objectRef<JobPosition & { job: Job }>('JobPositionUpdate').implement({
  fields: (t) => ({
    job: t.field({ type: JobRef, description: 'The job as stored when this update was sent.', resolve: (u) => u.job }),
    state: t.field({ type: JobStateEnum, resolve: (u) => u.state }),
    position: t.field({ type: JobPositionRef, nullable: true, resolve: (u) => u.explanation }),
    eta: t.field({ type: 'DateTime', nullable: true, resolve: (u) => (u.explanation?.eta == null ? null : new Date(u.explanation.eta)) }),
    pendingReason: t.field({ type: PendingReasonRef, nullable: true, resolve: (u) => u.explanation }),
  }),
});

builder.subscriptionFields((t) => ({
  jobPosition: t.field({
    type: JobPositionUpdateRef,
    description:
      'Position, ETA and pending reason of a job, and its state: the current value first, then once per scheduling cycle that changed one of them (as it stood at the end of that cycle), and on each state change.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    ...reloadingSubscription({
      watch: ({ id }: { id: string | number }, ctx) => getJob(ctx, decodeId(String(id), 'Job')),
      source: (job, ctx) => jobPositionStream(ctx, { id: job.id, state: job.state }),
      reload: async (position, _args, ctx) => ({ ...position, job: await getJob(ctx, position.jobId) }),
    }),
  }),
}));
