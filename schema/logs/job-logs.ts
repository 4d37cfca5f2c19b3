import { z } from 'zod';
import {
  DEFAULT_LOG_TAIL,
  type JobClusterEvent,
  type LogPage,
  MAX_LOG_TAIL,
} from '../../src/services/logs/index.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';
import { JobRef } from '../refs.js';
import { LogLineRef } from './log-line.js';

const JobLogPageRef = builder.objectRef<LogPage>('JobLogPage').implement({
  description: "A run's lines, oldest first and newest last.",
  fields: (t) => ({
    run: t.int({
      nullable: true,
      description: 'The run shown; null when the job has not run yet.',
      resolve: (p) => p.run,
    }),
    runs: t.int({ description: 'How many runs the job has had.', resolve: (p) => p.runs }),
    lines: t.field({ type: [LogLineRef], resolve: (p) => p.lines }),
    hasEarlier: t.boolean({
      description:
        "Earlier lines exist: page back with `before` set to the first line's cursor. Also true when the archive kept only a pod's last FAIRWAY_LOG_ARCHIVE_KIB.",
      resolve: (p) => p.hasEarlier,
    }),
    archived: t.boolean({
      description: "Some pods' lines came from the archive kept when they ended (the pods are gone).",
      resolve: (p) => p.archived,
    }),
  }),
});

const ClusterEventTypeEnum = builder.enumType('ClusterEventType', {
  values: { NORMAL: { value: 'Normal' }, WARNING: { value: 'Warning' } } as const,
});

const ClusterEventRef = builder.objectRef<JobClusterEvent>('ClusterEvent').implement({
  description:
    "Something the cluster said about the job's pods or objects (Kubernetes Events: scheduling, image pulls, back-offs, OOM, eviction), with other tenants' names and ids removed.",
  fields: (t) => ({
    run: t.int({ resolve: (e) => e.run }),
    type: t.field({ type: ClusterEventTypeEnum, resolve: (e) => e.type }),
    reason: t.string({ resolve: (e) => e.reason }),
    message: t.string({ resolve: (e) => e.message }),
    count: t.int({ resolve: (e) => e.count }),
    firstSeen: t.field({ type: 'DateTime', resolve: (e) => new Date(e.firstSeen) }),
    lastSeen: t.field({ type: 'DateTime', resolve: (e) => new Date(e.lastSeen) }),
    object: t.string({
      description: "What it is about: 'Pod 1 of workers', 'Job', 'JobSet'…",
      resolve: (e) => e.object,
    }),
    podSet: t.string({ nullable: true, resolve: (e) => e.podSet }),
    pod: t.int({ nullable: true, resolve: (e) => e.pod }),
  }),
});

const logsOf = (ctx: GraphQLContext) => {
  if (!ctx.logs) throw new Error('job logs are not wired into this context');
  return ctx.logs;
};

builder.objectFields(JobRef, (t) => ({
  logs: t.field({
    type: JobLogPageRef,
    description: `The output of one run (default: the latest), oldest first and newest last: from the cluster while its pods exist, from the archive after. Logs are job content: readable by those who may read \`container\` (platform admins only under a break-glass grant, each read audited). \`tail\`: the last N lines (default ${DEFAULT_LOG_TAIL}, at most ${MAX_LOG_TAIL}); \`before\`: a line's cursor, to page back; \`since\` and \`contains\` filter (\`contains\` after masking: secrets cannot be searched for).`,
    args: {
      run: t.arg.int(),
      podSet: t.arg.string(),
      pod: t.arg.int(),
      tail: t.arg.int(),
      since: t.arg({ type: 'DateTime' }),
      contains: t.arg.string({ validate: z.string().max(1000, 'must be at most 1000 characters') }),
      before: t.arg.string({ validate: z.string().max(2000, 'must be at most 2000 characters') }),
    },
    resolve: (job, args, ctx) => logsOf(ctx).read(ctx, job, args),
  }),
  clusterEvents: t.field({
    type: [ClusterEventRef],
    description:
      "What the cluster said about one run's pods and objects (default: the latest run), oldest first; readable by those who may read the job's logs.",
    args: { run: t.arg.int() },
    resolve: (job, args, ctx) => logsOf(ctx).clusterEvents(ctx, job, args.run ?? null),
  }),
}));
