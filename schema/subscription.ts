import { pipe, filter, map } from 'graphql-yoga';
import { getAuditEvent } from '../src/services/audit-events.js';
import { requireCapability } from '../src/services/context.js';
import { builder } from './builder.js';
import { freshContext } from './context.js';
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
      // Checked at subscribe time here, and again for every event by getAuditEvent.
      requireCapability(ctx, id, 'audit:read', 'Tenant');
      return pipe(
        ctx.events.subscribe('audit-event', id),
        map(async ({ auditEventId }) => {
          const fresh = await freshContext(ctx);
          // Lost access since subscribing (token revoked, membership removed): drop the event.
          return fresh ? getAuditEvent(fresh, auditEventId).catch(() => null) : null;
        }),
        filter((event): event is NonNullable<typeof event> => event !== null),
      );
    },
    resolve: (event) => event as never,
  }),
}));
