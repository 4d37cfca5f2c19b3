import type { ProjectRole, TenantRole } from '../persistence/tenancy/index.js';
import type { TenantFilterParams } from '../persistence/tenant-filter.js';
import { type Capability, PLATFORM_CAPABILITIES, ROLE_CAPABILITIES } from './capabilities.js';

/** Who is calling, resolved once per request (HTTP) or connection (WebSocket). */
export interface Principal {
  kind: 'user' | 'api-token';
  userId: string;
  email: string;
  name: string;
  /** A platform operator: configures the platform, sees every tenant's capacity and queues, not their
   * content.
   */
  isPlatformAdmin: boolean;
  /** tenant id → role. For an API token: only the token's tenant. */
  roles: ReadonlyMap<string, TenantRole>;
  /** project id → the person's own role there (tenant admins need none: they administer every project). */
  projectRoles: ReadonlyMap<string, { tenantId: string; role: ProjectRole }>;
  /** tenant id → the platform admin's open break-glass grant there (only unexpired, unclosed ones are
   * loaded).
   */
  breakGlass: ReadonlyMap<string, { grantId: string; expiresAt: number }>;
  /** Present for API tokens: the token's id, tenant (null for a platform token) and granted scopes. */
  token?: { id: string; tenantId: string | null; scopes: ReadonlySet<Capability> };
}

/** The ORM tenant filter for this caller: every tenant for platform admins, else their own. */
export function tenantFilterFor(principal: Principal | null): TenantFilterParams {
  return principal?.isPlatformAdmin
    ? { all: true }
    : { tenantIds: principal ? [...principal.roles.keys()] : [] };
}

export function roleIn(principal: Principal | null, tenantId: string): TenantRole | undefined {
  return principal?.roles.get(tenantId);
}

/** True when the caller may see that the tenant exists. */
export function canSeeTenant(principal: Principal | null, tenantId: string): boolean {
  if (!principal) return false;
  if (principal.isPlatformAdmin) return true;
  return principal.roles.has(tenantId);
}

/**
 * How the caller holds a capability in a tenant, or null when they do not:
 * - 'role': their tenant role (narrowed by an API token's scopes);
 * - 'platform': a platform admin's view of every tenant (capacity, queues, job metadata);
 * - 'break-glass': a platform admin's open grant for this tenant (every use is audited).
 */
export type Access = 'role' | 'platform' | 'break-glass';

export function accessFor(
  principal: Principal | null,
  tenantId: string,
  capability: Capability,
): Access | null {
  if (!principal) return null;
  if (principal.token && principal.token.tenantId !== null) {
    if (principal.token.tenantId !== tenantId || !principal.token.scopes.has(capability)) return null;
  }
  const role = principal.roles.get(tenantId);
  if (role !== undefined && ROLE_CAPABILITIES[role].has(capability)) return 'role';
  if (!principal.isPlatformAdmin) return null;
  if (PLATFORM_CAPABILITIES.has(capability)) return 'platform';
  return principal.breakGlass.has(tenantId) ? 'break-glass' : null;
}

export function hasCapability(
  principal: Principal | null,
  tenantId: string,
  capability: Capability,
): boolean {
  return accessFor(principal, tenantId, capability) !== null;
}
