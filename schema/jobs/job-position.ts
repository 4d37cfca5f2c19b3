import { requireCapability } from '../../src/services/context.js';
import type { JobExplanation, JobPosition } from '../../src/services/jobs/index.js';
import { getJob, jobPositionHub } from '../../src/services/jobs/index.js';
import { notFound } from '../../src/shared/index.js';
import { builder } from '../builder.js';
import { decodeId, JobStateEnum } from '../common.js';
import { JobRef } from '../refs.js';
import { reloadingSubscription } from '../reloading-subscription.js';
import { PendingReasonRef } from './pending-reason.js';

export const JobPositionRef = builder.objectRef<JobExplanation>('JobPosition').implement({
  description: "Where a pending job stands. Counts only: other tenants' jobs ahead are never named.",
  fields: (t) => ({
    inQueue: t.int({
      nullable: true,
      description: '1-based, in its queue.',
      resolve: (e) => e.positionInQueue ?? null,
    }),
    queueLength: t.int({ nullable: true, resolve: (e) => e.queuePending ?? null }),
    inCohort: t.int({
      nullable: true,
      description: "1-based, in the cohort's admission order (fair share and borrowing included).",
      resolve: (e) => e.positionInCohort ?? null,
    }),
    cohortLength: t.int({ nullable: true, resolve: (e) => e.cohortPending ?? null }),
  }),
});

/**
 * An update is the hub's value as it is (shared by every subscriber of the job): the job row
 * is read only by the `job` field, in the event's snapshot, and only for subscribers who asked for it.
 */
const JobPositionUpdateRef = builder.objectRef<JobPosition>('JobPositionUpdate').implement({
  fields: (t) => ({
    job: t.field({
      type: JobRef,
      description: 'The job as stored when this update was sent.',
      resolve: (u, _args, ctx) => getJob(ctx, u.jobId),
    }),
    state: t.field({ type: JobStateEnum, resolve: (u) => u.state }),
    position: t.field({ type: JobPositionRef, nullable: true, resolve: (u) => u.explanation }),
    eta: t.field({
      type: 'DateTime',
      nullable: true,
      resolve: (u) => (u.explanation?.eta == null ? null : new Date(u.explanation.eta)),
    }),
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
      watch: async ({ id }: { id: string | number }, ctx) => {
        const job = await getJob(ctx, decodeId(String(id), 'Job'));
        const watched = { id: job.id, state: job.state, tenantId: job.tenant.id };
        // The subscription's context lives as long as the subscription; its EntityManager need not
        // keep the row and its references (~4 KiB per subscriber): events read with their own.
        ctx.em.clear();
        return watched;
      },
      source: (job, ctx) => jobPositionHub(ctx).watch(job),
      // Rights as they are now (the event's caller was re-authenticated, briefly cached), without
      // SQL: the job's tenant is fixed, and what getJob checks of it is the caller's capability there.
      reload: (position, _args, ctx) => {
        if (position.tenantId === null) throw notFound('Job');
        requireCapability(ctx, position.tenantId, 'jobs:read', 'Job');
        return position;
      },
      storedFields: ['job'],
    }),
  }),
}));
