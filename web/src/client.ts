// One urql client per credential: queries and mutations over HTTP to this origin's /graphql,
// subscriptions over one graphql-ws socket (it counts against the gateway's socket caps like any
// client's). A dropped socket reconnects (with back-off) and the views refetch; an expired or revoked
// credential sends the person back to sign-in with the reason.

import { signal } from '@preact/signals';
import { Client, cacheExchange, fetchExchange, mapExchange, subscriptionExchange } from '@urql/core';
import { createClient as createSocket } from 'graphql-ws';
import { signOut } from './session.js';

/** Bumped each time the socket reconnects: live views refetch what they may have missed. */
export const reconnects = signal(0);

const AUTH_CODES = new Set(['UNAUTHENTICATED']);

export function createConsoleClient(bearer: string): { client: Client; close: () => void } {
  const wsUrl = `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/graphql`;
  let connectedOnce = false;
  const socket = createSocket({
    url: wsUrl,
    connectionParams: { authorization: `Bearer ${bearer}` },
    lazy: true,
    retryAttempts: Number.POSITIVE_INFINITY,
    shouldRetry: () => true,
    on: {
      connected: () => {
        if (connectedOnce) reconnects.value++;
        connectedOnce = true;
      },
      closed: (event) => {
        // 4401/4403: the gateway refused the credential on the socket.
        const code = (event as CloseEvent | undefined)?.code;
        if (code === 4401 || code === 4403) signOut('Your session ended: sign in again.');
      },
    },
  });
  const client = new Client({
    url: '/graphql',
    preferGetMethod: false,
    requestPolicy: 'cache-and-network',
    fetchOptions: () => ({ headers: { authorization: `Bearer ${bearer}` } }),
    exchanges: [
      mapExchange({
        onError(error) {
          const codes = error.graphQLErrors.map((e) => e.extensions?.code);
          if (codes.some((c) => typeof c === 'string' && AUTH_CODES.has(c)) || error.response?.status === 401)
            signOut('Your session ended (the token expired or was revoked): sign in again.');
        },
      }),
      cacheExchange,
      fetchExchange,
      subscriptionExchange({
        forwardSubscription: (request) => ({
          subscribe: (sink) => ({
            unsubscribe: socket.subscribe({ ...request, query: request.query ?? '' }, sink),
          }),
        }),
      }),
    ],
  });
  return { client, close: () => void socket.dispose() };
}
