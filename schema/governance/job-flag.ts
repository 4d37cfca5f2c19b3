import DataLoader from 'dataloader';
import { Job, JobRow } from '../../src/persistence/jobs/index.js';
import { requireCapability } from '../../src/services/context.js';
import { type StoredJobFlag, storedFlagOf } from '../../src/services/governance/index.js';
import { builder } from '../builder.js';
import type { GraphQLContext } from '../context.js';
import { JobRef } from '../refs.js';
import { IdleActionEnum } from './isolation-policy.js';

// Idle and held reclaim: the governance flag a job carries, with the numbers its owner
// sees (durations in declared time, as the policy states them).

const GovernanceFlagKindEnum = builder.enumType('GovernanceFlagKind', {
  values: {
    IDLE: {
      description:
        "The job's GPU utilization stayed under its policy's threshold for the policy's idle time.",
    },
    NOT_RUNNING: { description: "Admitted, but its pods were not running after the policy's limit." },
  } as const,
});

const GovernanceDecisionEnum = builder.enumType('GovernanceDecision', {
  values: {
    NOTIFY: {
      description: 'Only its owner is told (also RECLAIM_IF_BORROWING while the queue does not borrow).',
    },
    RECLAIM: { description: 'Its GPUs were reclaimed: it went back to pending.' },
  } as const,
});

export const GovernanceFlagRef = builder.objectRef<StoredJobFlag>('GovernanceFlag').implement({
  description: "Why a job was flagged by its queue's isolation policy, with the numbers.",
  fields: (t) => ({
    kind: t.field({ type: GovernanceFlagKindEnum, resolve: (f) => f.kind }),
    since: t.field({
      type: 'DateTime',
      description: 'When the condition began (the first low sample, or the admission).',
      resolve: (f) => new Date(f.since),
    }),
    at: t.field({
      type: 'DateTime',
      description: 'When the job was flagged.',
      resolve: (f) => new Date(f.at),
    }),
    forSeconds: t.float({
      description: 'How long the condition had held when flagged (declared seconds).',
      resolve: (f) => f.forMs / 1000,
    }),
    meanUtilization: t.float({
      nullable: true,
      description: 'IDLE: mean GPU utilization (0..1) over the idle stretch; null for NOT_RUNNING.',
      resolve: (f) => f.meanUtilization ?? null,
    }),
    utilizationBelow: t.float({
      nullable: true,
      description: "IDLE: the policy's threshold (0..1).",
      resolve: (f) => (f.kind === 'IDLE' ? f.utilizationBelow : null),
    }),
    limitSeconds: t.float({
      description:
        "The policy's limit that was crossed: idle time (IDLE) or time to run (NOT_RUNNING), declared seconds.",
      resolve: (f) => f.limitMs / 1000,
    }),
    action: t.field({
      type: IdleActionEnum,
      description: "What the queue's policy does with a flagged job.",
      resolve: (f) => f.action,
    }),
    decision: t.field({
      type: GovernanceDecisionEnum,
      description: 'What the action came to.',
      resolve: (f) => f.decision,
    }),
    policy: t.string({
      nullable: true,
      description: 'The isolation policy that decided.',
      resolve: (f) => f.policy ?? null,
    }),
  }),
});

/**
 * Lists read jobs as plain rows without the flag column (job-rows.ts): their flags are read in one
 * query per request, through the request's EntityManager (its tenant filter applies).
 */
const flagLoaders = new WeakMap<GraphQLContext, DataLoader<string, StoredJobFlag | null>>();
function flagLoader(ctx: GraphQLContext): DataLoader<string, StoredJobFlag | null> {
  let loader = flagLoaders.get(ctx);
  if (!loader) {
    loader = new DataLoader(async (ids) => {
      const rows = await ctx.em.find(
        Job,
        { id: { $in: [...ids] } },
        { fields: ['id', 'governanceFlag'], disableIdentityMap: true },
      );
      const flags = new Map(rows.map((row) => [row.id, storedFlagOf(row.governanceFlag)]));
      return ids.map((id) => flags.get(id) ?? null);
    });
    flagLoaders.set(ctx, loader);
  }
  return loader;
}

builder.objectFields(JobRef, (t) => ({
  governanceFlag: t.field({
    type: GovernanceFlagRef,
    nullable: true,
    description:
      "The flag its queue's isolation policy raised (IDLE or NOT_RUNNING) in its current or last admission: kept after a reclaim (why it waits), dropped once it no longer holds (utilization back, running now, admitted again, the queue left governance); null when none.",
    resolve: async (j, _a, ctx) => {
      requireCapability(ctx, j.tenant.id, 'jobs:read', 'Job');
      if (j instanceof JobRow) return flagLoader(ctx).load(j.id);
      return storedFlagOf((j as { governanceFlag?: unknown }).governanceFlag);
    },
  }),
}));
