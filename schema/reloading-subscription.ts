import type { GraphQLContext } from './context.js';

/**
 * The one sequence every subscription follows.
 *
 * 1. `watch`, in the subscription's context: check the caller may watch the object (the same
 *    error as a query for it would give) and return what the event source needs.
 * 2. `source`: the event stream for it. Sources carry ids and scheduler values, never rows.
 * 3. `reload`, in each event's own context (plugins/useSubscriptionEventContext: the caller's
 *    rights as they are now, a fresh EntityManager and loaders): read the event's root again,
 *    so nested fields show what is stored when it is sent. A reload that is refused
 *    (UNAUTHENTICATED, FORBIDDEN, NOT_FOUND) drops the event there instead of sending it.
 *
 * Spread the result into the field: `t.field({ type, args, ...reloadingSubscription({...}) })`.
 */
export function reloadingSubscription<Args, Watched, Event, Root>(steps: {
  watch: (args: Args, ctx: GraphQLContext) => Watched | Promise<Watched>;
  source: (watched: Watched, ctx: GraphQLContext) => AsyncIterable<Event>;
  reload: (event: Event, args: Args, ctx: GraphQLContext) => Root | Promise<Root>;
}) {
  return {
    subscribe: (_root: unknown, args: Args, ctx: GraphQLContext): AsyncIterable<Event> | Promise<AsyncIterable<Event>> => {
      const watched = steps.watch(args, ctx);
      // A synchronous check opens the source synchronously, as the fields did before this helper.
      return watched instanceof Promise ? watched.then((value: Watched) => steps.source(value, ctx)) : steps.source(watched, ctx);
    },
    resolve: (event: Event, args: Args, ctx: GraphQLContext) => steps.reload(event, args, ctx),
  };
}
