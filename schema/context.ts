import type { ServiceContext } from '../src/services/context.js';

/** The GraphQL context: the service context plus what resolvers alone need. */
export interface GraphQLContext extends ServiceContext {
  /** Set by the auth plugin; the same value as `principal`. */
  currentUser: ServiceContext['principal'];
}
