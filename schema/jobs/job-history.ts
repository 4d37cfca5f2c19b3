import { type ResolveCursorConnectionArgs, resolveCursorConnection } from '@pothos/plugin-relay';
import { z } from 'zod';
import { isUuid } from '../../src/persistence/ids.js';
import type { Job, JobView } from '../../src/persistence/jobs/index.js';
import type { UsageRecord } from '../../src/persistence/metering/index.js';
import {
  type HistoryCursor,
  jobUsageVisibility,
  listJobHistory,
  summarize,
  usageRecordsLoader,
} from '../../src/services/metering/index.js';
import { badInput } from '../../src/shared/index.js';
import { builder } from '../builder.js';
import { decodeId, JobStateEnum } from '../common.js';
import type { GraphQLContext } from '../context.js';
import { JobRef } from '../refs.js';

/**
 * A job's charged time (Job.gpuHours, cost, efficiency, usageIntervals) and the sacct-style
 * history of finished jobs. Usage fields follow the usage rules: usage:read; MEMBER and VIEWER
 * only for their own jobs; cost for tenant admins, auditors and platform admins. A field the
 * caller may not read is null (a list of jobs stays readable).
 */

type IntervalParent = { record: UsageRecord; money: boolean };

const UsageIntervalRef = builder.objectRef<IntervalParent>('UsageInterval').implement({
  description:
    'One ledger row: a flavor held by the job over an interval (never across an hour boundary or a price change).',
  fields: (t) => ({
    flavor: t.string({ resolve: (i) => i.record.flavor }),
    startedAt: t.field({ type: 'DateTime', resolve: (i) => i.record.startedAt }),
    endedAt: t.field({ type: 'DateTime', resolve: (i) => i.record.endedAt }),
    gpuUnits: t.float({
      description: 'Flavor units held (GPUs, slices or shares).',
      resolve: (i) => i.record.gpuUnits,
    }),
    gpuHours: t.float({
      description: 'Device-equivalent GPU-hours charged.',
      resolve: (i) => i.record.gpuSeconds / 3600,
    }),
    cost: t.float({
      nullable: true,
      description: 'Null unless you may see money.',
      resolve: (i) => (i.money ? i.record.cost : null),
    }),
    closedBy: t.string({
      description: 'checkpoint, preempted, succeeded, failed, cancelled or requeued.',
      resolve: (i) => i.record.closedBy,
    }),
  }),
});

/** The job's ledger rows if the caller may see them (one query for every job of the response). */
async function visibleRecords(
  job: JobView,
  ctx: GraphQLContext,
): Promise<{ records: UsageRecord[]; money: boolean } | null> {
  const visibility = jobUsageVisibility(ctx, job);
  if (!visibility) return null;
  return { records: await usageRecordsLoader(ctx).load(job.id), money: visibility.money };
}

builder.objectFields(JobRef, (t) => ({
  gpuHours: t.float({
    nullable: true,
    description:
      'GPU-hours charged so far (written intervals). Needs usage:read; members and viewers: their own jobs only.',
    resolve: async (job, _a, ctx) => {
      const seen = await visibleRecords(job, ctx);
      return seen ? summarize(seen.records).gpuHours : null;
    },
  }),
  cost: t.float({
    nullable: true,
    description:
      "Cost charged so far, in the price book's currency: tenant admins, auditors and platform admins.",
    resolve: async (job, _a, ctx) => {
      const seen = await visibleRecords(job, ctx);
      return seen?.money ? summarize(seen.records).cost : null;
    },
  }),
  efficiency: t.float({
    nullable: true,
    description: 'Used ÷ allocated GPU time where sampled; null when nothing was.',
    resolve: async (job, _a, ctx) => {
      const seen = await visibleRecords(job, ctx);
      return seen ? summarize(seen.records).efficiency : null;
    },
  }),
  usageIntervals: t.field({
    type: [UsageIntervalRef],
    nullable: true,
    description: 'The ledger rows of the job, oldest first (same rule as gpuHours).',
    resolve: async (job, _a, ctx) => {
      const seen = await visibleRecords(job, ctx);
      return seen ? seen.records.map((record) => ({ record, money: seen.money })) : null;
    },
  }),
}));

const JobHistoryFilterInput = builder.inputType('JobHistoryFilter', {
  fields: (t) => ({
    states: t.field({
      type: [JobStateEnum],
      description: 'Terminal states only (SUCCEEDED, FAILED, CANCELLED); default all three.',
    }),
    finishedAfter: t.field({ type: 'DateTime' }),
    finishedBefore: t.field({ type: 'DateTime', description: 'Exclusive.' }),
    projectId: t.id(),
    queueId: t.id(),
    memberId: t.id({ description: 'A Member of the tenant: the jobs that person submitted.' }),
    priorityClass: t.string({ validate: z.string().max(63) }),
  }),
});

/** Cursors of the history: opaque base64url of "<finishedAt ms>:<job id>". */
const historyCursor = (job: Job) =>
  Buffer.from(`${job.finishedAt?.getTime() ?? 0}:${job.id}`, 'utf8').toString('base64url');

function decodeHistoryCursor(cursor: string | undefined): HistoryCursor | undefined {
  if (cursor === undefined) return undefined;
  const [at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split(':');
  if (!at || !/^\d+$/.test(at) || !id || !isUuid(id)) throw badInput('That is not a cursor from this list.');
  return { finishedAt: Number(at), id };
}

builder.queryFields((t) => ({
  jobHistory: t.connection({
    type: JobRef,
    description:
      "sacct-style: a tenant's finished jobs, newest finished first, with their intervals, GPU-hours, cost (money rule) and exitReason.",
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id({ required: true }), filter: t.arg({ type: JobHistoryFilterInput }) },
    resolve: (_r, args, ctx) =>
      resolveCursorConnection({ args, toCursor: historyCursor }, (page: ResolveCursorConnectionArgs) => {
        const tenantId = decodeId(String(args.tenantId), 'Tenant');
        const f = args.filter;
        return listJobHistory(
          ctx,
          {
            tenantId,
            states: (f?.states as never) ?? null,
            finishedAfter: f?.finishedAfter ?? null,
            finishedBefore: f?.finishedBefore ?? null,
            projectId: f?.projectId ? decodeId(String(f.projectId), 'Project') : null,
            queueId: f?.queueId ? decodeId(String(f.queueId), 'Queue') : null,
            memberId: f?.memberId ? decodeId(String(f.memberId), 'Member') : null,
            priorityClass: f?.priorityClass ?? null,
          },
          {
            after: decodeHistoryCursor(page.after),
            before: decodeHistoryCursor(page.before),
            limit: page.limit,
            inverted: page.inverted,
          },
        );
      }),
  }),
}));
