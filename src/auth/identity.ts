import type { EntityManager, MikroORM } from '@mikro-orm/core';
import {
  ApiToken,
  BreakGlassGrant,
  Membership,
  ProjectMembership,
  type ProjectRole,
  TENANT_ROLES,
  Tenant,
  type TenantRole,
  User,
} from '../persistence/tenancy/index.js';
import { systemEntityManager } from '../persistence/tenant-filter.js';
import { unauthenticated } from '../shared/index.js';
import { hashApiTokenSecret, looksLikeApiToken } from './api-token-secret.js';
import { CAPABILITIES, type Capability, ROLE_CAPABILITIES } from './capabilities.js';
import { type CachedLookup, credentialKey, type IdentityCache, sha256 } from './identity-cache.js';
import type { OidcVerifier } from './oidc.js';
import type { Principal } from './principal.js';

/** Entry in the roles claim that makes a JWT's subject a platform admin. */
export const PLATFORM_ADMIN_CLAIM = 'fairway:PLATFORM_ADMIN';
/** A token's last-used time is written at most this often, not on every request. */
const LAST_USED_RESOLUTION_MS = 60_000;

export interface IdentityOptions {
  orm: MikroORM;
  oidc?: OidcVerifier;
  now?: () => number;
  /** Principals by credential hash for a few seconds (src/auth/identity-cache.ts); absent: every request
   * looks up.
   */
  cache?: IdentityCache;
}

/**
 * Turns the bearer credential of a request or WebSocket connection into a Principal.
 * No credential → null (anonymous); a credential that does not verify → UNAUTHENTICATED,
 * never a silent downgrade to anonymous.
 */
export class IdentityResolver {
  private readonly now: () => number;
  constructor(private readonly options: IdentityOptions) {
    this.now = options.now ?? Date.now;
  }

  async resolveAuthorization(header: string | null | undefined): Promise<Principal | null> {
    if (header == null || header.trim() === '') return null;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header.trim());
    if (!match) throw unauthenticated('Use "Authorization: Bearer <token>".');
    const bearer = match[1]!;
    if (looksLikeApiToken(bearer)) {
      const tokenHash = hashApiTokenSecret(bearer);
      return this.cached(credentialKey('api-token', tokenHash), () => this.fromApiToken(tokenHash));
    }
    if (bearer.split('.').length === 3) {
      const oidc = this.options.oidc;
      if (!oidc) throw unauthenticated('This gateway has no OIDC issuer configured; use an API token.');
      // A cached JWT is not verified again: it verified when cached, and the entry ends at its exp.
      return this.cached(credentialKey('jwt', sha256(bearer)), () => this.fromJwt(bearer, oidc));
    }
    throw unauthenticated('The bearer token is neither a Fairway API token nor a JWT.');
  }

  private cached(key: string, lookup: () => Promise<CachedLookup>): Promise<Principal> {
    return this.options.cache
      ? this.options.cache.resolve(key, lookup)
      : lookup().then((found) => found.principal);
  }

  private systemEm(): EntityManager {
    return systemEntityManager(this.options.orm);
  }

  private async fromApiToken(tokenHash: string): Promise<CachedLookup> {
    const em = this.systemEm();
    const token = await em.findOne(ApiToken, { tokenHash }, { populate: ['createdBy'] });
    if (!token) throw unauthenticated('The API token is not valid.');
    if (token.revokedAt) throw unauthenticated('The API token has been revoked.');
    const now = this.now();
    if (token.expiresAt.getTime() <= now)
      throw unauthenticated('The API token has expired: create a new one.');
    if (!token.lastUsedAt || now - token.lastUsedAt.getTime() >= LAST_USED_RESOLUTION_MS) {
      await em.nativeUpdate(ApiToken, { id: token.id }, { lastUsedAt: new Date(now) });
    }
    const user = token.createdBy;
    const expiresAt = token.expiresAt.getTime();
    if (!token.tenant) {
      if (!user.isPlatformAdmin)
        throw unauthenticated("The platform token's owner is no longer a platform admin.");
      const principal: Principal = {
        kind: 'api-token',
        userId: user.id,
        email: user.email,
        name: user.name,
        isPlatformAdmin: true,
        roles: new Map(),
        ...(await loadAccess(em, user.id, [], true, now)),
        token: { id: token.id, tenantId: null, scopes: new Set() },
      };
      return { principal, expiresAt };
    }
    const tenantId = token.tenant.id;
    const membership = await em.findOne(Membership, { tenant: tenantId, user: token.createdBy.id });
    if (!membership) throw unauthenticated("The API token's owner is no longer a member of its tenant.");
    // A token never carries more than its owner's current role allows.
    const roleCapabilities = ROLE_CAPABILITIES[membership.role];
    const scopes = new Set(
      token.scopes.filter(
        (s): s is Capability =>
          (CAPABILITIES as readonly string[]).includes(s) && roleCapabilities.has(s as Capability),
      ),
    );
    const principal: Principal = {
      kind: 'api-token',
      userId: user.id,
      email: user.email,
      name: user.name,
      isPlatformAdmin: false,
      roles: new Map([[tenantId, membership.role]]),
      ...(await loadAccess(em, user.id, [tenantId], false, now)),
      token: { id: token.id, tenantId, scopes },
    };
    return { principal, expiresAt };
  }

  private async fromJwt(jwt: string, oidc: OidcVerifier): Promise<CachedLookup> {
    const claims = await oidc.verify(jwt);
    const subject = claims[oidc.userClaim];
    if (typeof subject !== 'string' || subject.length === 0) {
      throw unauthenticated(`The JWT has no "${oidc.userClaim}" claim to identify the user.`);
    }
    const em = this.systemEm();
    const byEmail = subject.includes('@');
    let user = await em.findOne(User, byEmail ? { email: subject.toLowerCase() } : { externalId: subject });
    if (!user) {
      // First sign-in through the portal: provision the user just in time.
      const email = byEmail
        ? subject.toLowerCase()
        : typeof claims.email === 'string'
          ? claims.email.toLowerCase()
          : `${subject}@oidc.invalid`;
      const name = typeof claims.name === 'string' ? claims.name.slice(0, 200) : email;
      user = em.create(User, { email, name, externalId: byEmail ? null : subject, isPlatformAdmin: false });
      await em.flush();
    }
    const rolesClaim = claims[oidc.rolesClaim];
    let roles: Map<string, TenantRole>;
    let claimAdmin = false;
    if (Array.isArray(rolesClaim)) {
      // The identity provider is the source of truth for this user's roles.
      roles = new Map();
      const wanted = new Map<string, TenantRole>();
      for (const entry of rolesClaim) {
        if (entry === PLATFORM_ADMIN_CLAIM) claimAdmin = true;
        if (typeof entry !== 'string') continue;
        const [slug, role] = entry.split(':');
        if (slug && role && (TENANT_ROLES as readonly string[]).includes(role))
          wanted.set(slug, role as TenantRole);
      }
      if (wanted.size > 0) {
        const tenants = await em.find(Tenant, { slug: { $in: [...wanted.keys()] } });
        for (const tenant of tenants) roles.set(tenant.id, wanted.get(tenant.slug)!);
      }
    } else {
      roles = await this.membershipRoles(em, user.id);
    }
    const isPlatformAdmin = user.isPlatformAdmin || claimAdmin;
    const principal: Principal = {
      kind: 'user',
      userId: user.id,
      email: user.email,
      name: user.name,
      isPlatformAdmin,
      roles,
      ...(await loadAccess(em, user.id, [...roles.keys()], isPlatformAdmin, this.now())),
    };
    // The verifier checks exp against the wall clock, so the cache does too.
    return { principal, wallExpiresAt: typeof claims.exp === 'number' ? claims.exp * 1000 : undefined };
  }

  private async membershipRoles(em: EntityManager, userId: string): Promise<Map<string, TenantRole>> {
    return membershipRoles(em, userId);
  }
}

async function membershipRoles(em: EntityManager, userId: string): Promise<Map<string, TenantRole>> {
  const memberships = await em.find(Membership, { user: userId });
  return new Map(memberships.map((m) => [m.tenant.id, m.role]));
}

/**
 * The rights below and beside the tenant roles: the person's project roles in the tenants
 * they act in, and (platform admins) their open break-glass grants. Loaded with the
 * principal, so a closed or expired grant stops working on the next request (a
 * subscription re-checks before each event).
 */
async function loadAccess(
  em: EntityManager,
  userId: string,
  tenantIds: string[],
  isPlatformAdmin: boolean,
  now: number,
): Promise<Pick<Principal, 'projectRoles' | 'breakGlass'>> {
  const projectRoles = new Map<string, { tenantId: string; role: ProjectRole }>();
  if (tenantIds.length > 0) {
    for (const row of await em.find(ProjectMembership, { user: userId, tenant: { $in: tenantIds } }))
      projectRoles.set(row.project.id, { tenantId: row.tenant.id, role: row.role });
  }
  const breakGlass = new Map<string, { grantId: string; expiresAt: number }>();
  if (isPlatformAdmin) {
    for (const grant of await em.find(BreakGlassGrant, {
      operator: userId,
      closedAt: null,
      expiresAt: { $gt: new Date(now) },
    })) {
      const expiresAt = grant.expiresAt.getTime();
      if ((breakGlass.get(grant.tenant.id)?.expiresAt ?? 0) < expiresAt)
        breakGlass.set(grant.tenant.id, { grantId: grant.id, expiresAt });
    }
  }
  return { projectRoles, breakGlass };
}

/** The principal of a signed-in user as stored (no identity-provider claims): for in-process callers such as
 * the demo trickle.
 */
export async function principalForUser(em: EntityManager, user: User, now: number): Promise<Principal> {
  const roles = await membershipRoles(em, user.id);
  return {
    kind: 'user',
    userId: user.id,
    email: user.email,
    name: user.name,
    isPlatformAdmin: user.isPlatformAdmin,
    roles,
    ...(await loadAccess(em, user.id, [...roles.keys()], user.isPlatformAdmin, now)),
  };
}
