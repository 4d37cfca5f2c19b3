import { z } from 'zod';
import { section } from '../section.js';

/**
 * The caps of src/server/websocket/websocket.ts. Every cap is per server replica (counted in
 * this process): with N replicas behind a balancer a tenant may hold up to N× each cap.
 */
export interface WebSocketConfig {
  maxSubscriptionsPerConnection: number;
  maxSubscriptionsPerPrincipal: number;
  maxSubscriptionsPerTenant: number;
  maxConnectionsPerPrincipal: number;
  maxConnectionsPerTenant: number;
  maxHalfOpenPerIp: number;
  /** Unsent bytes one socket may hold (events queued + ws's buffer) before it is closed as a slow reader. */
  maxBufferedBytes: number;
  /** Largest message a client may send (ws closes with 1009 above it). */
  maxMessageBytes: number;
  /** How long a socket may stay open without connection_init (graphql-ws closes with 4408). */
  connectionInitTimeoutMs: number;
}

export const DEFAULT_WEBSOCKET_CONFIG: Readonly<WebSocketConfig> = Object.freeze({
  maxSubscriptionsPerConnection: 100,
  maxSubscriptionsPerPrincipal: 200,
  maxSubscriptionsPerTenant: 1_000,
  maxConnectionsPerPrincipal: 50,
  maxConnectionsPerTenant: 200,
  maxHalfOpenPerIp: 50,
  maxBufferedBytes: 4 * 1024 * 1024,
  maxMessageBytes: 1_000_000,
  connectionInitTimeoutMs: 3_000,
});

/** A whole number of at least 1; blank counts as unset (the default). */
const cap = (key: keyof WebSocketConfig, description: string) =>
  z
    .string()
    .transform((raw, ctx) => {
      const text = raw.trim();
      if (text === '') return DEFAULT_WEBSOCKET_CONFIG[key];
      const value = Number(text);
      if (!/^\d+$/.test(text) || !Number.isSafeInteger(value) || value < 1) {
        ctx.addIssue({ code: 'custom', message: `must be a whole number of at least 1 (got "${raw}")` });
        return z.NEVER;
      }
      return value;
    })
    .default(DEFAULT_WEBSOCKET_CONFIG[key])
    .describe(description)
    .meta({ typeText: 'integer ≥ 1' });

export const webSocketSection = section({
  key: 'webSocket',
  title: 'WebSocket',
  description:
    'graphql-ws on the same port as HTTP. Each replica caps sockets and open operations per connection, per user or token and per tenant; an operation over a cap is answered on its own id with `RATE_LIMITED` and the socket carries on. The same defaults in every environment.',
  variables: {
    FAIRWAY_WS_MAX_SUBSCRIPTIONS_PER_CONNECTION: cap(
      'maxSubscriptionsPerConnection',
      'Open operations on one WebSocket; more get `RATE_LIMITED`.',
    ),
    FAIRWAY_WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL: cap(
      'maxSubscriptionsPerPrincipal',
      'Open operations of one user or token, across their sockets.',
    ),
    FAIRWAY_WS_MAX_SUBSCRIPTIONS_PER_TENANT: cap(
      'maxSubscriptionsPerTenant',
      'Open operations counted against a tenant.',
    ),
    FAIRWAY_WS_MAX_CONNECTIONS_PER_PRINCIPAL: cap(
      'maxConnectionsPerPrincipal',
      'Initialised sockets of one user or token; more are closed 4429.',
    ),
    FAIRWAY_WS_MAX_CONNECTIONS_PER_TENANT: cap(
      'maxConnectionsPerTenant',
      'Initialised sockets counted against a tenant; more are closed 4429.',
    ),
    FAIRWAY_WS_MAX_HALF_OPEN_PER_IP: cap(
      'maxHalfOpenPerIp',
      'Sockets from one address not yet past `connection_init`; more are closed 4429.',
    ),
    FAIRWAY_WS_MAX_BUFFERED_BYTES: cap(
      'maxBufferedBytes',
      "Unsent bytes (queued events plus the socket's buffer) before a socket that does not read is closed 1013.",
    ),
    FAIRWAY_WS_MAX_MESSAGE_BYTES: cap(
      'maxMessageBytes',
      'Largest client message, in bytes; larger closes the socket 1009.',
    ),
    FAIRWAY_WS_CONNECTION_INIT_TIMEOUT_MS: cap(
      'connectionInitTimeoutMs',
      'Milliseconds allowed before `connection_init`; then the socket is closed 4408.',
    ),
  },
  resolve: (v): WebSocketConfig => ({
    maxSubscriptionsPerConnection: v.FAIRWAY_WS_MAX_SUBSCRIPTIONS_PER_CONNECTION,
    maxSubscriptionsPerPrincipal: v.FAIRWAY_WS_MAX_SUBSCRIPTIONS_PER_PRINCIPAL,
    maxSubscriptionsPerTenant: v.FAIRWAY_WS_MAX_SUBSCRIPTIONS_PER_TENANT,
    maxConnectionsPerPrincipal: v.FAIRWAY_WS_MAX_CONNECTIONS_PER_PRINCIPAL,
    maxConnectionsPerTenant: v.FAIRWAY_WS_MAX_CONNECTIONS_PER_TENANT,
    maxHalfOpenPerIp: v.FAIRWAY_WS_MAX_HALF_OPEN_PER_IP,
    maxBufferedBytes: v.FAIRWAY_WS_MAX_BUFFERED_BYTES,
    maxMessageBytes: v.FAIRWAY_WS_MAX_MESSAGE_BYTES,
    connectionInitTimeoutMs: v.FAIRWAY_WS_CONNECTION_INIT_TIMEOUT_MS,
  }),
});
