import { type ResolveCursorConnectionArgs, resolveCursorConnection } from '@pothos/plugin-relay';
import type { QuotaRequest } from '../../src/persistence/governance/index.js';
import { getQueue } from '../../src/services/cluster/index.js';
import { requirePlatformAdmin } from '../../src/services/context.js';
import {
  approveQuotaRequest,
  cancelQuotaRequest,
  getQuotaRequest,
  listQuotaRequests,
  personOnRequest,
  type QUOTA_REQUEST_STATUSES,
  rejectQuotaRequest,
  requestQuotaChange,
} from '../../src/services/governance/index.js';
import { getTenant, visibleEmail } from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import { ResourceEnum } from '../cluster/index.js';
import { decodeId, descriptionSchema, pageFrom, toCursor } from '../common.js';
import { QueueRef, TenantRef } from '../refs.js';
import { reloadingSubscription } from '../reloading-subscription.js';
import { isEntity } from '../tenancy/index.js';

export const QuotaRequestRef = builder.objectRef<QuotaRequest>('QuotaRequest');
export const QuotaRequestStatusEnum = builder.enumType('QuotaRequestStatus', {
  values: {
    PENDING: { description: 'Waiting for a platform admin.' },
    APPROVED: { description: 'Approved; applies at startsAt.' },
    ACTIVE: { description: "Applied: the queue's nominal is the one asked for." },
    EXPIRED: {
      description:
        'A temporary change that ended at expiresAt: the nominal went back by the granted difference.',
    },
    REJECTED: { description: 'Refused by a platform admin (decisionNote says why).' },
    CANCELLED: { description: "Withdrawn by the tenant's admins before it applied." },
  } satisfies Record<(typeof QUOTA_REQUEST_STATUSES)[number], unknown>,
});

builder.node(QuotaRequestRef, {
  description:
    "A tenant admin's request to change one nominal quota of a queue; platform admins approve or reject it.",
  id: { resolve: (request) => request.id },
  isTypeOf: (value) => isEntity(value, 'QuotaRequest'),
  fields: (t) => ({
    tenant: t.field({ type: TenantRef, resolve: (request, _args, ctx) => getTenant(ctx, request.tenant.id) }),
    queue: t.field({ type: QueueRef, resolve: (request, _args, ctx) => getQueue(ctx, request.queue.id) }),
    flavor: t.exposeString('flavor'),
    resource: t.field({
      type: ResourceEnum,
      resolve: (request) => request.resource as 'gpu' | 'cpu' | 'memory',
    }),
    nominal: t.float({ description: 'The nominal asked for.', resolve: (request) => request.nominal }),
    previousNominal: t.float({
      nullable: true,
      description: 'The nominal when the change applied; null before.',
      resolve: (request) => request.previousNominal ?? null,
    }),
    startsAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'Applies from then (null: on approval).',
      resolve: (request) => request.startsAt ?? null,
    }),
    expiresAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'Undone then by itself (null: for good).',
      resolve: (request) => request.expiresAt ?? null,
    }),
    justification: t.exposeString('justification'),
    status: t.field({ type: QuotaRequestStatusEnum, resolve: (request) => request.status }),
    requestedByName: t.string({
      nullable: true,
      resolve: async (request, _args, ctx) =>
        request.requestedBy
          ? ((await personOnRequest(ctx, request, request.requestedBy.id))?.name ?? null)
          : null,
    }),
    requestedByEmail: t.string({
      nullable: true,
      description:
        'Under the same rule as Member.email: tenant admins and the person themself (platform admins under a break-glass grant).',
      resolve: async (request, _args, ctx) => {
        const person = request.requestedBy
          ? await personOnRequest(ctx, request, request.requestedBy.id)
          : null;
        return person ? visibleEmail(ctx, request.tenant.id, person) : null;
      },
    }),
    decidedByName: t.string({
      nullable: true,
      description: 'The platform admin who approved or rejected it.',
      resolve: async (request, _args, ctx) =>
        request.decidedBy
          ? ((await personOnRequest(ctx, request, request.decidedBy.id))?.name ?? null)
          : null,
    }),
    decisionNote: t.string({ nullable: true, resolve: (request) => request.decisionNote ?? null }),
    decidedAt: t.field({ type: 'DateTime', nullable: true, resolve: (request) => request.decidedAt ?? null }),
    appliedAt: t.field({ type: 'DateTime', nullable: true, resolve: (request) => request.appliedAt ?? null }),
    endedAt: t.field({
      type: 'DateTime',
      nullable: true,
      description: 'When it expired or was cancelled.',
      resolve: (request) => request.endedAt ?? null,
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (request) => request.createdAt }),
  }),
});

const RequestQuotaChangeInput = builder.inputType('RequestQuotaChangeInput', {
  fields: (t) => ({
    queueId: t.id({ required: true }),
    flavor: t.string({ required: true, description: 'A flavor of the queue, or another known flavor.' }),
    resource: t.field({ type: ResourceEnum, defaultValue: 'gpu' }),
    nominal: t.float({
      required: true,
      description: 'The nominal asked for (0 or more, different from the current one).',
    }),
    startsAt: t.field({
      type: 'DateTime',
      description: 'Applies from then once approved; left out: on approval.',
    }),
    expiresAt: t.field({
      type: 'DateTime',
      description: 'Undone then by itself; after startsAt and now. Left out: for good.',
    }),
    justification: t.string({ required: true, description: 'Why (1 to 2000 characters).' }),
  }),
});

builder.queryFields((t) => ({
  quotaRequests: t.connection({
    type: QuotaRequestRef,
    description:
      "Quota requests, oldest first. Platform admins: every tenant's; others: their tenants' (tenant:read).",
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id(), status: t.arg({ type: QuotaRequestStatusEnum }) },
    resolve: (_root, args, ctx) =>
      resolveCursorConnection({ args, toCursor }, (page: ResolveCursorConnectionArgs) =>
        listQuotaRequests(
          ctx,
          {
            tenantId: args.tenantId ? decodeId(String(args.tenantId), 'Tenant') : null,
            status: args.status ?? null,
          },
          pageFrom(page),
        ),
      ),
  }),
  quotaRequest: t.field({
    type: QuotaRequestRef,
    description: "Another tenant's request answers NOT_FOUND, like one that never existed.",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => getQuotaRequest(ctx, decodeId(String(id), 'QuotaRequest')),
  }),
}));

builder.mutationFields((t) => ({
  requestQuotaChange: t.field({
    type: QuotaRequestRef,
    description:
      "Tenant admins: ask for a queue's nominal quota to change (PENDING until a platform admin decides). Platform admins change quotas directly (setQuota). Audited.",
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: RequestQuotaChangeInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      requestQuotaChange(ctx, {
        queueId: decodeId(String(input.queueId), 'Queue'),
        flavor: input.flavor,
        resource: input.resource ?? 'gpu',
        nominal: input.nominal,
        startsAt: input.startsAt ?? null,
        expiresAt: input.expiresAt ?? null,
        justification: input.justification,
      }),
  }),
  approveQuotaRequest: t.field({
    type: QuotaRequestRef,
    description:
      'Platform admins (not the requester): applies the change at once (ACTIVE) or at startsAt (APPROVED), atomically with the status and the audit entry. Only a PENDING request: else CONFLICT.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }), note: t.arg.string({ validate: descriptionSchema }) },
    resolve: (_root, { id, note }, ctx) =>
      approveQuotaRequest(ctx, decodeId(String(id), 'QuotaRequest'), note ?? null),
  }),
  rejectQuotaRequest: t.field({
    type: QuotaRequestRef,
    description: 'Platform admins (not the requester): refuses a PENDING request, saying why. Audited.',
    authScopes: { authenticated: true },
    args: {
      id: t.arg.id({ required: true }),
      note: t.arg.string({ required: true, validate: descriptionSchema }),
    },
    resolve: (_root, { id, note }, ctx) =>
      rejectQuotaRequest(ctx, decodeId(String(id), 'QuotaRequest'), note),
  }),
  cancelQuotaRequest: t.field({
    type: QuotaRequestRef,
    description:
      "The tenant's admins: withdraws a request that has not applied (PENDING, or APPROVED before startsAt). Audited.",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => cancelQuotaRequest(ctx, decodeId(String(id), 'QuotaRequest')),
  }),
}));

builder.subscriptionFields((t) => ({
  quotaRequestUpdates: t.field({
    type: QuotaRequestRef,
    description:
      'Platform admins: every quota request as it is made or changes status (any tenant). Tenants hear of their own through tenantEvents (QUOTA_REQUEST).',
    authScopes: { authenticated: true },
    ...reloadingSubscription({
      watch: (_args: Record<string, never>, ctx) => {
        requirePlatformAdmin(ctx);
        return null;
      },
      source: (_watched, ctx) => ctx.events.subscribe('quota-request'),
      // Read again under the caller's rights as they are now: a former platform admin gets nothing.
      reload: ({ requestId }, _args, ctx) => {
        requirePlatformAdmin(ctx);
        return getQuotaRequest(ctx, requestId);
      },
    }),
  }),
}));
