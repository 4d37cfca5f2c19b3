import { encodeGlobalID } from '@pothos/plugin-relay';
import type { TenantEventPayload } from '../../src/events/index.js';
import { requireCapability } from '../../src/services/context.js';
import { flagMessage, type StoredJobFlag } from '../../src/services/governance/index.js';
import { canSeeMoney } from '../../src/services/metering/index.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';
import { GovernanceFlagRef } from '../governance/index.js';
import { reloadingSubscription } from '../reloading-subscription.js';

const TenantEventKindEnum = builder.enumType('TenantEventKind', {
  values: [
    'ADMITTED',
    'PREEMPTED',
    'QUOTA_CHANGED',
    'WINDOW_CHANGED',
    'ADMITTED_NOT_RUNNING',
    'DISRUPTED',
    'BUDGET_ALERT',
    'QUOTA_REQUEST',
    'JOB_FLAGGED',
    'LIMITS_ADJUSTED',
  ] as const,
});

const TenantEventRef = builder.objectRef<TenantEventPayload>('TenantEvent').implement({
  description: "Something that happened to the tenant's jobs, quota or budgets.",
  fields: (t) => ({
    kind: t.field({ type: TenantEventKindEnum, resolve: (e) => e.kind }),
    at: t.field({ type: 'DateTime', resolve: (e) => new Date(e.at) }),
    jobId: t.id({ nullable: true, resolve: (e) => ('jobId' in e ? encodeGlobalID('Job', e.jobId) : null) }),
    queueId: t.id({
      nullable: true,
      description: 'Null for BUDGET_ALERT.',
      resolve: (e) => ('queueId' in e ? encodeGlobalID('Queue', e.queueId) : null),
    }),
    reason: t.string({
      nullable: true,
      description:
        "Preemptions: reclaim, priority, fair-share, window-closed, idle or not-running (the last two: reclaimed by the queue's isolation policy, see flag).",
      resolve: (e) => (e.kind === 'PREEMPTED' ? e.reason : null),
    }),
    preemptorJobId: t.id({
      nullable: true,
      description: 'The preempting job, only when it belongs to the same tenant.',
      resolve: (e) =>
        e.kind === 'PREEMPTED' && e.preemptorJobId ? encodeGlobalID('Job', e.preemptorJobId) : null,
    }),
    lostGpuHours: t.float({
      nullable: true,
      description:
        "PREEMPTED: GPU-hours of the job's work lost (since its last checkpoint, or since admission); null when unknown.",
      resolve: (e) => (e.kind === 'PREEMPTED' ? (e.lostGpuHours ?? null) : null),
    }),
    borrowed: t.boolean({ nullable: true, resolve: (e) => (e.kind === 'ADMITTED' ? e.borrowed : null) }),
    message: t.string({
      nullable: true,
      description:
        'ADMITTED_NOT_RUNNING: why the pods are not running, as the backend reports it (unschedulable, image pull…). DISRUPTED: what the cluster did (eviction, drain, a lost node…); the job is pending again. JOB_FLAGGED, and PREEMPTED with reason idle or not-running: the flag in words, with its numbers.',
      resolve: (e) =>
        e.kind === 'ADMITTED_NOT_RUNNING' || e.kind === 'DISRUPTED'
          ? e.message
          : e.kind === 'JOB_FLAGGED'
            ? flagMessage(e.flag as StoredJobFlag)
            : e.kind === 'PREEMPTED'
              ? (e.message ?? null)
              : null,
    }),
    // QUOTA_REQUEST: which of the tenant's quota requests was made or changed, and its status now.
    requestId: t.id({
      nullable: true,
      resolve: (e) => (e.kind === 'QUOTA_REQUEST' ? encodeGlobalID('QuotaRequest', e.requestId) : null),
    }),
    requestStatus: t.string({
      nullable: true,
      description: 'QUOTA_REQUEST: PENDING, APPROVED, ACTIVE, EXPIRED, REJECTED or CANCELLED.',
      resolve: (e) => (e.kind === 'QUOTA_REQUEST' ? e.status : null),
    }),
    // LIMITS_ADJUSTED: the queue's coefficients now in force and why (the controller's rules, or
    // CONTROLLER_OFF).
    lend: t.float({
      nullable: true,
      description: 'LIMITS_ADJUSTED: share of unused nominal the queue now lends (0..1).',
      resolve: (e) => (e.kind === 'LIMITS_ADJUSTED' ? e.lend : null),
    }),
    borrow: t.float({
      nullable: true,
      description:
        'LIMITS_ADJUSTED: borrowing limit as a multiple of nominal; null: unlimited (see borrowUnlimited).',
      resolve: (e) => (e.kind === 'LIMITS_ADJUSTED' ? e.borrow : null),
    }),
    borrowUnlimited: t.boolean({
      nullable: true,
      description: 'LIMITS_ADJUSTED: true when the queue may borrow without limit.',
      resolve: (e) => (e.kind === 'LIMITS_ADJUSTED' ? e.borrow === null : null),
    }),
    adjustmentReasons: t.stringList({
      nullable: true,
      description:
        'LIMITS_ADJUSTED: LEND_IDLE, TIGHTEN_LENDING, TIGHTEN_BORROWING, RELAX_BORROWING or CONTROLLER_OFF.',
      resolve: (e) => (e.kind === 'LIMITS_ADJUSTED' ? e.reasons : null),
    }),
    // JOB_FLAGGED (and PREEMPTED for reasons idle / not-running): the governance flag with its numbers.
    flag: t.field({
      type: GovernanceFlagRef,
      nullable: true,
      description:
        "JOB_FLAGGED, and PREEMPTED with reason idle or not-running: the flag raised by the queue's isolation policy, with its numbers.",
      resolve: (e) =>
        e.kind === 'JOB_FLAGGED'
          ? (e.flag as StoredJobFlag)
          : e.kind === 'PREEMPTED'
            ? ((e.flag ?? null) as StoredJobFlag | null)
            : null,
    }),
    // BUDGET_ALERT: which budget crossed which threshold, and (for callers who may see money) the amounts.
    budgetId: t.id({
      nullable: true,
      resolve: (e) => (e.kind === 'BUDGET_ALERT' ? encodeGlobalID('Budget', e.budgetId) : null),
    }),
    projectId: t.id({
      nullable: true,
      description: "BUDGET_ALERT: the budget's project; null for the tenant's own budget.",
      resolve: (e) =>
        e.kind === 'BUDGET_ALERT' && e.projectId ? encodeGlobalID('Project', e.projectId) : null,
    }),
    threshold: t.int({
      nullable: true,
      description: 'BUDGET_ALERT: the percent of the monthly amount crossed.',
      resolve: (e) => (e.kind === 'BUDGET_ALERT' ? e.threshold : null),
    }),
    spent: t.float({
      nullable: true,
      description:
        'BUDGET_ALERT: spent this period when it fired; null unless you may see money (tenant admins, auditors, platform admins).',
      resolve: (e) => (e.kind === 'BUDGET_ALERT' ? e.spent : null),
    }),
    limit: t.float({
      nullable: true,
      description: "BUDGET_ALERT: the budget's monthly amount; null unless you may see money.",
      resolve: (e) => (e.kind === 'BUDGET_ALERT' ? e.limit : null),
    }),
    currency: t.string({ nullable: true, resolve: (e) => (e.kind === 'BUDGET_ALERT' ? e.currency : null) }),
    period: t.string({
      nullable: true,
      description: "BUDGET_ALERT: the UTC month, 'YYYY-MM'.",
      resolve: (e) => (e.kind === 'BUDGET_ALERT' ? e.period : null),
    }),
  }),
});

builder.subscriptionFields((t) => ({
  tenantEvents: t.field({
    type: TenantEventRef,
    description:
      'Admissions, preemptions (with reason), admitted jobs whose pods do not run, quota and window changes, and budget alerts of a tenant. Needs jobs:read; the amounts of a budget alert need the right to see money (tenant admins, auditors, platform admins), else they are null.',
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id({ required: true }) },
    ...reloadingSubscription({
      watch: ({ tenantId }: { tenantId: string | number }, ctx) => {
        const id = decodeId(String(tenantId), 'Tenant');
        requireCapability(ctx, id, 'jobs:read', 'Tenant');
        return id;
      },
      source: (tenantId, ctx) => ctx.events.subscribe('tenant-event', tenantId),
      // The payload is values, not a row: what is checked again is the caller's jobs:read now,
      // and (budget alerts) whether the caller may see money: otherwise the amounts are null.
      reload: (event, { tenantId }, ctx) => {
        const id = decodeId(String(tenantId), 'Tenant');
        requireCapability(ctx, id, 'jobs:read', 'Tenant');
        return event.kind === 'BUDGET_ALERT' && !canSeeMoney(ctx, id)
          ? { ...event, spent: null, limit: null }
          : event;
      },
    }),
  }),
}));
