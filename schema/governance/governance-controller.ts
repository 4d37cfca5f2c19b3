import { encodeGlobalID } from '@pothos/plugin-relay';
import { z } from 'zod';
import { getQueue } from '../../src/services/cluster/index.js';
import type { ControllerQueueInput, LimitSetting } from '../../src/services/governance/index.js';
import {
  type GovernanceControllerView,
  governanceController,
  type LimitAdjustmentView,
  limitAdjustments,
  MAX_WINDOW_SECONDS,
  MIN_WINDOW_SECONDS,
  setGovernanceController,
} from '../../src/services/governance/index.js';
import { FairwayError } from '../../src/shared/index.js';
import { builder } from '../builder.js';
import { QueueRef } from '../refs.js';

const AdjustmentReasonEnum = builder.enumType('LimitAdjustmentReason', {
  values: {
    LEND_IDLE: {
      description: "The queue's share sat idle with nothing waiting and its SLA met: it lends more.",
    },
    TIGHTEN_LENDING: {
      description: 'Its own jobs waited for their nominal (too long, or the SLA was missed): it lends less.',
    },
    TIGHTEN_BORROWING: {
      description: 'It borrowed while a lender of the cohort had to tighten: it may borrow less.',
    },
    RELAX_BORROWING: { description: 'It had jobs waiting and no queue tightened: it may borrow more.' },
    CONTROLLER_OFF: {
      description: 'The controller was switched off: the static setting of its policy applies again.',
    },
  } as const,
});

const LimitCoefficientsRef = builder.objectRef<LimitSetting>('LimitCoefficients').implement({
  description: "A queue's lending and borrowing coefficients (the policy's bounds hold them).",
  fields: (t) => ({
    lend: t.exposeFloat('lend', { description: 'Share of unused nominal that may be lent (0..1).' }),
    borrow: t.float({
      nullable: true,
      description: 'Borrowing limit as a multiple of nominal; null: unlimited.',
      resolve: (s) => s.borrow,
    }),
  }),
});

const ControllerInputRef = builder
  .objectRef<ControllerQueueInput & { windowStart: number | null; windowEnd: number | null }>(
    'ControllerWindowInput',
  )
  .implement({
    description:
      'What the controller read about the queue over the window it decided on (GPU means are time-weighted over the window).',
    fields: (t) => ({
      windowStart: t.field({
        type: 'DateTime',
        nullable: true,
        resolve: (i) => (i.windowStart === null ? null : new Date(i.windowStart)),
      }),
      windowEnd: t.field({
        type: 'DateTime',
        nullable: true,
        resolve: (i) => (i.windowEnd === null ? null : new Date(i.windowEnd)),
      }),
      nominalGpus: t.exposeFloat('nominalGpus'),
      usedGpus: t.exposeFloat('usedGpus', { description: 'Mean GPUs its own jobs held.' }),
      lentGpus: t.exposeFloat('lentGpus', {
        description: 'Mean GPUs of its unused nominal that other queues held.',
      }),
      borrowedGpus: t.exposeFloat('borrowedGpus', { description: 'Mean GPUs it held above its nominal.' }),
      pendingGpus: t.exposeFloat('pendingGpus', {
        description: "GPUs its pending jobs asked for at the window's end.",
      }),
      oldestWaitSeconds: t.float({
        description: "Longest wait of its pending jobs at the window's end.",
        resolve: (i) => i.oldestWaitMs / 1000,
      }),
      slaEligible: t.exposeInt('slaEligible', {
        description: 'Jobs submitted in the window that fitted its unused nominal.',
      }),
      slaMet: t.exposeInt('slaMet', { description: 'Of them, those admitted within the wait limit.' }),
      utilization: t.float({
        nullable: true,
        description: 'Mean probed GPU utilization of its jobs in the window (0..1); null without samples.',
        resolve: (i) => i.utilization,
      }),
    }),
  });

const LimitAdjustmentRef = builder.objectRef<LimitAdjustmentView>('LimitAdjustment').implement({
  description:
    "An audited change of a queue's lending and borrowing coefficients by the controller (or their restore when it was switched off).",
  fields: (t) => ({
    at: t.field({ type: 'DateTime', resolve: (a) => a.at }),
    queue: t.field({
      type: QueueRef,
      nullable: true,
      resolve: async (a, _args, ctx) => {
        try {
          return await getQueue(ctx, a.queueId);
        } catch (error) {
          if (error instanceof FairwayError && error.code === 'NOT_FOUND') return null;
          throw error;
        }
      },
    }),
    policy: t.string({
      nullable: true,
      description: 'The isolation policy whose bounds held the move.',
      resolve: (a) => a.policy,
    }),
    from: t.field({ type: LimitCoefficientsRef, resolve: (a) => a.from }),
    to: t.field({ type: LimitCoefficientsRef, resolve: (a) => a.to }),
    reasons: t.field({ type: [AdjustmentReasonEnum], resolve: (a) => a.reasons as never }),
    input: t.field({
      type: ControllerInputRef,
      nullable: true,
      description: 'The figures it was decided from; null for a restore.',
      resolve: (a) => (a.input ? { ...a.input, windowStart: a.windowStart, windowEnd: a.windowEnd } : null),
    }),
    auditEventId: t.id({
      description:
        'The audit event that records it (with every input, the settings and the policy coefficients).',
      resolve: (a) => encodeGlobalID('AuditEvent', a.auditEventId),
    }),
  }),
});

const GovernanceControllerRef = builder
  .objectRef<GovernanceControllerView>('GovernanceController')
  .implement({
    description:
      "The second-level controller: every window it moves governed queues' lending and borrowing coefficients within their policies' bounds.",
    fields: (t) => ({
      enabled: t.exposeBoolean('enabled', { description: 'Off: every queue has its static setting.' }),
      windowSeconds: t.exposeInt('windowSeconds'),
      lastRunAt: t.field({
        type: 'DateTime',
        nullable: true,
        description: 'When the last window was decided (null before the first).',
        resolve: (c) => c.lastRunAt,
      }),
      lastAdjustments: t.field({
        type: [LimitAdjustmentRef],
        description: 'What the last window changed.',
        resolve: (c) => c.lastAdjustments,
      }),
    }),
  });

builder.objectFields(QueueRef, (t) => ({
  limitAdjustments: t.field({
    type: [LimitAdjustmentRef],
    nullable: true,
    description:
      "The controller's audited changes of this queue's coefficients, newest first. Its tenant's auditors and admins (audit:read) and platform admins; others get null with FORBIDDEN.",
    args: { first: t.arg.int({ defaultValue: 20, validate: z.number().int().min(1).max(500) }) },
    resolve: (q, args, ctx) => limitAdjustments(ctx, q, args.first ?? 20),
  }),
}));

builder.queryFields((t) => ({
  governanceController: t.field({
    type: GovernanceControllerRef,
    description: 'Whether the controller runs, its window, and its last run. Platform admins.',
    authScopes: { platformAdmin: true },
    resolve: (_r, _a, ctx) => governanceController(ctx),
  }),
}));

builder.mutationFields((t) => ({
  setGovernanceController: t.field({
    type: GovernanceControllerRef,
    description:
      "Switches the controller on or off and sets its window. Off restores every queue's static setting at once (audited per queue, LIMITS_ADJUSTED with CONTROLLER_OFF). Platform admins.",
    authScopes: { platformAdmin: true },
    args: {
      enabled: t.arg.boolean({ required: true }),
      windowSeconds: t.arg.int({
        description: 'Unset: unchanged (the installation default until set).',
        validate: z.number().int().min(MIN_WINDOW_SECONDS).max(MAX_WINDOW_SECONDS),
      }),
    },
    resolve: (_r, args, ctx) =>
      setGovernanceController(ctx, { enabled: args.enabled, windowSeconds: args.windowSeconds }),
  }),
}));
