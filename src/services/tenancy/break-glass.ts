import { announceCredentialsChanged } from '../../events/index.js';
import { BreakGlassGrant, Tenant, User } from '../../persistence/tenancy/index.js';
import { badInput, conflict, forbidden, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import {
  callerHasCapability,
  requireCapability,
  requirePrincipal,
  requireTenantAdmin,
  type ServiceContext,
} from '../context.js';

export type { BreakGlassGrant };

export const REASON_MIN_CHARS = 10;
export const REASON_MAX_CHARS = 500;
export const MIN_DURATION_MINUTES = 1;
export const MAX_DURATION_MINUTES = 480;
export const DEFAULT_DURATION_MINUTES = 60;

export interface OpenBreakGlassInput {
  tenantId: string;
  reason: string;
  durationMinutes: number;
}

/** Open: not closed and not yet expired. A grant's lifetime is fixed when it is opened. */
export function isGrantActive(grant: Pick<BreakGlassGrant, 'closedAt' | 'expiresAt'>, now: Date): boolean {
  return !grant.closedAt && grant.expiresAt.getTime() > now.getTime();
}

/**
 * A platform admin opens a time-limited grant to look inside one tenant and act there as its
 * admin. The opening is audited in the tenant's own log with the reason, so its auditors see
 * who broke the glass, why and for how long.
 */
export async function openBreakGlass(
  ctx: ServiceContext,
  input: OpenBreakGlassInput,
): Promise<BreakGlassGrant> {
  const reason = input.reason.trim();
  // Checked before anything is written (the schema checks the same): a malformed request leaves no trace.
  if (reason.length < REASON_MIN_CHARS || reason.length > REASON_MAX_CHARS) {
    throw badInput(
      `reason must be ${REASON_MIN_CHARS} to ${REASON_MAX_CHARS} characters: say why you need to look inside this tenant.`,
    );
  }
  if (
    !Number.isInteger(input.durationMinutes) ||
    input.durationMinutes < MIN_DURATION_MINUTES ||
    input.durationMinutes > MAX_DURATION_MINUTES
  ) {
    throw badInput(
      `durationMinutes must be a whole number from ${MIN_DURATION_MINUTES} to ${MAX_DURATION_MINUTES}.`,
    );
  }
  const meta = {
    action: 'breakglass.open',
    input: { tenantId: input.tenantId, reason, durationMinutes: input.durationMinutes },
    tenantHint: input.tenantId,
  };
  const opened = await auditedMutation(ctx, meta, async (em) => {
    const principal = requirePrincipal(ctx);
    if (!principal.isPlatformAdmin)
      throw forbidden(
        'Only platform admins open break-glass grants; tenant admins already see their tenant.',
      );
    const tenant = await em.findOne(Tenant, { id: input.tenantId });
    if (!tenant) throw notFound('Tenant');
    const now = ctx.now();
    const open = await em.findOne(BreakGlassGrant, {
      tenant: tenant.id,
      operator: principal.userId,
      closedAt: null,
      expiresAt: { $gt: now },
    });
    if (open)
      throw conflict(
        'You already hold an open break-glass grant for this tenant: close it (closeBreakGlass) before opening another.',
      );
    const grant = em.create(BreakGlassGrant, {
      tenant,
      operator: em.getReference(User, principal.userId),
      reason,
      expiresAt: new Date(now.getTime() + input.durationMinutes * 60_000),
      closedAt: null,
      createdAt: now,
    });
    await em.flush();
    await em.populate(grant, ['operator']);
    return { result: grant, tenantId: tenant.id, targetType: 'BreakGlassGrant', targetId: grant.id };
  });
  grantChanged(ctx, opened);
  return opened;
}

/** After commit: the operator's cached principals (which hold their open grants) are looked up again, on
 * every replica.
 */
function grantChanged(ctx: ServiceContext, grant: BreakGlassGrant): void {
  announceCredentialsChanged(ctx.events, {
    userId: grant.operator.id,
    tenantId: grant.tenant.id,
    at: ctx.now().getTime(),
  });
}

/**
 * Ends a grant at once (the next request of its operator no longer has it). The operator,
 * any platform admin, or the tenant's admins; audited in the tenant's log.
 */
export async function closeBreakGlass(ctx: ServiceContext, id: string): Promise<BreakGlassGrant> {
  const closed = await auditedMutation(ctx, { action: 'breakglass.close', input: { id } }, async (em) => {
    const principal = requirePrincipal(ctx);
    const grant = await em.findOne(BreakGlassGrant, { id }, { populate: ['operator'] });
    if (!grant) throw notFound('Break-glass grant');
    const tenantId = grant.tenant.id;
    // Platform admins may always end a grant: closing only takes access away.
    if (!principal.isPlatformAdmin) requireTenantAdmin(ctx, tenantId, 'members:write', 'Break-glass grant');
    if (!isGrantActive(grant, ctx.now()))
      throw conflict(
        grant.closedAt
          ? 'This break-glass grant is already closed.'
          : 'This break-glass grant has already expired.',
      );
    grant.closedAt = ctx.now();
    await em.flush();
    return { result: grant, tenantId, targetType: 'BreakGlassGrant', targetId: grant.id };
  });
  grantChanged(ctx, closed);
  return closed;
}

/**
 * Who may see a tenant's grants: platform admins, and the tenant's admins and auditors
 * (audit:read). Outsiders learn nothing (NOT_FOUND); other members get FORBIDDEN.
 */
function requireGrantReader(ctx: ServiceContext, tenantId: string, what: string): void {
  const principal = requireCapability(ctx, tenantId, 'tenant:read', what);
  // Platform admins see grants without one: checked first so it is not noted as a break-glass read.
  if (principal.isPlatformAdmin) return;
  if (!callerHasCapability(ctx, tenantId, 'audit:read'))
    throw forbidden("A tenant's break-glass grants are for its admins and auditors.");
}

/** Every grant of the tenant, open and ended, newest first (ids are time-ordered UUIDv7). */
export async function listBreakGlassGrants(
  ctx: ServiceContext,
  tenantId: string,
): Promise<BreakGlassGrant[]> {
  requireGrantReader(ctx, tenantId, 'Tenant');
  return ctx.em.find(
    BreakGlassGrant,
    { tenant: tenantId },
    { populate: ['operator'], orderBy: { id: 'desc' } },
  );
}

export async function getBreakGlassGrant(ctx: ServiceContext, id: string): Promise<BreakGlassGrant> {
  requirePrincipal(ctx);
  // The tenant filter hides other tenants' grants: an outsider's answer is the same as for a made-up id.
  const grant = await ctx.em.findOne(BreakGlassGrant, { id }, { populate: ['operator'] });
  if (!grant) throw notFound('Break-glass grant');
  requireGrantReader(ctx, grant.tenant.id, 'Break-glass grant');
  return grant;
}

/** The caller's own open grants (none unless a platform admin). */
export async function myOpenBreakGlassGrants(ctx: ServiceContext): Promise<BreakGlassGrant[]> {
  const principal = requirePrincipal(ctx);
  if (!principal.isPlatformAdmin) return [];
  return ctx.em.find(
    BreakGlassGrant,
    { operator: principal.userId, closedAt: null, expiresAt: { $gt: ctx.now() } },
    { populate: ['operator'], orderBy: { expiresAt: 'asc', id: 'asc' } },
  );
}
