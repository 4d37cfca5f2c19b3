import type { Server } from 'node:http';
import type { GraphQLError } from 'graphql';
import type { YogaServerInstance } from 'graphql-yoga';
import { WebSocketServer } from 'ws';
import { useServer } from 'graphql-ws/use/ws';
import type { IdentityResolver } from '../auth/identity.js';
import type { FairwayMetrics } from './metrics.js';
import { createMaskError } from './errors.js';

export interface WebSocketConfig {
  /** Placeholder (lead): the websocket helper defines the caps. */
  enabled: boolean;
}

/** FAIRWAY_WS_* variables; unset: the defaults. */
export function webSocketFromEnv(_env: NodeJS.ProcessEnv, _nodeEnv: 'development' | 'production' | 'test'): WebSocketConfig {
  return { enabled: true };
}

export interface AttachWebSocketOptions {
  httpServer: Server;
  yoga: YogaServerInstance<Record<string, unknown>, Record<string, unknown>>;
  identity: IdentityResolver;
  config: WebSocketConfig;
  metrics: FairwayMetrics;
  logError: (error: unknown) => void;
}

interface EnvelopedRoot {
  execute: (args: unknown) => unknown;
  subscribe: (args: unknown) => unknown;
}

/** graphql-ws on the GraphQL endpoint of the HTTP server, through yoga's envelop (same plugins as HTTP). */
export function attachWebSocket(options: AttachWebSocketOptions): { close(): Promise<void> } {
  const { httpServer, yoga, logError } = options;
  const wsServer = new WebSocketServer({ server: httpServer, path: yoga.graphqlEndpoint });
  const wsCleanup = useServer(
    {
      execute: (args) => (args.rootValue as EnvelopedRoot).execute(args) as never,
      subscribe: (args) => (args.rootValue as EnvelopedRoot).subscribe(args) as never,
      onSubscribe: async (ctx, _id, payload) => {
        const { schema: enveloped, execute, subscribe, contextFactory, parse, validate } = yoga.getEnveloped({
          ...ctx,
          req: ctx.extra.request,
          socket: ctx.extra.socket,
          params: payload,
          connectionParams: ctx.connectionParams ?? null,
        });
        let contextValue: unknown;
        try {
          contextValue = await contextFactory();
        } catch (error) {
          // A credential that does not verify: answer this subscription with the typed error
          // instead of letting graphql-ws close the socket as an internal error (4500).
          return [createMaskError(logError)(error) as GraphQLError];
        }
        const args = {
          schema: enveloped,
          operationName: payload.operationName,
          document: parse(payload.query),
          variableValues: payload.variables,
          contextValue,
          rootValue: { execute, subscribe },
        };
        const errors = validate(args.schema, args.document);
        if (errors.length) return errors;
        return args;
      },
    },
    wsServer,
  );
  return {
    async close() {
      await wsCleanup.dispose();
      wsServer.close();
    },
  };
}
