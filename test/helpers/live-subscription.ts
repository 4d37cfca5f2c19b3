import { type Client, createClient } from 'graphql-ws';
import WebSocket from 'ws';

/** A graphql-ws client over a real socket, authenticated by the `authorization` connection param. */
export function wsClient(graphqlUrl: string, token: string): Client {
  return createClient({
    url: graphqlUrl.replace('http', 'ws'),
    webSocketImpl: WebSocket,
    connectionParams: { authorization: `Bearer ${token}` },
    lazy: true,
    retryAttempts: 0,
  });
}

export interface LiveSubscription<T> {
  /** Every event's data, in arrival order. */
  values: T[];
  /** GraphQL errors and transport errors, in arrival order. */
  errors: unknown[];
  /** Resolves once `done(values)` holds; rejects with what arrived so far after `timeoutMs`. */
  until(done: (values: T[]) => boolean, timeoutMs?: number): Promise<T[]>;
  dispose(): void;
}

/** Subscribes and keeps every value, so a test can assert on the whole stream afterwards. */
export function liveSubscription<T>(
  client: Client,
  query: string,
  variables: Record<string, unknown>,
  pick: (data: Record<string, any>) => T,
): LiveSubscription<T> {
  const values: T[] = [];
  const errors: unknown[] = [];
  let changed = () => {};
  const dispose = client.subscribe<Record<string, any>>(
    { query, variables },
    {
      next: (message) => {
        if (message.errors) errors.push(...message.errors);
        if (message.data) values.push(pick(message.data));
        changed();
      },
      error: (error) => {
        errors.push(error);
        changed();
      },
      complete: () => undefined,
    },
  );
  return {
    values,
    errors,
    dispose,
    until(done, timeoutMs = 20_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (errors.length)
            return finish(() => reject(new Error(`subscription errors: ${JSON.stringify(errors)}`)));
          if (done(values)) finish(() => resolve(values));
        };
        const timer = setTimeout(
          () =>
            finish(() =>
              reject(new Error(`not reached in ${timeoutMs} ms; values so far: ${JSON.stringify(values)}`)),
            ),
          timeoutMs,
        );
        const finish = (settle: () => void) => {
          clearTimeout(timer);
          changed = () => {};
          settle();
        };
        changed = check;
        check();
      });
    },
  };
}

/** Polls until `check` holds (or fails after `timeoutMs`). */
export async function eventually(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error('condition not reached in time');
}
