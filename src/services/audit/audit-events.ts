import type { Principal } from '../../auth/index.js';
import { AuditEvent } from '../../persistence/audit/index.js';
import { forbidden, notFound } from '../../shared/index.js';
import {
  callerHasCapability,
  requireCapability,
  requirePrincipal,
  type ServiceContext,
  withoutReadNotes,
} from '../context.js';
import { findPage, type PageQuery } from '../paging.js';

/**
 * An operator's own break-glass records in a tenant's log (breakglass.open/read/close by
 * them) tell them nothing about the tenant. Reading them is not noted: otherwise, on the
 * audit subscription, each breakglass.read record would be a read that writes the next one.
 */
export function isOwnBreakGlassRecord(
  principal: Principal | null,
  event: { action: string; actor?: { id: string } | null },
): boolean {
  return !!principal && event.action.startsWith('breakglass.') && event.actor?.id === principal.userId;
}

/** The context to check an event's rights with: an operator's own break-glass records are checked without
 * being noted as reads.
 */
function checkingCtx(ctx: ServiceContext, event: AuditEvent): ServiceContext {
  return isOwnBreakGlassRecord(ctx.principal, event) ? withoutReadNotes(ctx) : ctx;
}

export async function listAuditEvents(
  ctx: ServiceContext,
  tenantId: string,
  page: PageQuery,
): Promise<AuditEvent[]> {
  requireCapability(ctx, tenantId, 'audit:read', 'Tenant');
  return findPage(ctx.em, AuditEvent, { tenant: tenantId }, page, ['actor']);
}

/**
 * An event's details (its input): for a tenant's event, holders of audit:read there
 * (auditors, tenant admins; a platform admin only under a break-glass grant, audited);
 * for a platform-level event, platform admins. Everyone else gets FORBIDDEN on the field.
 */
export function visibleAuditInput(ctx: ServiceContext, event: AuditEvent): Record<string, unknown> {
  const allowed = event.tenant
    ? callerHasCapability(checkingCtx(ctx, event), event.tenant.id, 'audit:read', 'audit details')
    : !!ctx.principal?.isPlatformAdmin;
  if (!allowed)
    throw forbidden(
      'Audit details inside a tenant are for its auditors and admins (platform admins: under a break-glass grant).',
    );
  return event.input;
}

/**
 * Every event, platform-level ones (refused probes, platform tokens) and tenants' alike;
 * a tenant event's details and actor e-mail stay under the tenant's rules. Platform admins only.
 */
export async function listPlatformAuditEvents(ctx: ServiceContext, page: PageQuery): Promise<AuditEvent[]> {
  const principal = requirePrincipal(ctx);
  if (!principal.isPlatformAdmin) throw forbidden('Only platform admins may read the platform audit log.');
  return findPage(ctx.em, AuditEvent, {}, page, ['actor']);
}

export async function getAuditEvent(ctx: ServiceContext, id: string): Promise<AuditEvent> {
  const principal = requirePrincipal(ctx);
  const event = await ctx.em.findOne(AuditEvent, { id }, { populate: ['actor'] });
  if (!event) throw notFound('Audit event');
  if (!event.tenant) {
    if (!principal.isPlatformAdmin) throw notFound('Audit event');
    return event;
  }
  requireCapability(checkingCtx(ctx, event), event.tenant.id, 'audit:read', 'Audit event');
  return event;
}
