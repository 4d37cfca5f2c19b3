import type { IncomingMessage, Server } from 'node:http';
import { GraphQLError } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import type { YogaServerInstance } from 'graphql-yoga';
import { type WebSocket, WebSocketServer } from 'ws';
import type { IdentityResolver, Principal } from '../../auth/index.js';
import type { WebSocketConfig } from '../../config/index.js';
import { isDatabaseUnavailable } from '../../persistence/database-unavailable.js';
import { FairwayError } from '../../shared/index.js';
import { createMaskError } from '../errors.js';
import type { WebSocketOperationCheck } from '../http-security/index.js';
import type { FairwayMetrics } from '../metrics/index.js';
import { type CapRefusal, type ConnectionSlot, WebSocketLimits, type WebSocketStats } from './limits.js';
import { budgetedStream, OutboundBudget } from './stream.js';

/** Counts against the caps, and slow readers closed since start. */
export interface AttachedWebSocketStats extends WebSocketStats {
  slowReadersClosed: number;
}

/**
 * After closing a slow reader, how long its close frame may wait behind the unread data for a
 * client that resumes reading; then the TCP connection is cut (ws alone would wait 30 s).
 */
const SLOW_READER_GRACE_MS = 5_000;

/** The caps (FAIRWAY_WS_*) and their defaults, the same in every environment:
 * src/config/sections/websocket.ts.
 */
export { DEFAULT_WEBSOCKET_CONFIG, type WebSocketConfig } from '../../config/index.js';

/**
 * Close codes this transport uses besides graphql-ws's own (4400, 4408, 4409, 4429 duplicate
 * init, 4500). 44xx mirror the HTTP status a client would get for the same refusal.
 */
export const WS_CLOSE = {
  /** Missing or invalid credential at connection_init (graphql-ws's documented refusal: onConnect returning
   * false).
   */
  forbidden: 4403,
  /** Too many connections for the principal or tenant, or half-open sockets for the address. */
  tooManyConnections: 4429,
  /** The client does not read: more than maxBufferedBytes waited to be sent. Retryable (RFC 6455: "Try Again
   * Later").
   */
  slowReader: 1013,
  /** The database did not answer while the credential was verified. Retryable. */
  unavailable: 1013,
  /** A credential check failed unexpectedly (logged). */
  internal: 1011,
} as const;

export interface AttachWebSocketOptions {
  httpServer: Server;
  yoga: YogaServerInstance<Record<string, unknown>, Record<string, unknown>>;
  identity: IdentityResolver;
  config: WebSocketConfig;
  metrics: FairwayMetrics;
  logError: (error: unknown) => void;
  /** Persisted-operation rule for subscribe messages (webSocketOperationCheck in http-security.ts); absent: any text. */
  operationCheck?: WebSocketOperationCheck | null;
  /**
   * The rate limits' failed-credential budget per client address (src/server/rate-limits/limiter.ts),
   * so guessing tokens in connection_init is cut off as it is over HTTP; absent: limits off.
   */
  credentialAttempts?: WebSocketCredentialAttempts | null;
  /** The client's address for the half-open cap (behind trusted proxies, theirs is not it); absent: the
   * socket's peer.
   */
  addressOf?: (request: IncomingMessage) => string;
}

export interface WebSocketCredentialAttempts {
  /** Seconds to wait when this address may not present a credential now, else null. */
  refusedFor(request: IncomingMessage): Promise<number | null>;
  /** A credential from this address failed verification. */
  failed(request: IncomingMessage): Promise<void>;
}

export interface AttachedWebSocket {
  /** Current counts against the caps (tests and diagnostics). */
  stats(): AttachedWebSocketStats;
  close(): Promise<void>;
}

interface EnvelopedRoot {
  execute: (args: unknown) => unknown;
  subscribe: (args: unknown) => unknown;
}

/** What graphql-ws's ctx.extra carries here: ws's socket and request, and this socket's standing. */
export interface FairwayWebSocketExtra {
  socket: WebSocket;
  request: IncomingMessage;
  /** The principal verified at connection_init (each subscription still builds and re-checks its own
   * context).
   */
  principal?: Principal;
}

/** Close reasons are limited to 123 bytes by RFC 6455. */
function reason(text: string): string {
  return Buffer.byteLength(text) <= 123
    ? text
    : `${Buffer.from(text)
        .subarray(0, 120)
        .toString()
        .replace(/\uFFFD+$/, '')}…`;
}

function closeWith(socket: WebSocket, code: number, text: string): void {
  if (socket.readyState === socket.OPEN || socket.readyState === socket.CONNECTING)
    socket.close(code, reason(text));
}

const CAP_NAMES = { connection: 'per connection', principal: 'per principal', tenant: 'per tenant' } as const;

function tooManySubscriptions(refusal: NonNullable<CapRefusal>): GraphQLError {
  return new GraphQLError(
    `Too many subscriptions: at most ${refusal.limit} open ${CAP_NAMES[refusal.cap]} on this server; complete one first.`,
    {
      extensions: { code: 'RATE_LIMITED', limit: `subscriptions ${CAP_NAMES[refusal.cap]}` },
    },
  );
}

function authorizationOf(params: Record<string, unknown> | undefined): string | null {
  const value = params?.authorization ?? params?.Authorization;
  return typeof value === 'string' ? value : null;
}

/** graphql-ws on the GraphQL endpoint of the HTTP server, through yoga's envelop (same plugins as HTTP), within the caps of `config`. */
export function attachWebSocket(options: AttachWebSocketOptions): AttachedWebSocket {
  const { httpServer, yoga, identity, config, logError } = options;
  const maskError = createMaskError(logError);
  const limits = new WebSocketLimits(config);
  const slots = new WeakMap<WebSocket, ConnectionSlot>();
  const budgets = new WeakMap<WebSocket, OutboundBudget>();
  let slowReadersClosed = 0;
  const wsServer = new WebSocketServer({
    server: httpServer,
    path: yoga.graphqlEndpoint,
    maxPayload: config.maxMessageBytes,
  });

  // Registered before graphql-ws's own listener, so a refused socket is closed before it is served.
  wsServer.on('connection', (socket, request) => {
    const slot = limits.open(options.addressOf?.(request) ?? request.socket.remoteAddress ?? 'unknown');
    socket.once('close', () => slot && limits.close(slot));
    if (!slot)
      return closeWith(
        socket,
        WS_CLOSE.tooManyConnections,
        'Too many connections: too many uninitialised sockets from this address',
      );
    slots.set(socket, slot);
    budgets.set(
      socket,
      new OutboundBudget(
        config.maxBufferedBytes,
        () => socket.bufferedAmount,
        () => {
          slowReadersClosed++;
          closeWith(
            socket,
            WS_CLOSE.slowReader,
            `Slow reader: more than ${config.maxBufferedBytes} bytes waiting to be sent`,
          );
          // The close frame queues behind what the client is not reading: free the memory soon
          // rather than after ws's 30 s closing handshake timeout.
          setTimeout(() => socket.terminate(), SLOW_READER_GRACE_MS).unref();
        },
      ),
    );
  });

  const slotOf = (extra: unknown) => slots.get((extra as FairwayWebSocketExtra).socket);

  const wsCleanup = useServer(
    {
      connectionInitWaitTimeout: config.connectionInitTimeoutMs,
      execute: (args) => (args.rootValue as EnvelopedRoot).execute(args) as never,
      subscribe: async (args) => {
        const result = await (args.rootValue as EnvelopedRoot).subscribe(args);
        const budget = budgets.get((args.contextValue as { socket?: WebSocket }).socket as WebSocket);
        if (
          !budget ||
          !result ||
          typeof (result as AsyncIterable<unknown>)[Symbol.asyncIterator] !== 'function'
        )
          return result as never;
        return budgetedStream(result as AsyncIterable<unknown>, budget) as never;
      },
      onConnect: async (ctx) => {
        const extra = ctx.extra as unknown as FairwayWebSocketExtra;
        const slot = slotOf(extra);
        if (!slot) return false;
        let principal: Principal | null = null;
        const authorization = authorizationOf(ctx.connectionParams);
        const waitSeconds =
          authorization != null ? await options.credentialAttempts?.refusedFor(extra.request) : null;
        if (waitSeconds != null) {
          limits.initialised(slot);
          closeWith(
            extra.socket,
            WS_CLOSE.tooManyConnections,
            `Too many failed credentials from this address; retry in ${waitSeconds} s.`,
          );
          return false;
        }
        try {
          principal = await identity.resolveAuthorization(authorization);
        } catch (error) {
          limits.initialised(slot);
          if (error instanceof FairwayError && error.code === 'UNAUTHENTICATED')
            await options.credentialAttempts?.failed(extra.request);
          if (error instanceof FairwayError)
            closeWith(extra.socket, WS_CLOSE.forbidden, `Forbidden: ${error.message}`);
          else if (isDatabaseUnavailable(error))
            closeWith(extra.socket, WS_CLOSE.unavailable, 'Service unavailable; try again shortly.');
          else {
            logError(error);
            closeWith(extra.socket, WS_CLOSE.internal, 'Unexpected error.');
          }
          return false;
        }
        limits.initialised(slot);
        // Closed while the credential was checked: nothing to admit (its close already ran).
        if (extra.socket.readyState !== extra.socket.OPEN) return false;
        if (!principal) {
          closeWith(
            extra.socket,
            WS_CLOSE.forbidden,
            'Forbidden: send {"authorization": "Bearer <token>"} in connection_init',
          );
          return false;
        }
        const refusal = limits.admit(slot, principal);
        if (refusal) {
          closeWith(
            extra.socket,
            WS_CLOSE.tooManyConnections,
            `Too many connections: at most ${refusal.limit} ${CAP_NAMES[refusal.cap]} on this server`,
          );
          return false;
        }
        extra.principal = principal;
        return true;
      },
      onSubscribe: async (ctx, id, payload) => {
        const slot = slotOf(ctx.extra);
        if (!slot)
          return [
            new GraphQLError('Connection not initialised.', { extensions: { code: 'UNAUTHENTICATED' } }),
          ];
        const refusal = limits.reserve(slot, id);
        if (refusal) return [tooManySubscriptions(refusal)];
        try {
          const {
            schema: enveloped,
            execute,
            subscribe,
            contextFactory,
            parse,
            validate,
          } = yoga.getEnveloped({
            ...ctx,
            req: ctx.extra.request,
            socket: ctx.extra.socket,
            params: payload,
            connectionParams: ctx.connectionParams ?? null,
          });
          const checked = options.operationCheck?.({
            query: payload.query,
            extensions: payload.extensions ?? undefined,
          }) ?? { query: payload.query };
          if ('error' in checked)
            return [new GraphQLError(checked.error, { extensions: { code: checked.code } })];
          // A malformed or over-limit operation (graphql-armor runs inside parse and validate)
          // is answered on its own id; the socket and its other subscriptions carry on.
          let document;
          try {
            document = parse(checked.query);
          } catch (error) {
            if (!(error instanceof Error && error.name === 'GraphQLError')) throw error;
            const code = (error as GraphQLError).extensions?.code;
            return [
              new GraphQLError(error.message, {
                extensions: { code: typeof code === 'string' ? code : 'GRAPHQL_PARSE_FAILED' },
              }),
            ];
          }
          const errors = validate(enveloped, document);
          if (errors.length) {
            return (errors as readonly GraphQLError[]).map(
              (e) =>
                new GraphQLError(e.message, {
                  nodes: e.nodes,
                  extensions: {
                    ...e.extensions,
                    code:
                      typeof e.extensions?.code === 'string'
                        ? e.extensions.code
                        : 'GRAPHQL_VALIDATION_FAILED',
                  },
                }),
            );
          }
          let contextValue: unknown;
          try {
            contextValue = await contextFactory();
          } catch (error) {
            // A credential that no longer verifies: this operation's typed error, not 4500 for the socket.
            return [maskError(error) as GraphQLError];
          }
          return {
            schema: enveloped,
            operationName: payload.operationName,
            document,
            variableValues: payload.variables,
            contextValue,
            rootValue: { execute, subscribe },
          };
        } catch (error) {
          return [maskError(error) as GraphQLError];
        }
      },
      onNext: (ctx) => {
        budgets.get((ctx.extra as unknown as FairwayWebSocketExtra).socket)?.check();
      },
      // An operation answered with errors (refused above included) ends through onError only.
      onError: (ctx, id) => {
        const slot = slotOf(ctx.extra);
        if (slot) limits.release(slot, id);
      },
      onComplete: (ctx, id) => {
        const slot = slotOf(ctx.extra);
        if (slot) limits.release(slot, id);
      },
    },
    wsServer,
  );

  return {
    stats: () => ({ ...limits.stats(), slowReadersClosed }),
    async close() {
      const sockets = [...wsServer.clients];
      const closed = sockets.map(
        (socket) =>
          new Promise<void>((resolve) =>
            socket.readyState === socket.CLOSED ? resolve() : socket.once('close', () => resolve()),
          ),
      );
      await wsCleanup.dispose();
      // dispose() says 1001 and stops listening; a peer that does not answer is cut off, so
      // every slot is given back before close resolves.
      for (const socket of sockets) socket.terminate();
      await Promise.all(closed);
      wsServer.close();
    },
  };
}
