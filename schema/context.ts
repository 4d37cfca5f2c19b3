import type { ServiceContext } from '../src/services/context.js';

/**
 * The GraphQL context: the service context plus what resolvers alone need. A subscription
 * event gets its own (plugins/useSubscriptionEventContext): the caller re-authenticated,
 * a fresh EntityManager and loaders.
 */
export interface GraphQLContext extends ServiceContext {
  /** Set by the auth plugin; the same value as `principal`. */
  currentUser: ServiceContext['principal'];
  /** Resolves the connection's credential again (briefly cached); throws if it no longer verifies. */
  reauthenticate: () => Promise<ServiceContext['principal']>;
}
