import { randomUUID } from 'node:crypto';
import type { Plugin } from 'graphql-yoga';
import type { Principal } from '../src/auth/index.js';

export interface ServiceContextOptions {
  /**
   * The operation's service fields for its caller and request id: an EntityManager with the
   * caller's tenant filter, loaders, the clock… (src/server/context/service-context.ts).
   */
  createContext(principal: Principal | null, request: { requestId: string }): object;
}

/**
 * Gives each operation its own service context (createContext): an EntityManager with the
 * tenant filter set to exactly the tenants the caller belongs to (all of them for platform
 * admins). Must come after the auth plugin, which puts the caller in `currentUser`.
 */
export function useServiceContext(options: ServiceContextOptions): Plugin {
  return {
    onContextBuilding({ context, extendContext }) {
      const principal = ((context as { currentUser?: Principal | null }).currentUser ??
        null) as Principal | null;
      const requestId = (context as { requestId?: string }).requestId ?? randomUUID();
      extendContext(options.createContext(principal, { requestId }) as never);
    },
  };
}
