import type { Principal } from '../../auth/index.js';
import { accessFor } from '../../auth/index.js';
import { callerRoleIn, requireCapability, requirePlatformAdmin, type ServiceContext } from '../context.js';

/**
 * Who sees what of metering, decided here and nowhere else:
 * - every usage read needs usage:read in the tenant (a token's USAGE_READ scope);
 * - money (costs, prices applied to a tenant's usage, budget amounts) is for TENANT_ADMIN,
 *   AUDITOR and platform admins;
 * - MEMBER and VIEWER see only their own jobs' GPU-hours, never cost;
 * - the platform-wide view is for platform admins only.
 */

type AccessContext = Pick<ServiceContext, 'principal' | 'breakGlassReads'>;

/** What a caller's usage reads in one tenant are narrowed to. */
export interface UsageScope {
  /** Only this user's jobs (MEMBER, VIEWER); null: the whole tenant. */
  userId: string | null;
  /** Whether cost fields are answered (else null). */
  money: boolean;
}

/** Throws NOT_FOUND outside the tenant (as for an unknown id), FORBIDDEN without usage:read. */
export function requireUsageRead(ctx: ServiceContext, tenantId: string, what = 'Tenant'): Principal {
  return requireCapability(ctx, tenantId, 'usage:read', what);
}

/**
 * Money is visible to tenant admins, auditors and platform admins, all of whom also need
 * usage:read there (a token without USAGE_READ sees no money even if its owner could).
 * Non-throwing: field resolvers use it to answer null.
 */
export function canSeeMoney(ctx: AccessContext, tenantId: string): boolean {
  const principal = ctx.principal;
  if (!principal) return false;
  // accessFor, not callerHasCapability: a money check is not itself a read to note.
  if (accessFor(principal, tenantId, 'usage:read') === null) return false;
  if (principal.isPlatformAdmin) return true;
  const role = callerRoleIn(ctx, tenantId);
  return role === 'TENANT_ADMIN' || role === 'AUDITOR';
}

/** requireUsageRead, then how the caller's reads are narrowed in that tenant. */
export function usageScopeFor(ctx: ServiceContext, tenantId: string, what = 'Tenant'): UsageScope {
  const principal = requireUsageRead(ctx, tenantId, what);
  if (canSeeMoney(ctx, tenantId)) return { userId: null, money: true };
  // Everyone else who holds usage:read is a MEMBER or VIEWER: their own jobs only.
  return { userId: principal.userId, money: false };
}

/** The non-throwing twin of usageScopeFor (null: no usage access at all), for field resolvers. */
export function usageScopeIfAllowed(ctx: AccessContext, tenantId: string): UsageScope | null {
  const principal = ctx.principal;
  if (!principal || accessFor(principal, tenantId, 'usage:read') === null) return null;
  if (canSeeMoney(ctx, tenantId)) return { userId: null, money: true };
  return { userId: principal.userId, money: false };
}

/** The platform-wide view (every tenant, with money): platform admins (user or platform token) only. */
export function requirePlatformUsage(ctx: ServiceContext): Principal {
  return requirePlatformAdmin(ctx);
}
