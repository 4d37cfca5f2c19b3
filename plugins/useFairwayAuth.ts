import type { Plugin } from '@envelop/core';
import { useGenericAuth } from '@envelop/generic-auth';
import { GraphQLError } from 'graphql';
import type { Principal } from '../src/auth/index.js';
import { FairwayError } from '../src/shared/index.js';

/** Who a bearer credential is (src/auth/identity.ts's IdentityResolver is one). */
export interface CredentialResolver {
  /** The principal of an `Authorization` value; null without one; throws FairwayError UNAUTHENTICATED when it does not verify. */
  resolveAuthorization(authorization: string | null): Promise<Principal | null>;
}

export interface FairwayAuthOptions {
  identity: CredentialResolver;
  /** How long a subscription may rely on its last credential check (default 0: ask the identity resolver's
   * cache before each event).
   */
  reauthCacheMs?: number;
}

/**
 * Put in the context by useRateLimits (onEnveloped, before any credential is checked): a
 * client IP that failed too many credentials is refused before its next one is verified,
 * so guessing tokens gets nowhere.
 */
export interface CredentialAttemptGate {
  /** Throws the RATE_LIMITED error when this client may not present a credential now. */
  beforeAttempt(): Promise<void>;
  /** A presented credential failed verification. */
  failed(): Promise<void>;
}

interface AuthSourceContext {
  request?: Request;
  credentialAttempts?: CredentialAttemptGate;
  /** graphql-ws puts the client's connection params here (see src/server/websocket/websocket.ts). */
  connectionParams?: Record<string, unknown> | null;
}

/**
 * Resolves the caller from a bearer credential: the Authorization header over HTTP, or
 * `authorization` in the connection params over WebSocket. Field rules then decide
 * (resolve-only mode); a credential that fails verification fails the request.
 */
export function useFairwayAuth(options: FairwayAuthOptions): Plugin {
  const genericAuth = useGenericAuth<Principal, AuthSourceContext>({
    mode: 'resolve-only',
    contextFieldName: 'currentUser',
    resolveUserFn: async (context) => {
      const authorization = authorizationOf(context);
      if (authorization != null) await context.credentialAttempts?.beforeAttempt();
      try {
        return await options.identity.resolveAuthorization(authorization);
      } catch (error) {
        if (error instanceof FairwayError) {
          if (error.code === 'UNAUTHENTICATED') await context.credentialAttempts?.failed();
          throw new GraphQLError(error.message, { extensions: { code: error.code, http: { status: 401 } } });
        }
        throw error;
      }
    },
  }) as Plugin;
  return {
    onPluginInit({ addPlugin }) {
      addPlugin(genericAuth);
    },
    onContextBuilding({ context, extendContext }) {
      const header = authorizationOf(context as AuthSourceContext);
      // Subscriptions outlive the moment they were authorized: they re-check the credential
      // (revoked token, removed member) before each event.
      let cached: { at: number; principal: Promise<Principal | null> } | null = null;
      const reauthenticate = () => {
        const now = Date.now();
        if (!cached || now - cached.at >= (options.reauthCacheMs ?? REAUTH_CACHE_MS))
          cached = { at: now, principal: options.identity.resolveAuthorization(header) };
        return cached.principal;
      };
      extendContext({ reauthenticate } as never);
    },
  };
}

// The identity resolver caches principals itself and drops them the moment credentials
// change (a credentials-changed event), so a subscription asks it before every event: a
// revoked token stops its subscriptions at the next event, at the cost of a cache lookup.
// A positive value keeps this subscription's own answer that long on top.
const REAUTH_CACHE_MS = 0;

/** The bearer credential: the Authorization header over HTTP, the connection params over WebSocket. */
function authorizationOf(context: AuthSourceContext): string | null {
  const header = context.request?.headers.get('authorization');
  if (header != null) return header;
  const value = context.connectionParams?.authorization ?? context.connectionParams?.Authorization;
  return typeof value === 'string' ? value : null;
}
