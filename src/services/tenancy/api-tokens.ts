import {
  type Capability,
  displayPrefix,
  generateApiTokenSecret,
  hashApiTokenSecret,
  ROLE_CAPABILITIES,
} from '../../auth/index.js';
import { ApiToken, Tenant, User } from '../../persistence/tenancy/index.js';

// The scopes a token may be given (the schema's ApiTokenScope enum lists them from here).
export { CAPABILITIES, PLATFORM_SCOPE } from '../../auth/index.js';

import { hasCapability } from '../../auth/index.js';
import { announceCredentialsChanged } from '../../events/index.js';
import { badInput, forbidden, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import {
  requireCapability,
  requireMutatingCapability,
  requirePlatformAdmin,
  requirePrincipal,
  type ServiceContext,
} from '../context.js';
import { findPage, type PageQuery } from '../paging.js';

export const MAX_TOKEN_LIFETIME_DAYS = 365;

export interface CreateApiTokenInput {
  /** Omitted: a platform token (platform admins only, acts as a platform admin). */
  tenantId?: string | null;
  name: string;
  scopes: Capability[];
  expiresInDays: number;
}

export interface CreatedApiToken {
  token: ApiToken;
  /** The only time the secret exists outside the caller's hands. */
  secret: string;
}

/** Tenant admins see every token of the tenant; others see the tokens they created. */
export async function listApiTokens(
  ctx: ServiceContext,
  tenantId: string,
  page: PageQuery,
): Promise<ApiToken[]> {
  const principal = requireCapability(ctx, tenantId, 'tenant:read', 'Tenant');
  const where = hasCapability(principal, tenantId, 'tokens:read')
    ? { tenant: tenantId }
    : { tenant: tenantId, createdBy: principal.userId };
  return findPage(ctx.em, ApiToken, where, page, ['createdBy']);
}

export async function getApiToken(ctx: ServiceContext, id: string): Promise<ApiToken> {
  const principal = requirePrincipal(ctx);
  const token = await ctx.em.findOne(ApiToken, { id }, { populate: ['createdBy'] });
  if (!token) throw notFound('API token');
  if (!token.tenant) {
    if (!principal.isPlatformAdmin) throw notFound('API token');
    return token;
  }
  requireCapability(ctx, token.tenant.id, 'tenant:read', 'API token');
  if (token.createdBy.id !== principal.userId && !hasCapability(principal, token.tenant.id, 'tokens:read'))
    throw notFound('API token');
  return token;
}

export async function createApiToken(
  ctx: ServiceContext,
  input: CreateApiTokenInput,
): Promise<CreatedApiToken> {
  const { tenantId } = input;
  return auditedMutation(
    ctx,
    { action: 'apiToken.create', input: { ...input }, tenantHint: tenantId ?? null },
    async (em) => {
      const principal = requirePrincipal(ctx);
      // Tokens are minted by people: a token that could mint tokens would outlive its revocation.
      if (principal.kind !== 'user')
        throw forbidden('API tokens cannot create API tokens; sign in as a user.');
      if (input.expiresInDays < 1 || input.expiresInDays > MAX_TOKEN_LIFETIME_DAYS) {
        throw badInput(`expiresInDays must be between 1 and ${MAX_TOKEN_LIFETIME_DAYS}.`);
      }
      let tenant: Tenant | null = null;
      if (tenantId) {
        requireMutatingCapability(ctx, tenantId, 'tenant:read', 'Tenant');
        tenant = await em.findOne(Tenant, { id: tenantId });
        if (!tenant) throw notFound('Tenant');
        const role = principal.roles.get(tenantId);
        // A tenant token acts as its owner's membership, so the owner must have one.
        if (!role) throw forbidden('Only members of this tenant can create tokens for it.');
        const allowed = ROLE_CAPABILITIES[role];
        const excess = input.scopes.filter((s) => !allowed.has(s));
        if (excess.length > 0) throw forbidden(`Your role cannot grant: ${excess.join(', ')}.`);
      } else {
        requirePlatformAdmin(ctx);
        // A platform token is checked against the stored flag each time it is used; an admin
        // only by the identity provider's claim would get a token that never works.
        const owner = await em.findOne(User, { id: principal.userId });
        if (!owner?.isPlatformAdmin)
          throw forbidden(
            "Platform tokens need a platform admin recorded in Fairway, not only in the identity provider's roles claim.",
          );
        if (input.scopes.length > 0)
          throw badInput(
            'A platform token (no tenantId) takes no scopes: it acts as its platform-admin owner.',
          );
      }
      const secret = generateApiTokenSecret();
      const token = em.create(ApiToken, {
        tenant,
        createdBy: em.getReference(User, principal.userId),
        name: input.name,
        scopes: [...new Set(input.scopes)].sort(),
        tokenHash: hashApiTokenSecret(secret),
        prefix: displayPrefix(secret),
        expiresAt: new Date(ctx.now().getTime() + input.expiresInDays * 86_400_000),
        revokedAt: null,
        lastUsedAt: null,
      });
      await em.flush();
      await em.populate(token, ['createdBy']);
      return {
        result: { token, secret },
        tenantId: tenant?.id ?? null,
        targetType: 'ApiToken',
        targetId: token.id,
      };
    },
  );
}

/** The creator may revoke their own token; tenant admins and platform admins any token of the tenant. */
export async function revokeApiToken(ctx: ServiceContext, id: string): Promise<ApiToken> {
  const revoked = await auditedMutation(ctx, { action: 'apiToken.revoke', input: { id } }, async (em) => {
    const principal = requirePrincipal(ctx);
    const token = await em.findOne(ApiToken, { id }, { populate: ['createdBy'] });
    if (!token) throw notFound('API token');
    if (token.tenant) {
      requireCapability(ctx, token.tenant.id, 'tenant:read', 'API token');
      const own = token.createdBy.id === principal.userId;
      if (!own && !hasCapability(principal, token.tenant.id, 'tokens:read')) throw notFound('API token');
      // Revoking only takes access away: platform admins may do it in any tenant (a leaked
      // token is a security incident), without a break-glass grant; it is audited in the tenant's log.
      if (!own && !principal.isPlatformAdmin)
        requireMutatingCapability(ctx, token.tenant.id, 'members:write', 'API token');
    } else if (!principal.isPlatformAdmin) {
      throw notFound('API token');
    }
    if (!token.revokedAt) token.revokedAt = ctx.now();
    await em.flush();
    return { result: token, tenantId: token.tenant?.id ?? null, targetType: 'ApiToken', targetId: token.id };
  });
  // After commit: the token stops on its next request, on every replica.
  announceCredentialsChanged(ctx.events, {
    tokenId: revoked.id,
    tenantId: revoked.tenant?.id,
    at: ctx.now().getTime(),
  });
  return revoked;
}
