import {
  encodeGlobalID,
  type ResolveCursorConnectionArgs,
  resolveCursorConnection,
} from '@pothos/plugin-relay';
import {
  getAuditEvent,
  listAuditEvents,
  listPlatformAuditEvents,
  visibleAuditInput,
} from '../../src/services/audit/index.js';
import { requireCapability } from '../../src/services/context.js';
import { visibleEmail } from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import { AuditOutcomeEnum, decodeId, pageFrom, toCursor } from '../common.js';
import { AuditEventRef, TenantRef } from '../refs.js';
import { reloadingSubscription } from '../reloading-subscription.js';
import { isEntity, tenantConnection } from '../tenancy/index.js';

builder.node(AuditEventRef, {
  description: 'One mutation, who made it and how it ended; written in the same transaction as the change.',
  id: { resolve: (event) => event.id },
  isTypeOf: (value) => isEntity(value, 'AuditEvent'),
  fields: (t) => ({
    action: t.exposeString('action', {
      description: 'e.g. project.create, member.changeRole, apiToken.revoke',
    }),
    outcome: t.field({ type: AuditOutcomeEnum, resolve: (event) => event.outcome }),
    errorCode: t.string({ nullable: true, resolve: (event) => event.errorCode ?? null }),
    actorName: t.string({ nullable: true, resolve: (event) => event.actor?.name ?? null }),
    actorEmail: t.string({
      nullable: true,
      description:
        'Under the same rule as Member.email: tenant admins and the actor themself (platform admins: platform events, or under a break-glass grant).',
      resolve: (event, _args, ctx) =>
        event.actor ? visibleEmail(ctx, event.tenant?.id ?? null, event.actor) : null,
    }),
    viaApiToken: t.boolean({ resolve: (event) => event.actorTokenId !== null }),
    targetType: t.string({ nullable: true, resolve: (event) => event.targetType ?? null }),
    targetId: t.id({
      nullable: true,
      description: 'Global ID of what the mutation changed.',
      resolve: (event) =>
        event.targetType && event.targetId ? encodeGlobalID(event.targetType, event.targetId) : null,
    }),
    input: t.field({
      type: 'JSON',
      nullable: true,
      description:
        "The mutation input, secrets redacted. A tenant event's input: its auditors and admins (platform admins under a break-glass grant).",
      resolve: (event, _args, ctx) => visibleAuditInput(ctx, event),
    }),
    requestId: t.exposeString('requestId'),
    createdAt: t.field({ type: 'DateTime', resolve: (event) => event.createdAt }),
  }),
});

builder.objectFields(TenantRef, (t) => ({
  auditEvents: t.connection({
    type: AuditEventRef,
    description: 'Auditors and tenant admins.',
    authScopes: (tenant) => ({ capability: { tenantId: tenant.id, capability: 'audit:read' } }),
    resolve: (tenant, args, ctx) =>
      tenantConnection(args, tenant, (tenantId) => (page) => listAuditEvents(ctx, tenantId, page)),
  }),
}));

builder.queryFields((t) => ({
  auditEvents: t.connection({
    type: AuditEventRef,
    description:
      "A tenant's audit log (auditors and tenant admins), oldest first; page backwards with `last` for the newest.",
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) =>
      tenantConnection(
        args,
        { globalId: args.tenantId },
        (tenantId) => (page) => listAuditEvents(ctx, tenantId, page),
      ),
  }),
  platformAuditEvents: t.connection({
    type: AuditEventRef,
    description:
      'Every audit event, including refused attempts that belong to no tenant. Platform admins only.',
    authScopes: { platformAdmin: true },
    resolve: (_root, args, ctx) =>
      resolveCursorConnection({ args, toCursor }, (page: ResolveCursorConnectionArgs) =>
        listPlatformAuditEvents(ctx, pageFrom(page)),
      ),
  }),
}));

builder.subscriptionFields((t) => ({
  auditEventRecorded: t.field({
    type: AuditEventRef,
    description: 'Each audit event of a tenant as it is committed (auditors and tenant admins).',
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id({ required: true }) },
    ...reloadingSubscription({
      watch: ({ tenantId }: { tenantId: string | number }, ctx) => {
        const id = decodeId(String(tenantId), 'Tenant');
        requireCapability(ctx, id, 'audit:read', 'Tenant');
        return id;
      },
      source: (tenantId, ctx) => ctx.events.subscribe('audit-event', tenantId),
      // getAuditEvent checks audit:read again, so an event the caller may no longer read is dropped.
      reload: ({ auditEventId }, _args, ctx) => getAuditEvent(ctx, auditEventId),
    }),
  }),
}));
