import { isAsyncIterable, makeExecute, type Plugin } from '@envelop/core';
import { subscribe } from '@envelop/execute-subscription-event/subscribe';
import { type ExecutionArgs, type ExecutionResult, execute, GraphQLError } from 'graphql';
import type { Principal } from '../src/auth/index.js';

/** Where an event's fields read the stored data (src/server/context/service-context.ts). */
export interface SubscriptionEventStore<Em> {
  /** An EntityManager whose tenant filter is exactly the caller's tenants. */
  scoped(principal: Principal | null): Em;
  /** Fresh DataLoaders over `em`. */
  loaders(em: Em): unknown;
  /** Runs `run` in one read-only snapshot transaction of `em`, given the transaction's EntityManager. */
  snapshot<T>(em: Em, run: (em: Em) => Promise<T>): Promise<T>;
}

export interface SubscriptionEventContextOptions<Em> {
  store: SubscriptionEventStore<Em>;
  /**
   * Whether a source event is marked as reading nothing stored (schema/reloading-subscription.ts,
   * `storedFields`): it runs without the snapshot transaction, which would cost two statements
   * and a pooled connection per event for nothing, and an EntityManager is forked only if a
   * field asks for one. The caller is re-authenticated for it all the same.
   */
  readsNothingStored: (root: unknown) => boolean;
  /**
   * Events being executed, each until its result is ready: the server waits for them before it closes the
   * database (an event's transaction would otherwise fail on a closed pool).
   */
  inFlight?: Set<Promise<unknown>>;
}

/** What this plugin needs of the subscription's own context (set by useFairwayAuth). */
interface SubscriptionContext {
  /** Resolves the connection's credential again; rejects when it no longer verifies. */
  reauthenticate?: () => Promise<Principal | null>;
}

/**
 * A subscription lives for hours; its caller's rights and the data do not stand still.
 * Each event is executed with its own context — the caller as re-authenticated now, an
 * EntityManager with the tenant filter for those rights, fresh DataLoaders — so every field
 * of the event, nested ones included, reads what is stored when the event is sent, as the
 * caller may see it now. (The subscription's context, from subscribe time, is used only to
 * set up the source stream.)
 *
 * An event the caller may no longer see is dropped, not sent as an error: its root field
 * was refused (UNAUTHENTICATED, FORBIDDEN, or NOT_FOUND — what a caller without rights gets
 * for another tenant's object) and nothing of it resolved. An error would tell a removed
 * member that the object still changes.
 *
 * All reads of one event come from one snapshot: the reload and every field under it run in
 * one read-only transaction (REPEATABLE READ on PostgreSQL; a SQLite transaction is one
 * snapshot already). Separate statements could otherwise straddle a commit of the scheduler
 * and show, say, a job still ADMITTED whose events already include STARTED. The transaction
 * ends (and its connection goes back to the pool) before the event's result is passed on.
 *
 * Must come after useFairwayAuth (which puts `reauthenticate` in the context) and
 * useServiceContext (whose fields it replaces per event).
 */
export function useSubscriptionEventContext<Em>(options: SubscriptionEventContextOptions<Em>): Plugin {
  const { store } = options;
  const executeEvent = makeExecute((args: ExecutionArgs) => {
    const running = executeOne(args);
    const tracked = options.inFlight;
    if (!tracked) return running;
    tracked.add(running);
    return running.finally(() => tracked.delete(running));
  });
  async function executeOne(args: ExecutionArgs) {
    // Re-authenticated before the transaction: the credential lookup uses its own connection,
    // and a transaction waiting on a second connection could starve a small pool.
    const principal = await currentPrincipal(args.contextValue as SubscriptionContext);
    if (options.readsNothingStored(args.rootValue)) {
      let em: Em | undefined;
      let loaders: unknown;
      const fork = () => (em ??= store.scoped(principal));
      const contextValue = {
        ...(args.contextValue as object),
        principal,
        currentUser: principal,
        get em() {
          return fork();
        },
        get loaders() {
          return (loaders ??= store.loaders(fork()));
        },
      };
      return execute({ ...args, contextValue });
    }
    const scoped = store.scoped(principal);
    try {
      // Errors of fields are in the result (graphql-js catches them), so the callback itself
      // fails only on a bug.
      return await store.snapshot(scoped, async (em) =>
        execute({
          ...args,
          contextValue: {
            ...(args.contextValue as object),
            principal,
            currentUser: principal,
            em,
            loaders: store.loaders(em),
          },
        }),
      );
    } catch (error) {
      // The transaction could not begin or end (the database is unavailable, say). Sent as this
      // event's error, which the error mask types (SERVICE_UNAVAILABLE), not thrown: a throw
      // would end the subscription, and the next event may well find the database back.
      return {
        data: null,
        errors: [
          new GraphQLError(error instanceof Error ? error.message : String(error), {
            originalError: error instanceof Error ? error : undefined,
          }),
        ],
      };
    }
  }
  return {
    onSubscribe({ setSubscribeFn }) {
      setSubscribeFn(subscribe(executeEvent));
      return {
        onSubscribeResult({ result, setResult }) {
          if (isAsyncIterable(result)) setResult(withoutRefusedEvents(result));
        },
      };
    },
  };
}

/** The caller as they are now; null when the credential no longer verifies (revoked, expired, owner
 * removed).
 */
async function currentPrincipal(context: SubscriptionContext): Promise<Principal | null> {
  try {
    return (await context.reauthenticate?.()) ?? null;
  } catch {
    return null;
  }
}

const REFUSED = new Set(['UNAUTHENTICATED', 'FORBIDDEN', 'NOT_FOUND']);

function codeOf(error: GraphQLError): unknown {
  return error.extensions?.code ?? (error.originalError as { code?: unknown } | undefined)?.code;
}

/** The root field failed and every error is a refusal: the caller may not see this event. */
function refused(result: ExecutionResult): boolean {
  return (
    result.data == null &&
    !!result.errors?.length &&
    result.errors.every((error) => REFUSED.has(codeOf(error) as string))
  );
}

/**
 * The stream without refused events. A plain iterator, not an async generator: `return()`
 * must reach the source at once when the client unsubscribes, not after the next event.
 */
function withoutRefusedEvents(
  source: AsyncIterableIterator<ExecutionResult> | AsyncIterable<ExecutionResult>,
): AsyncIterableIterator<ExecutionResult> {
  const iterator = source[Symbol.asyncIterator]();
  const filtered: AsyncIterableIterator<ExecutionResult> = {
    async next() {
      for (;;) {
        const step = await iterator.next();
        if (step.done || !refused(step.value)) return step;
      }
    },
    return: (value?: unknown) =>
      iterator.return?.(value) ?? Promise.resolve({ done: true, value: undefined }),
    throw: (error?: unknown) => iterator.throw?.(error) ?? Promise.reject(error),
    [Symbol.asyncIterator]: () => filtered,
  };
  return filtered;
}
