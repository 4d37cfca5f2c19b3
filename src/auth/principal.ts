import type { TenantFilterParams, TenantRole } from '../persistence/entities.js';
import { ROLE_CAPABILITIES, type Capability } from './capabilities.js';

/** Who is calling, resolved once per request (HTTP) or connection (WebSocket). */
export interface Principal {
  kind: 'user' | 'api-token';
  userId: string;
  email: string;
  name: string;
  isPlatformAdmin: boolean;
  /** tenant id → role. For an API token: only the token's tenant. */
  roles: ReadonlyMap<string, TenantRole>;
  /** Present for API tokens: the token's id, tenant (null for a platform token) and granted scopes. */
  token?: { id: string; tenantId: string | null; scopes: ReadonlySet<Capability> };
}

/** The ORM tenant filter for this caller: every tenant for platform admins, else their own. */
export function tenantFilterFor(principal: Principal | null): TenantFilterParams {
  return principal?.isPlatformAdmin ? { all: true } : { tenantIds: principal ? [...principal.roles.keys()] : [] };
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

export function hasCapability(principal: Principal | null, tenantId: string, capability: Capability): boolean {
  if (!principal) return false;
  if (principal.token && principal.token.tenantId !== null) {
    if (principal.token.tenantId !== tenantId || !principal.token.scopes.has(capability)) return false;
  } else if (principal.isPlatformAdmin) {
    // Platform admins (and their platform tokens) act in every tenant.
    return true;
  }
  const role = principal.roles.get(tenantId);
  return role !== undefined && ROLE_CAPABILITIES[role].has(capability);
}
