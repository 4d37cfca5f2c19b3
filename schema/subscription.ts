import { getAuditEvent } from '../src/services/audit-events.js';
import { requireCapability } from '../src/services/context.js';
import { builder } from './builder.js';
import { decodeId } from './common.js';
import { AuditEventRef } from './refs.js';

builder.subscriptionFields((t) => ({
  auditEventRecorded: t.field({
    type: AuditEventRef,
    description: "Each audit event of a tenant as it is committed (auditors and tenant admins).",
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id({ required: true }) },
    subscribe: (_root, { tenantId }, ctx) => {
      const id = decodeId(String(tenantId), 'Tenant');
      requireCapability(ctx, id, 'audit:read', 'Tenant');
      return ctx.events.subscribe('audit-event', id);
    },
    // Runs in the event's own context (the caller's rights now): getAuditEvent checks
    // audit:read again, and an event the caller may no longer read is dropped.
    resolve: ({ auditEventId }, _args, ctx) => getAuditEvent(ctx, auditEventId),
  }),
}));
