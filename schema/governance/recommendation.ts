import { getQueue } from '../../src/services/cluster/index.js';
import {
  DEFAULT_RECOMMENDATION_DAYS,
  quotaRecommendations,
  type RecommendationView,
} from '../../src/services/governance/index.js';
import { builder } from '../builder.js';
import { QueueRef } from '../refs.js';

const RecommendationKindEnum = builder.enumType('RecommendationKind', {
  values: {
    UNDER_USED: { description: 'The queue used much less than its nominal quota.' },
    CONSTANT_BORROWER: { description: 'The queue held more than its nominal quota most of the time.' },
  } as const,
});
const RecommendationSuggestionEnum = builder.enumType('RecommendationSuggestion', {
  values: {
    SHARED_POOL: {
      description: 'Lower the nominal and let the queue use a shared pool (its peak still fits).',
    },
    DEDICATED_POOL: { description: 'Raise the nominal to what it uses, or give it a dedicated pool.' },
  } as const,
});

const RecommendationRef = builder.objectRef<RecommendationView>('Recommendation').implement({
  description: "A suggestion from a queue's usage history against its GPU nominal quota.",
  fields: (t) => ({
    queue: t.field({ type: QueueRef, resolve: (r, _args, ctx) => getQueue(ctx, r.queueRow.id) }),
    kind: t.field({ type: RecommendationKindEnum, resolve: (r) => r.kind }),
    suggestion: t.field({ type: RecommendationSuggestionEnum, resolve: (r) => r.suggestion }),
    currentNominalGpus: t.float({
      description: "The queue's GPU nominal now (MIG and time-slice flavors in device equivalents).",
      resolve: (r) => r.currentNominalGpus,
    }),
    suggestedNominalGpus: t.float({ resolve: (r) => r.suggestedNominalGpus }),
    evidence: t.string({
      description: 'The figures behind it: hours, mean and peak use, share of hours borrowing.',
      resolve: (r) => r.evidence,
    }),
  }),
});

builder.queryFields((t) => ({
  quotaRecommendations: t.field({
    type: [RecommendationRef],
    description:
      "Queues that under-use their GPU nominal (candidates for a shared pool) and queues that borrow nearly all the time (candidates for more nominal or a dedicated pool), from the last `days` of usage (1 to 90). Platform admins: every queue; tenant admins and auditors: their tenant's; others FORBIDDEN.",
    authScopes: { authenticated: true },
    args: { days: t.arg.int({ defaultValue: DEFAULT_RECOMMENDATION_DAYS }) },
    resolve: (_root, { days }, ctx) => quotaRecommendations(ctx, days ?? DEFAULT_RECOMMENDATION_DAYS),
  }),
}));
