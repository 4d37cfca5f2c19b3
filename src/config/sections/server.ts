import { z } from 'zod';
import { millis, type NodeEnv, optionalFlag, section } from '../section.js';

/** `/ready` must answer a probe within a second, even when the database does not. */
export const DEFAULT_READY_TIMEOUT_MS = 500;

export interface ServerConfig {
  /** NODE_ENV: production turns the demo, GraphiQL, introspection and field suggestions off by default. */
  env: NodeEnv;
  port: number;
  host: string;
  /** FAIRWAY_DATA_DIR, absolute: the SQLite file and the demo credentials. */
  dataDir: string;
  /** Serve GraphiQL at /graphql. */
  graphiql: boolean;
  /** How long `/ready` waits for the database before answering 503. */
  readyTimeoutMs: number;
  /** Events (subscriptions, scheduler wake-ups) and rate-limit counters shared across replicas; unset: in
   * this process only.
   */
  redisUrl?: string;
}

export const serverSection = section({
  key: 'server',
  title: 'Server',
  description: 'The HTTP and WebSocket listener, the process environment and where local state is kept.',
  variables: {
    NODE_ENV: z
      .enum(['development', 'production', 'test'])
      .default('development')
      .describe(
        'The environment. `production` turns the demo, its trickle, GraphiQL, introspection and field suggestions off unless they are set, and logs at `info`.',
      ),
    PORT: z.coerce
      .number()
      .int()
      .min(0)
      .max(65535)
      .default(4000)
      .describe('HTTP and WebSocket port (`0`: any free port).'),
    HOST: z.string().min(1).default('0.0.0.0').describe('Interface to listen on.'),
    FAIRWAY_DATA_DIR: z
      .string()
      .min(1)
      .default('./data')
      .describe(
        'Folder of the SQLite database (when `DATABASE_URL` is unset) and of the demo credentials; relative to the working directory.',
      )
      .meta({ typeText: 'folder path' }),
    FAIRWAY_GRAPHIQL: optionalFlag(
      'Serve GraphiQL at `/graphql` (self-contained: no CDN needed).',
      '`true` unless `NODE_ENV=production`',
    ),
    FAIRWAY_READY_TIMEOUT_MS: millis(50, 60_000)
      .default(DEFAULT_READY_TIMEOUT_MS)
      .describe('Milliseconds `/ready` waits for the database to answer `select 1` before it answers 503.'),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'must start with redis:// or rediss://')
      .optional()
      .describe(
        '`redis://…` or `rediss://…`: subscriptions, scheduler wake-ups and rate-limit counters cross replicas. Unset: events stay in this process and each replica limits on its own.',
      )
      .meta({ typeText: 'URL (`redis://`, `rediss://`)' }),
  },
  resolve: (v, ctx): ServerConfig => ({
    env: v.NODE_ENV,
    port: v.PORT,
    host: v.HOST,
    dataDir: ctx.dataDir,
    graphiql: v.FAIRWAY_GRAPHIQL ?? v.NODE_ENV !== 'production',
    readyTimeoutMs: v.FAIRWAY_READY_TIMEOUT_MS,
    redisUrl: v.REDIS_URL,
  }),
});
