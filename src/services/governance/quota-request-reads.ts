// Reading quota requests: one by id, a page of them, and the people named on one, each as the
// caller may see them (tenant:read in the request's tenant; platform admins: every tenant).
import { QuotaRequest, type QuotaRequestStatus } from '../../persistence/governance/index.js';
import { Membership, User } from '../../persistence/tenancy/index.js';
import { notFound } from '../../shared/index.js';
import { callerHasCapability, requireCapability, requirePrincipal, type ServiceContext } from '../context.js';
import { findPage, type PageQuery } from '../paging.js';

/** A request by id: tenant:read in its tenant (platform admins: every tenant); another tenant's is
 * NOT_FOUND.
 */
export async function getQuotaRequest(ctx: ServiceContext, id: string): Promise<QuotaRequest> {
  requirePrincipal(ctx);
  const request = await ctx.em.findOne(QuotaRequest, { id });
  if (!request) throw notFound('QuotaRequest');
  requireCapability(ctx, request.tenant.id, 'tenant:read', 'QuotaRequest');
  return request;
}

/**
 * Requests, oldest first. Platform admins: every tenant's (or one tenant's); others: those of the
 * tenants where they hold tenant:read (or of the one named).
 */
export async function listQuotaRequests(
  ctx: ServiceContext,
  filter: { tenantId?: string | null; status?: QuotaRequestStatus | null },
  page: PageQuery,
): Promise<QuotaRequest[]> {
  const principal = requirePrincipal(ctx);
  let tenants: string[] | null;
  if (filter.tenantId) {
    requireCapability(ctx, filter.tenantId, 'tenant:read', 'Tenant');
    tenants = [filter.tenantId];
  } else if (principal.isPlatformAdmin && !principal.token?.tenantId) {
    tenants = null;
  } else {
    tenants = [...principal.roles.keys()].filter((tenantId) =>
      callerHasCapability(ctx, tenantId, 'tenant:read'),
    );
  }
  const where = {
    ...(tenants ? { tenant: { $in: tenants } } : {}),
    ...(filter.status ? { status: filter.status } : {}),
  };
  return findPage(ctx.em, QuotaRequest, where, page);
}

/** A person on a request: their name as the request's tenant sees it (the name typed when added, until they
 * accept).
 */
export async function personOnRequest(
  ctx: ServiceContext,
  request: QuotaRequest,
  userId: string,
): Promise<{ id: string; email: string; name: string } | null> {
  const user = await ctx.em.findOne(User, { id: userId });
  if (!user) return null;
  const membership = await ctx.em.findOne(
    Membership,
    { tenant: request.tenant.id, user: userId },
    { filters: false },
  );
  return { id: user.id, email: user.email, name: membership?.invitedName ?? user.name };
}
