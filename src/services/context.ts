import { AsyncLocalStorage } from 'node:async_hooks';
import type { EntityManager } from '@mikro-orm/core';
import type { Principal } from '../auth/index.js';
import { type Access, accessFor, canSeeTenant, roleIn } from '../auth/index.js';
import type { EventBus } from '../events/index.js';
import type { TenantRole } from '../persistence/tenancy/index.js';
import type { Loaders } from './loaders.js';
import type { JobLogsService } from './logs/index.js';
import type { SchedulerService } from './scheduling/index.js';
import type { BreakGlassReads } from './tenancy/index.js';

/**
 * The tenant a mutation's rights were checked in, for the caller who may see it: a refused
 * or failed mutation that named only an id is audited in that tenant's log rather than the
 * platform's (where platform admins would see a member's e-mail and targets). Set by
 * requireCapability inside auditedMutation (src/services/audit/audit.ts), which reads it.
 */
export const checkedTenant = new AsyncLocalStorage<{ tenantId: string | null }>();

import type { Capability } from '../auth/index.js';
import { MUTATING_ROLES } from '../auth/index.js';
import { forbidden, notFound, unauthenticated } from '../shared/index.js';

// The schema names callers and capabilities through the service context, never through src/auth.
export type { Capability, Principal };

/** What every use case gets: the request's own EntityManager, the caller and the request id. */
export interface ServiceContext {
  em: EntityManager;
  principal: Principal | null;
  requestId: string;
  now: () => Date;
  /** Where committed changes are announced (subscriptions). */
  events: EventBus;
  /** The in-process scheduler (leader or read model). */
  scheduler: SchedulerService;
  /** Job logs and cluster events (absent for in-process callers that read none). */
  logs?: JobLogsService;
  /** Batch loaders over `em`, one set per request. */
  loaders: Loaders;
  /** Reads made under break-glass grants in this operation, audited before the answer leaves (absent for
   * in-process callers).
   */
  breakGlassReads?: BreakGlassReads;
  /** The price book's currency (config FAIRWAY_CURRENCY); absent for in-process callers: 'USD'. */
  currency?: string;
  /** How long a grouped write waits for others to share its transaction (config FAIRWAY_GROUP_COMMIT_MS);
   * absent: DEFAULT_GROUP_COMMIT_MS.
   */
  groupCommitMs?: number;
}

/**
 * Notes a use of a break-glass grant (reads are audited by plugins/useBreakGlassAudit;
 * mutations are audited anyway, and auditedMutation names the grant). Returns whether
 * the access was granted at all.
 */
export function noteAccess(
  ctx: Pick<ServiceContext, 'principal' | 'breakGlassReads'>,
  tenantId: string,
  access: Access | null,
  what: string,
): boolean {
  if (access === 'break-glass') {
    const grant = ctx.principal?.breakGlass.get(tenantId);
    if (grant) ctx.breakGlassReads?.note(tenantId, grant.grantId, what);
  }
  return access !== null;
}

export function requirePrincipal(ctx: ServiceContext): Principal {
  if (!ctx.principal) throw unauthenticated();
  return ctx.principal;
}

export function requirePlatformAdmin(ctx: ServiceContext): Principal {
  const principal = requirePrincipal(ctx);
  if (!principal.isPlatformAdmin) throw forbidden('Only platform admins may do this.');
  return principal;
}

/**
 * The service-layer twin of the field rules: a caller outside the tenant learns nothing
 * (NOT_FOUND, as for a missing thing); a member without the capability gets FORBIDDEN.
 */
export function requireCapability(
  ctx: ServiceContext,
  tenantId: string,
  capability: Capability,
  what: string,
): Principal {
  const principal = requirePrincipal(ctx);
  if (
    !canSeeTenant(principal, tenantId) ||
    (principal.token && principal.token.tenantId !== null && principal.token.tenantId !== tenantId)
  ) {
    throw notFound(what);
  }
  const checked = checkedTenant.getStore();
  if (checked) checked.tenantId = tenantId;
  if (!noteAccess(ctx, tenantId, accessFor(principal, tenantId, capability), `${what} (${capability})`)) {
    throw forbidden(describeMissing(principal, capability));
  }
  return principal;
}

/** The same caller and request, for a check that must not be noted as a break-glass read. */
export function withoutReadNotes<T extends Pick<ServiceContext, 'breakGlassReads'>>(ctx: T): T {
  return { ...ctx, breakGlassReads: undefined };
}

/**
 * Mutations additionally need a role that may change things (VIEWER and AUDITOR may not);
 * a platform admin changes things inside a tenant only under a break-glass grant.
 */
export function requireMutatingCapability(
  ctx: ServiceContext,
  tenantId: string,
  capability: Capability,
  what: string,
): Principal {
  // Not noted as a break-glass read: a change is audited on its own, and auditedMutation names the grant.
  const principal = requireCapability(withoutReadNotes(ctx), tenantId, capability, what);
  const role = principal.roles.get(tenantId);
  if (role && MUTATING_ROLES.has(role)) return principal;
  if (principal.isPlatformAdmin && principal.breakGlass.has(tenantId)) return principal;
  if (principal.isPlatformAdmin && !role)
    throw forbidden(
      'Platform admins change things inside a tenant only under a break-glass grant (openBreakGlass).',
    );
  throw forbidden(`Your role ${role ?? ''} is read-only in this tenant.`);
}

/**
 * Tenant-wide changes (creating and archiving projects, granting them resources, opening
 * projects to each other): tenant admins, or a platform admin under a break-glass grant.
 * projects:write alone is not enough: members hold it for the projects they administer.
 */
export function requireTenantAdmin(
  ctx: ServiceContext,
  tenantId: string,
  capability: Capability,
  what: string,
): Principal {
  const principal = requireMutatingCapability(ctx, tenantId, capability, what);
  if (
    principal.roles.get(tenantId) === 'TENANT_ADMIN' ||
    (principal.isPlatformAdmin && principal.breakGlass.has(tenantId))
  )
    return principal;
  throw forbidden('Only tenant admins may do this.');
}

/**
 * The non-throwing twin of requireCapability, for field rules that hide a field rather than
 * refuse the whole request (the schema's `capability` auth scope).
 */
export function callerHasCapability(
  ctx: Pick<ServiceContext, 'principal' | 'breakGlassReads'>,
  tenantId: string,
  capability: Capability,
  what: string = capability,
): boolean {
  return noteAccess(ctx, tenantId, accessFor(ctx.principal, tenantId, capability), what);
}

/** The caller's role in the tenant; undefined when not a member (a platform admin need not be one). */
export function callerRoleIn(
  ctx: Pick<ServiceContext, 'principal'>,
  tenantId: string,
): TenantRole | undefined {
  return roleIn(ctx.principal, tenantId);
}

function describeMissing(principal: Principal, capability: Capability): string {
  if (principal.isPlatformAdmin && !principal.token?.tenantId)
    return `Platform admins do not see "${capability}" inside tenants without a break-glass grant for the tenant (openBreakGlass).`;
  if (principal.token)
    return `This API token lacks the "${capability}" scope (or its owner's role does not allow it).`;
  return `Your role in this tenant does not allow "${capability}".`;
}
