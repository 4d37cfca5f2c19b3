import { useGenericAuth } from '@envelop/generic-auth';
import type { Plugin } from '@envelop/core';
import { GraphQLError } from 'graphql';
import type { IdentityResolver } from '../src/auth/identity.js';
import type { Principal } from '../src/auth/principal.js';
import { FairwayError } from '../src/services/errors.js';

export interface FairwayAuthOptions {
  identity: IdentityResolver;
}

interface AuthSourceContext {
  request?: Request;
  /** graphql-ws puts the client's connection params here (see src/server/websocket.ts). */
  connectionParams?: Record<string, unknown> | null;
}

/**
 * Resolves the caller from a bearer credential: the Authorization header over HTTP, or
 * `authorization` in the connection params over WebSocket. Field rules then decide
 * (resolve-only mode); a credential that fails verification fails the request.
 */
export function useFairwayAuth(options: FairwayAuthOptions): Plugin {
  return useGenericAuth<Principal, AuthSourceContext>({
    mode: 'resolve-only',
    contextFieldName: 'currentUser',
    resolveUserFn: async (context) => {
      const header = context.request?.headers.get('authorization') ?? connectionAuthorization(context.connectionParams);
      try {
        return await options.identity.resolveAuthorization(header);
      } catch (error) {
        if (error instanceof FairwayError) {
          throw new GraphQLError(error.message, { extensions: { code: error.code, http: { status: 401 } } });
        }
        throw error;
      }
    },
  }) as Plugin;
}

function connectionAuthorization(params: Record<string, unknown> | null | undefined): string | null {
  if (!params) return null;
  const value = params.authorization ?? params.Authorization;
  return typeof value === 'string' ? value : null;
}
