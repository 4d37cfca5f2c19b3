import { AuditEvent } from '../persistence/entities.js';
import { requireCapability, requirePrincipal, type ServiceContext } from './context.js';
import { forbidden, notFound } from '../shared/client-errors.js';
import { findPage, type PageQuery } from './paging.js';

export async function listAuditEvents(ctx: ServiceContext, tenantId: string, page: PageQuery): Promise<AuditEvent[]> {
  requireCapability(ctx, tenantId, 'audit:read', 'Tenant');
  return findPage(ctx.em, AuditEvent, { tenant: tenantId }, page, ['actor']);
}

/** Platform-level events (no tenant): refused probes, platform tokens. Platform admins only. */
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
  requireCapability(ctx, event.tenant.id, 'audit:read', 'Audit event');
  return event;
}
