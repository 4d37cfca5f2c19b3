import type { ServiceContext } from '../src/services/context.js';
import { TENANT_FILTER } from '../src/persistence/entities.js';
import { createLoaders } from '../src/services/loaders.js';
import { tenantFilterFor } from '../src/auth/principal.js';

/** The GraphQL context: the service context plus what resolvers alone need. */
export interface GraphQLContext extends ServiceContext {
  /** Set by the auth plugin; the same value as `principal`. */
  currentUser: ServiceContext['principal'];
  /** Resolves the connection's credential again (briefly cached); throws if it no longer verifies. */
  reauthenticate: () => Promise<ServiceContext['principal']>;
}

/**
 * A context for one subscription event: the caller's credential checked again, a fresh
 * EntityManager with the tenant filter for who they are now, fresh loaders. Null when the
 * caller may no longer see anything (the event is dropped).
 */
export async function freshContext(ctx: GraphQLContext): Promise<GraphQLContext | null> {
  let principal: ServiceContext['principal'];
  try {
    principal = await ctx.reauthenticate();
  } catch {
    return null;
  }
  if (!principal) return null;
  const em = ctx.em.fork({ clear: true });
  em.setFilterParams(TENANT_FILTER, tenantFilterFor(principal));
  return { ...ctx, principal, currentUser: principal, em, loaders: createLoaders(em) };
}
