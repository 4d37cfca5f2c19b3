import {
  etaUnknownReasonOf,
  etaUnknownText,
  holdAmountsVisible,
  type JobExplanation,
  type NodeFit,
  nodeFitOf,
  pendingReasonMessage,
} from '../../src/services/jobs/index.js';
import { builder } from '../builder.js';
import { ResourceEnum } from '../cluster/index.js';

const NodeFitRef = builder.objectRef<NodeFit>('NodeFit').implement({
  description:
    'NoNodeFits: the free capacity of one flavor against the pods the job needs (GPUs, slices or shares).',
  fields: (t) => ({
    flavor: t.exposeString('flavor'),
    largestFreeOnOneNode: t.float({
      description: 'The most free units on any single eligible node.',
      resolve: (f) => f.largestFreeGpusOnOneNode,
    }),
    free: t.float({ description: 'Free units summed over the eligible nodes.', resolve: (f) => f.freeGpus }),
    podsNeeded: t.exposeInt('podsNeeded'),
    perPod: t.float({ resolve: (f) => f.gpusPerPod }),
  }),
});

export const PendingReasonRef = builder.objectRef<JobExplanation>('PendingReason').implement({
  description: 'Why a job waits, and the numbers behind it.',
  fields: (t) => ({
    code: t.string({
      description:
        'WaitingForQuota, ExceedsMaxQuota, NoNodeFits, NoFittingNode, WindowClosed, StrictFIFOBlocked, WaitingForPreemption, BudgetExhausted, NotYetEvaluated…',
      resolve: (e) => e.reason ?? 'NotYetEvaluated',
    }),
    message: t.string({
      description:
        'Rendered for the reader: names another job only when it is one of this tenant\'s jobs you may read, else "a job of another tenant".',
      resolve: (e, _a, ctx) => pendingReasonMessage(ctx, e),
    }),
    flavor: t.string({ nullable: true, resolve: (e) => e.shortfall?.flavor ?? null }),
    resource: t.field({ type: ResourceEnum, nullable: true, resolve: (e) => e.shortfall?.resource ?? null }),
    requested: t.float({ nullable: true, resolve: (e) => e.shortfall?.requested ?? null }),
    available: t.float({ nullable: true, resolve: (e) => e.shortfall?.available ?? null }),
    nominal: t.float({ nullable: true, resolve: (e) => e.shortfall?.nominal ?? null }),
    borrowingLimit: t.float({ nullable: true, resolve: (e) => e.shortfall?.borrowingLimit ?? null }),
    used: t.float({ nullable: true, resolve: (e) => e.shortfall?.used ?? null }),
    nodeFit: t.field({
      type: [NodeFitRef],
      nullable: true,
      description: 'NoNodeFits only: per flavor tried, the largest free block on one node.',
      resolve: (e) => nodeFitOf(e),
    }),
    budgetSpent: t.float({
      nullable: true,
      description:
        'BudgetExhausted: month-to-date spend of the exhausted budget (null for readers who may not see money).',
      resolve: async (e, _a, ctx) => ((await holdAmountsVisible(ctx, e)) ? e.hold!.spent : null),
    }),
    budgetLimit: t.float({
      nullable: true,
      description: 'BudgetExhausted: its monthly amount (null for readers who may not see money).',
      resolve: async (e, _a, ctx) => ((await holdAmountsVisible(ctx, e)) ? e.hold!.limit : null),
    }),
    budgetCurrency: t.string({
      nullable: true,
      description: 'BudgetExhausted: currency of the amounts.',
      resolve: (e) => e.hold?.currency ?? null,
    }),
    budgetPeriod: t.string({
      nullable: true,
      description: "BudgetExhausted: the UTC month ('YYYY-MM').",
      resolve: (e) => e.hold?.period ?? null,
    }),
    budgetScope: t.string({
      nullable: true,
      description: "BudgetExhausted: 'tenant' or 'project'.",
      resolve: (e) => e.hold?.scope ?? null,
    }),
    reservedFrom: t.field({
      type: 'DateTime',
      nullable: true,
      description:
        'Bounded tails: the job has waited long, and nodes are reserved for it from this instant (jobs that would borrow and still run then are kept off them).',
      resolve: (e) => (e.reservation ? new Date(e.reservation.start) : null),
    }),
    reservedNodes: t.int({
      nullable: true,
      description: 'How many nodes are reserved for it (with reservedFrom).',
      resolve: (e) => e.reservation?.nodes.length ?? null,
    }),
    keptOffReservedNodes: t.int({
      nullable: true,
      description:
        "Nodes with room for its pods that it may not use: they are reserved for a job that has waited long, and this job would borrow and still run when that job's reservation starts.",
      resolve: (e) => e.keptOffReserved?.nodes ?? null,
    }),
    keptOffReservedFrom: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When the reservation that keeps it off those nodes starts.',
      resolve: (e) => (e.keptOffReserved ? new Date(e.keptOffReserved.start) : null),
    }),
    etaUnknownReason: t.string({
      nullable: true,
      description:
        'Why eta is null: NoDeclaredDuration, TooFarAhead, NeverFits, WindowClosed or BudgetExhausted (null when there is an ETA).',
      resolve: (e) => etaUnknownReasonOf(e),
    }),
    etaUnknownMessage: t.string({
      nullable: true,
      description: 'The same, in words.',
      resolve: (e) => etaUnknownText(etaUnknownReasonOf(e)),
    }),
  }),
});
