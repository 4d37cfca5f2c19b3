import { z } from 'zod';
import { millis, section } from '../section.js';

/**
 * FAIRWAY_IDENTITY_CACHE_MS's default (see src/auth/identity-cache.ts). A revocation takes
 * effect through the credentials-changed event, not the TTL: the TTL bounds how stale a
 * cached caller can get when an event is lost (bus delivery is best effort: Redis pub/sub
 * drops messages while a replica is disconnected) or when rights change outside the
 * services (the bootstrap CLI, hand edits in the database). It stays under a minute: a
 * token's lastUsedAt is written on a miss, at most once a minute.
 */
export const DEFAULT_IDENTITY_CACHE_MS = 5000;

export interface OidcConfig {
  issuer: string;
  audience?: string;
  jwksUrl?: string;
  publicKeyPem?: string;
  userClaim: string;
  rolesClaim: string;
  /** The web console's OAuth client (public, authorization code with PKCE); unset: the console takes API tokens only. */
  consoleClientId?: string;
  consoleScopes: string;
}

export interface AuthConfig {
  /** JWTs from an OpenID Connect issuer; unset: API tokens only. */
  oidc?: OidcConfig;
  /** How long a resolved caller is reused without the database (0: off). */
  identityCacheMs: number;
}

export const authSection = section({
  key: 'auth',
  title: 'Authentication',
  description:
    'API tokens always work. JWTs are accepted from one OpenID Connect issuer when `OIDC_ISSUER` is set, verified with its JWKS endpoint or a static public key.',
  variables: {
    OIDC_ISSUER: z
      .string()
      .url()
      .optional()
      .describe(
        'Accept JWTs from this issuer (`iss`); then set one of `OIDC_JWKS_URL` and `OIDC_PUBLIC_KEY`.',
      )
      .meta({ typeText: 'URL' }),
    OIDC_AUDIENCE: z.string().min(1).optional().describe('Required `aud` of a JWT, when set.'),
    OIDC_JWKS_URL: z
      .string()
      .url()
      .optional()
      .describe("The issuer's JWKS endpoint.")
      .meta({ typeText: 'URL' }),
    OIDC_PUBLIC_KEY: z
      .string()
      .min(1)
      .optional()
      .describe('Or a static PEM public key (SPKI).')
      .meta({ typeText: 'PEM' }),
    OIDC_USER_CLAIM: z
      .string()
      .min(1)
      .default('email')
      .describe(
        "The claim that names the user (an e-mail is matched to the user's e-mail, anything else to the user's external id).",
      ),
    OIDC_ROLES_CLAIM: z
      .string()
      .min(1)
      .default('fairway_roles')
      .describe(
        'Optional claim with `"<tenant-slug>:<ROLE>"` entries (and `"fairway:PLATFORM_ADMIN"`); when present it replaces the user\'s stored memberships for that request.',
      ),
    OIDC_CONSOLE_CLIENT_ID: z
      .string()
      .min(1)
      .optional()
      .describe(
        "The web console's client id at the issuer (a public client: authorization code with PKCE, redirect URI the console's own `/`); set, the console offers sign-in with the issuer. Its ID token is the bearer, so `OIDC_AUDIENCE`, when set, must be this id.",
      ),
    OIDC_CONSOLE_SCOPES: z
      .string()
      .min(1)
      .default('openid email profile')
      .describe('Scopes the console asks the issuer for.'),
    FAIRWAY_IDENTITY_CACHE_MS: millis(0, 60_000)
      .default(DEFAULT_IDENTITY_CACHE_MS)
      .describe(
        "Milliseconds a caller resolved from a bearer token or JWT is reused without the database (`0`: off; under a minute, since a token's last use is written on a miss, at most once a minute). Revoking a token or changing a membership, project role or break-glass grant drops it at once on every replica (a `credentials-changed` event on the bus); the TTL only bounds staleness when an event is lost.",
      ),
  },
  resolve: (v, ctx): AuthConfig => {
    const keySources = [v.OIDC_JWKS_URL, v.OIDC_PUBLIC_KEY].filter(Boolean).length;
    if (v.OIDC_ISSUER && keySources === 0)
      ctx.problem(
        'OIDC_JWKS_URL',
        'OIDC_ISSUER is set: also set OIDC_JWKS_URL or OIDC_PUBLIC_KEY so tokens can be verified',
      );
    if (keySources > 0 && !v.OIDC_ISSUER)
      ctx.problem('OIDC_ISSUER', 'set OIDC_ISSUER: JWTs are only accepted from a named issuer');
    if (keySources > 1) ctx.problem('OIDC_PUBLIC_KEY', 'set only one of OIDC_JWKS_URL and OIDC_PUBLIC_KEY');
    return {
      oidc: v.OIDC_ISSUER
        ? {
            issuer: v.OIDC_ISSUER,
            audience: v.OIDC_AUDIENCE,
            jwksUrl: v.OIDC_JWKS_URL,
            publicKeyPem: v.OIDC_PUBLIC_KEY,
            userClaim: v.OIDC_USER_CLAIM,
            rolesClaim: v.OIDC_ROLES_CLAIM,
            consoleClientId: v.OIDC_CONSOLE_CLIENT_ID,
            consoleScopes: v.OIDC_CONSOLE_SCOPES,
          }
        : undefined,
      identityCacheMs: v.FAIRWAY_IDENTITY_CACHE_MS,
    };
  },
});
