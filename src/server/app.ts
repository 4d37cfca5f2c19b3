import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import type { MikroORM } from '@mikro-orm/core';
import { createYoga, type YogaServerInstance } from 'graphql-yoga';
import { useBreakGlassAudit } from '../../plugins/useBreakGlassAudit.js';
import { useCallerConcurrency } from '../../plugins/useCallerConcurrency.js';
import { useConsole } from '../../plugins/useConsole.js';
import { useExecutionTimeout } from '../../plugins/useExecutionTimeout.js';
import { useFairwayAuth } from '../../plugins/useFairwayAuth.js';
import { useGraphqlJit } from '../../plugins/useGraphqlJit.js';
import { useMetrics } from '../../plugins/useMetrics.js';
import { useQueryLimits } from '../../plugins/useQueryLimits.js';
import { useRateLimits } from '../../plugins/useRateLimits.js';
import { useRequestId } from '../../plugins/useRequestId.js';
import { useRoutes } from '../../plugins/useRoutes.js';
import { useServiceContext } from '../../plugins/useServiceContext.js';
import { useSubscriptionEventContext } from '../../plugins/useSubscriptionEventContext.js';
import { schema } from '../../schema/index.js';
import { readsNothingStored } from '../../schema/reloading-subscription.js';
import { IdentityCache, IdentityResolver, OidcVerifier } from '../auth/index.js';
import type { ExecutionBackend } from '../backends/port.js';
import type { FairwayConfig } from '../config/index.js';
import { createEventBus, createRedisEventTarget, type EventBus } from '../events/index.js';
import { drainConnections, migrate, openDatabase } from '../persistence/orm.js';
import { type GovernanceTaskSettings, governanceLeaderTasks } from '../services/governance/index.js';
import { inferenceAutoscalerTask } from '../services/inference/index.js';
import { JobLogsService, logRetentionTask } from '../services/logs/index.js';
import { computeHolds, evaluateBudgets } from '../services/metering/index.js';
import {
  BackendSync,
  ensurePriorityClasses,
  leadershipFor,
  SchedulerService,
} from '../services/scheduling/index.js';
import { backendFromConfig } from './backend-from-config.js';
import { isBreakGlassGrantEnded, serviceContexts, subscriptionEventStore } from './context/index.js';
import { createMaskError, errorCode } from './errors.js';
import { httpSecurity, httpSecurityFromConfig, webSocketOperationCheck } from './http-security/index.js';
import { createMetrics, type FairwayMetrics } from './metrics/index.js';
import { createLogger, type FairwayLogger, observabilityPlugins, yogaLogger } from './observability/index.js';
import { clientAddressBehind, createRateLimiter } from './rate-limits/index.js';
import { methodNotAllowed, serverRoutes } from './routes/index.js';
import { type AttachedWebSocket, attachWebSocket } from './websocket/index.js';

/** Where `npm run console:build` puts the console. */
const CONSOLE_DIR = fileURLToPath(new URL('../../web/dist', import.meta.url));

export interface BuildAppOptions {
  config: FairwayConfig;
  /** An already opened database (tests); otherwise one is opened from the config and migrated. */
  orm?: MikroORM;
  /** The clock for token expiry and timestamps (tests move it). */
  now?: () => number;
  /** Where unexpected errors are logged (never sent to clients). */
  logError?: (error: unknown) => void;
  /** The structured logger (default: pino from config.observability). */
  logger?: FairwayLogger;
  /** Every SQL statement, for tests that count them. */
  onQuery?: (sql: string) => void;
  /** The built web console (default: the repository's web/dist). */
  consoleDir?: string;
  /** Where admitted jobs run; default: the simulated cluster. */
  backend?: ExecutionBackend;
  /** How long a subscription may rely on its last credential check (tests: 0). */
  reauthCacheMs?: number;
  /** An event bus shared with other apps in this process (tests: two replicas without Redis); default: one
   * of its own.
   */
  events?: EventBus;
  /** Scheduler tuning for tests. */
  scheduler?: { debounceMs?: number; resyncIntervalMs?: number; leaderRetryMs?: number };
  /** Governance loop settings (tests: short periods); the configuration's otherwise. */
  governance?: Partial<Omit<GovernanceTaskSettings, 'now'>>;
  /** The autoscaler's settings over the configuration's (tests: an interval they drive themselves). */
  inference?: { intervalMs?: number };
}

export interface FairwayApp {
  config: FairwayConfig;
  orm: MikroORM;
  yoga: YogaServerInstance<Record<string, unknown>, Record<string, unknown>>;
  events: EventBus;
  scheduler: SchedulerService;
  /** This app's Prometheus registry and instruments (served at /metrics). */
  metrics: FairwayMetrics;
  backend: ExecutionBackend;
  /** Node inventory and tenant isolation between the backend and the database (Kubernetes); null for the
   * simulated cluster.
   */
  backendSync: BackendSync | null;
  httpServer: Server;
  /** graphql-ws on the same port: open sockets and operations (stats) under their caps. */
  webSocket: AttachedWebSocket;
  /** Starts HTTP and WebSocket on one port; resolves with the GraphQL URL. */
  listen(port?: number, host?: string): Promise<{ url: string; port: number }>;
  close(): Promise<void>;
}

/** The one place that wires database, identity, events, schema, plugins and transports. */
export async function buildApp(options: BuildAppOptions): Promise<FairwayApp> {
  const config = options.config;
  // The persisted-operations manifest is read and checked first: a broken one stops start-up before anything
  // is opened.
  const http = httpSecurityFromConfig(config.http);
  const now = options.now ?? Date.now;
  const logger = options.logger ?? createLogger(config.observability);
  const logError = options.logError ?? ((error: unknown) => logger.error({ err: error }, 'unexpected error'));
  const ownsOrm = !options.orm;
  const orm =
    options.orm ??
    (await openDatabase({
      database: config.database,
      timeouts: config.database.timeouts,
      onQuery: options.onQuery,
    }));
  if (ownsOrm) await migrate(orm);

  await ensurePriorityClasses(orm);
  const redis =
    config.server.redisUrl && !options.events
      ? await createRedisEventTarget(config.server.redisUrl, (error) => logError(error))
      : null;
  const events = options.events ?? createEventBus(redis?.eventTarget);
  const backend =
    options.backend ??
    (await backendFromConfig(config.backend, config.governance.probes, {
      now,
      logError,
      logArchiveBytes: config.logs.archiveBytes,
    }));
  const metrics = createMetrics({ timeScale: backend.timeScale });
  const scheduler: SchedulerService = new SchedulerService({
    orm,
    dialect: config.database.dialect,
    backend,
    events,
    now,
    leadership: leadershipFor(config.database),
    logError,
    meteringIntervalMs: config.metering.intervalMs,
    cycleSliceMs: config.scheduling.cycleSliceMs,
    groupCommitMs: config.scheduling.groupCommitMs,
    disruptionBackoff: {
      baseMs: config.scheduling.disruptionBackoffMs,
      maxMs: config.scheduling.disruptionBackoffMaxMs,
    },
    // Budgets: thresholds are evaluated after each metering checkpoint; exhausted hard budgets hold
    // admission.
    metering: {
      currency: config.metering.currency,
      afterCheckpoint: (em, nowMs, currency) => evaluateBudgets(em, null, nowMs, currency),
      holds: computeHolds,
    },
    observeCycle: metrics.observeCycle,
    leaderTasks: [
      logRetentionTask(config.logs.retentionDays),
      inferenceAutoscalerTask({
        intervalMs: options.inference?.intervalMs ?? config.inference.intervalMs,
        backend,
        scheduler: (): SchedulerService => scheduler,
      }),
      ...governanceLeaderTasks({
        now,
        quotaRequestIntervalMs: config.governance.quotaRequestIntervalMs,
        idleCheckIntervalMs: config.governance.idleCheckIntervalMs,
        controller: { windowMs: config.governance.controllerWindowMs },
        backend,
        probes: config.governance.probes,
        ...options.governance,
      }),
    ],
    ...options.scheduler,
  });
  const logs = new JobLogsService({
    orm,
    backend,
    events,
    settings: config.logs,
    logError,
  });
  logs.start();
  // A backend that isolates tenants gets their namespaces before the scheduler reconciles runs;
  // its node inventory is written by the leader once the scheduler has started.
  const backendSync =
    backend.onInventory || backend.syncTenants
      ? new BackendSync({
          orm,
          backend,
          events,
          isLeader: () => scheduler.isLeader,
          announce: (input) => scheduler.announce(input),
          logError,
          log: (m) => logger.info({ component: 'backend-sync' }, m),
        })
      : null;
  await backendSync?.start();
  await scheduler.start();
  await backendSync?.request();
  metrics.watchScheduler({ stats: scheduler.stats(), logError });
  if (backend.probeHealth) metrics.watchProbes(() => backend.probeHealth!());
  const identityCache = new IdentityCache({ ttlMs: config.auth.identityCacheMs, now });
  const stopIdentityCache = identityCache.follow(events, logError);
  const identity = new IdentityResolver({
    orm,
    oidc: config.auth.oidc ? new OidcVerifier(config.auth.oidc) : undefined,
    now,
    cache: identityCache,
  });

  const limits = config.limits;
  const rateLimiter = await createRateLimiter(config.rateLimits, {
    redisUrl: config.server.redisUrl,
    logError,
  });
  const security = await httpSecurity(http);
  const observability = observabilityPlugins(config.observability, { logger });
  const contexts = serviceContexts({
    orm,
    events,
    scheduler,
    logs,
    now,
    currency: config.metering.currency,
    groupCommitMs: config.scheduling.groupCommitMs,
  });
  const clientAddress = clientAddressBehind(config.rateLimits.trustProxyHops);
  const routes = serverRoutes({
    readiness: {
      check: () =>
        orm.em
          .getConnection()
          .execute('select 1')
          .then(() => undefined),
      timeoutMs: config.server.readyTimeoutMs,
    },
    usageExport: { identity, createContext: contexts.forRoute, logError },
    metrics: { metrics, identity, token: config.observability.metricsToken, logError },
    consoleOidc: { ...(config.auth.oidc ? { oidc: config.auth.oidc } : {}), logError },
  });
  // Subscription events under way (useSubscriptionEventContext): close() waits for them before the database.
  const eventsInFlight = new Set<Promise<unknown>>();
  const yoga = createYoga<Record<string, unknown>>({
    schema,
    // Query limits: body size and batching here, the rest in useQueryLimits
    // (src/server/query-limits/limits.ts).
    maxRequestBodySize: limits.maxBodyBytes,
    batching: limits.maxBatch > 0 ? { limit: limits.maxBatch } : false,
    graphqlEndpoint: '/graphql',
    cors: security.cors,
    healthCheckEndpoint: '/health',
    landingPage: false,
    // Unexpected errors are logged by maskError; yoga's own messages go to the structured log.
    logging: yogaLogger(logger),
    graphiql: config.server.graphiql
      ? {
          title: 'Fairway',
          subscriptionsProtocol: 'WS',
          headers: JSON.stringify({
            Authorization: `Bearer <paste a token from ${config.demo.enabled ? 'data/demo-credentials.json' : '`npm run bootstrap` or createApiToken'}>`,
          }),
        }
      : false,
    // GraphiQL's scripts and styles come from the installed package, inlined in the page, not
    // from a CDN: it works offline and where the CDN is blocked. Loaded on the first visit only
    // (the bundle is ~9 MB), so servers and tests that never open it do not pay for it.
    renderGraphiQL: (options) =>
      import('@graphql-yoga/render-graphiql').then((m) => m.renderGraphiQL(options)),
    maskedErrors: { maskError: createMaskError(logError) },
    plugins: [
      ...security.plugins,
      // Before anything is parsed or looked up: one caller's requests take turns.
      ...(config.rateLimits.enabled
        ? [
            useCallerConcurrency({
              ...config.rateLimits.concurrency,
              clientAddress,
              graphqlEndpoint: '/graphql',
            }),
          ]
        : []),
      useQueryLimits(limits),
      // Compiled execution (config.execution.jit) before the timeout, which bounds whichever executor it finds.
      ...(config.execution.jit ? [useGraphqlJit({ onCompileError: logError })] : []),
      useExecutionTimeout({ maxExecutionMs: limits.maxExecutionMs }),
      // /ready, /usage/export.csv, /metrics (src/server/routes/): answered here, before anything GraphQL.
      useRoutes({ routes, methodNotAllowed }),
      // The web console at / (web/, built into web/dist): its pages and hashed assets.
      useConsole({ dir: options.consoleDir ?? CONSOLE_DIR }),
      useMetrics({ metrics, errorCode }),
      useRequestId(),
      useFairwayAuth({ identity, reauthCacheMs: options.reauthCacheMs }),
      useRateLimits({ limiter: rateLimiter, clientAddress, logError }),
      ...observability.plugins,
      useServiceContext({ createContext: contexts.forOperation }),
      useBreakGlassAudit({ isGrantEnded: isBreakGlassGrantEnded, logError }),
      // After the two above: each subscription event gets its own principal, EntityManager and loaders.
      useSubscriptionEventContext({
        store: subscriptionEventStore(orm),
        readsNothingStored,
        inFlight: eventsInFlight,
      }),
    ],
  });

  // Idle keep-alive connections are closed by the client or the proxy in front, not by us: a server that
  // closes first races a client reusing the socket (its request is reset). Proxies' idle timeouts are
  // commonly 60 s; headers must arrive within a little more.
  const httpServer = createServer({ keepAliveTimeout: 65_000, headersTimeout: 66_000 }, yoga);
  const webSocket = attachWebSocket({
    httpServer,
    yoga: yoga as never,
    identity,
    config: config.webSocket,
    metrics,
    logError,
    operationCheck: webSocketOperationCheck(http),
    addressOf: (req) => clientAddress({ req }),
    // Guessing tokens in connection_init counts against the same per-address budget as over HTTP.
    // (With the limits off the limiter allows every attempt.)
    credentialAttempts: {
      refusedFor: async (req) =>
        (await rateLimiter.credentialAttemptAllowed(clientAddress({ req })))?.retryAfterSeconds ?? null,
      failed: (req) => rateLimiter.credentialFailed(clientAddress({ req })),
    },
  });

  let closed = false;
  return {
    config,
    orm,
    yoga: yoga as never,
    events,
    scheduler,
    metrics,
    backend,
    backendSync,
    httpServer,
    webSocket,
    listen(port = config.server.port, host = config.server.host) {
      return new Promise((resolve, reject) => {
        httpServer.once('error', reject);
        httpServer.listen(port, host, () => {
          const address = httpServer.address() as AddressInfo;
          const shownHost = host === '0.0.0.0' || host === '::' ? 'localhost' : host;
          resolve({ url: `http://${shownHost}:${address.port}${yoga.graphqlEndpoint}`, port: address.port });
        });
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      await backendSync?.stop();
      await scheduler.stop();
      await logs.stop();
      await backend.close();
      await webSocket.close();
      stopIdentityCache();
      httpServer.closeAllConnections?.();
      await new Promise<void>((resolve) =>
        httpServer.listening ? httpServer.close(() => resolve()) : resolve(),
      );
      // No subscription (socket or HTTP) is left to start an event; the ones under way end their transactions.
      await Promise.allSettled([...eventsInFlight]);
      await redis?.close();
      await rateLimiter.close();
      await observability.close();
      // Whatever began before the server stopped taking work ends before the pool closes.
      await drainConnections(orm);
      if (ownsOrm) await orm.close(true);
    },
  };
}
