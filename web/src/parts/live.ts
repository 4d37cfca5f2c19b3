// Live views: a query refetched (network only) whenever one of its subscriptions says something
// changed, or the socket reconnected (events may have been missed while it was down).

import type { AnyVariables, TypedDocumentNode } from '@urql/core';
import { useSubscription } from '@urql/preact';
import { useEffect, useRef } from 'preact/hooks';
import { reconnects } from '../client.js';

/** A function that runs the latest `fn` once, `ms` after the first call since it last ran (a burst of events: one refetch). */
export function useDebounced(fn: () => void, ms = 150): () => void {
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const latest = useRef(fn);
  latest.current = fn;
  useEffect(() => () => void (timer.current && clearTimeout(timer.current)), []);
  return () => {
    timer.current ??= setTimeout(() => {
      timer.current = null;
      latest.current();
    }, ms);
  };
}

/** Calls `fn` once the socket has reconnected since the last render. */
export function useOnReconnect(fn: () => void): void {
  const seen = useRef(reconnects.value);
  useEffect(() => {
    if (reconnects.value !== seen.current) {
      seen.current = reconnects.value;
      fn();
    }
  });
}

/** Calls `refetch` (at most every `ms`) after each event of the subscription. */
export function useRefetchOn<V extends AnyVariables>(
  document: TypedDocumentNode<unknown, V>,
  variables: V,
  refetch: () => void,
  pause = false,
  ms = 150,
): void {
  const schedule = useDebounced(refetch, ms);
  useSubscription({ query: document, variables, pause }, (_prev, next) => {
    schedule();
    return next;
  });
  useOnReconnect(schedule);
}
