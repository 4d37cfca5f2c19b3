import { type GraphQLResolveInfo, Kind, type SelectionSetNode } from 'graphql';
import type { GraphQLContext } from './context.js';

/** Marks a source event whose selected fields read nothing stored (see `storedFields` below). */
const NO_STORED_READS = Symbol('no stored reads');

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
 * `storedFields` (optional): the fields of the event's type that read the database. A
 * subscriber that selected none of them gets its events executed without the per-event
 * snapshot transaction (its reload must then check rights without SQL, from the caller as
 * re-authenticated for the event). Without it, every event runs in the transaction.
 *
 * Spread the result into the field: `t.field({ type, args, ...reloadingSubscription({...}) })`.
 */
export function reloadingSubscription<Args, Watched, Event, Root>(steps: {
  watch: (args: Args, ctx: GraphQLContext) => Watched | Promise<Watched>;
  source: (watched: Watched, ctx: GraphQLContext) => AsyncIterable<Event>;
  reload: (event: Event, args: Args, ctx: GraphQLContext) => Root | Promise<Root>;
  storedFields?: readonly string[];
}) {
  return {
    subscribe: (
      _root: unknown,
      args: Args,
      ctx: GraphQLContext,
      info?: GraphQLResolveInfo,
    ): AsyncIterable<Event> | Promise<AsyncIterable<Event>> => {
      const memoryOnly =
        steps.storedFields !== undefined && info !== undefined && !selectsAny(info, steps.storedFields);
      const open = (watched: Watched) =>
        memoryOnly ? withoutStoredReads(steps.source(watched, ctx)) : steps.source(watched, ctx);
      const watched = steps.watch(args, ctx);
      // A synchronous check opens the source synchronously, as the fields did before this helper.
      return watched instanceof Promise ? watched.then(open) : open(watched);
    },
    resolve: (event: Event | Marked<Event>, args: Args, ctx: GraphQLContext) =>
      steps.reload(isMarked(event) ? event.event : event, args, ctx),
  };
}

/** A source event marked for useSubscriptionEventContext as reading nothing stored. */
interface Marked<Event> {
  [NO_STORED_READS]: true;
  event: Event;
}

const isMarked = <Event>(value: Event | Marked<Event>): value is Marked<Event> =>
  typeof value === 'object' && value !== null && NO_STORED_READS in value;

/** Whether an event root was marked as reading nothing stored (plugins/useSubscriptionEventContext's `readsNothingStored`). */
export const readsNothingStored = (root: unknown): boolean => isMarked(root);

/** The source with each event marked. A plain iterator: `return()` reaches the source at once. */
function withoutStoredReads<Event>(source: AsyncIterable<Event>): AsyncIterable<Event> {
  const iterator = source[Symbol.asyncIterator]();
  const marked: AsyncIterableIterator<Marked<Event>> = {
    next: () =>
      iterator
        .next()
        .then((step) =>
          step.done ? step : { done: false, value: { [NO_STORED_READS]: true, event: step.value } },
        ),
    // A finished step carries no event: nothing to mark.
    return: (value?: unknown) =>
      (iterator.return?.(value) ?? Promise.resolve({ done: true, value: undefined })) as Promise<
        IteratorResult<Marked<Event>>
      >,
    throw: (error?: unknown) =>
      (iterator.throw?.(error) ?? Promise.reject(error)) as Promise<IteratorResult<Marked<Event>>>,
    [Symbol.asyncIterator]: () => marked,
  };
  // The executor sees the marked values; resolve() above unwraps them.
  return marked as unknown as AsyncIterable<Event>;
}

/**
 * Whether the subscription field's selection names any of the fields, through fragments too.
 * A field under @include/@skip counts as selected: a transaction too many is only slower.
 */
function selectsAny(info: GraphQLResolveInfo, fields: readonly string[]): boolean {
  const seen = new Set<string>();
  const within = (set: SelectionSetNode | undefined): boolean =>
    !!set &&
    set.selections.some((selection) => {
      if (selection.kind === Kind.FIELD) return fields.includes(selection.name.value);
      if (selection.kind === Kind.INLINE_FRAGMENT) return within(selection.selectionSet);
      const name = selection.name.value;
      if (seen.has(name)) return false;
      seen.add(name);
      return within(info.fragments[name]?.selectionSet);
    });
  return info.fieldNodes.some((node) => within(node.selectionSet));
}
