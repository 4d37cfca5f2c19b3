import { encodeGlobalID } from '@pothos/plugin-relay';
import type { TenantEventPayload } from '../src/events/bus.js';
import { requireCapability } from '../src/services/context.js';
import { builder } from './builder.js';
import { decodeId } from './common.js';
import { reloadingSubscription } from './reloading-subscription.js';

const TenantEventKindEnum = builder.enumType('TenantEventKind', { values: ['ADMITTED', 'PREEMPTED', 'QUOTA_CHANGED', 'WINDOW_CHANGED', 'ADMITTED_NOT_RUNNING'] as const });

const TenantEventRef = builder.objectRef<TenantEventPayload>('TenantEvent').implement({
  description: "Something that happened to the tenant's jobs or quota.",
  fields: (t) => ({
    kind: t.field({ type: TenantEventKindEnum, resolve: (e) => e.kind }),
    at: t.field({ type: 'DateTime', resolve: (e) => new Date(e.at) }),
    jobId: t.id({ nullable: true, resolve: (e) => ('jobId' in e ? encodeGlobalID('Job', e.jobId) : null) }),
    queueId: t.id({ resolve: (e) => encodeGlobalID('Queue', e.queueId) }),
    reason: t.string({ nullable: true, description: 'Preemptions: reclaim, priority, fair-share, window-closed or idle.', resolve: (e) => (e.kind === 'PREEMPTED' ? e.reason : null) }),
    preemptorJobId: t.id({
      nullable: true,
      description: 'The preempting job, only when it belongs to the same tenant.',
      resolve: (e) => (e.kind === 'PREEMPTED' && e.preemptorJobId ? encodeGlobalID('Job', e.preemptorJobId) : null),
    }),
    borrowed: t.boolean({ nullable: true, resolve: (e) => (e.kind === 'ADMITTED' ? e.borrowed : null) }),
    message: t.string({
      nullable: true,
      description: 'ADMITTED_NOT_RUNNING: why the pods are not running, as the backend reports it (unschedulable, image pull…).',
      resolve: (e) => (e.kind === 'ADMITTED_NOT_RUNNING' ? e.message : null),
    }),
  }),
});

builder.subscriptionFields((t) => ({
  tenantEvents: t.field({
    type: TenantEventRef,
    description: 'Admissions, preemptions (with reason), admitted jobs whose pods do not run, quota and window changes of a tenant. Needs jobs:read.',
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id({ required: true }) },
    ...reloadingSubscription({
      watch: ({ tenantId }: { tenantId: string | number }, ctx) => {
        const id = decodeId(String(tenantId), 'Tenant');
        requireCapability(ctx, id, 'jobs:read', 'Tenant');
        return id;
      },
      source: (tenantId, ctx) => ctx.events.subscribe('tenant-event', tenantId),
      // The payload is values, not a row: what is checked again is the caller's jobs:read now.
      reload: (event, { tenantId }, ctx) => {
        requireCapability(ctx, decodeId(String(tenantId), 'Tenant'), 'jobs:read', 'Tenant');
        return event;
      },
    }),
  }),
}));
