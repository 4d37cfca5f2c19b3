import path from 'node:path';
import { z } from 'zod';
import type { QueryLimits } from '../server/query-limits/limits.js';
import { rateLimitsFromEnv, type RateLimitConfig } from '../server/rate-limits/limiter.js';
import { httpSecurityFromEnv, type HttpSecurityConfig } from '../server/http-security/http-security.js';
import { observabilityFromEnv, type ObservabilityConfig } from '../server/observability/observability.js';
import { webSocketFromEnv, type WebSocketConfig } from '../server/websocket/websocket.js';

/** Every setting Fairway reads from the environment, validated once at start. */
const booleanFlag = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

/** A duration in milliseconds: long enough to be meaningful, short enough to still fail fast. */
const millis = (min: number, max: number) =>
  z.coerce.number().int('must be a whole number of milliseconds').min(min, `must be at least ${min} ms`).max(max, `must be at most ${max} ms`);

/**
 * How long Fairway waits on its database before it gives up and answers SERVICE_UNAVAILABLE,
 * so an outage (refused, or packets dropped without an answer) fails requests in seconds
 * instead of hanging them. See `ormConfig` for how each maps onto the drivers.
 */
export interface DatabaseTimeouts {
  /** Opening a connection (TCP and the PostgreSQL handshake). */
  connectMs: number;
  /** PostgreSQL: waiting for a pooled connection. SQLite: waiting for another process's write lock (busy timeout). */
  acquireMs: number;
  /** One statement (PostgreSQL `statement_timeout`; the client stops waiting for an answer a little later). */
  statementMs: number;
}

export const DEFAULT_DATABASE_TIMEOUTS: DatabaseTimeouts = { connectMs: 3000, acquireMs: 3000, statementMs: 4000 };
/** `/ready` must answer a probe within a second, even when the database does not. */
export const DEFAULT_READY_TIMEOUT_MS = 500;
/**
 * FAIRWAY_IDENTITY_CACHE_MS's default (see src/auth/identity-cache.ts). A revocation takes
 * effect through the credentials-changed event, not the TTL: the TTL bounds how stale a
 * cached caller can get when an event is lost (bus delivery is best effort: Redis pub/sub
 * drops messages while a replica is disconnected) or when rights change outside the
 * services (the bootstrap CLI, hand edits in the database). It stays under a minute: a
 * token's lastUsedAt is written on a miss, at most once a minute.
 */
export const DEFAULT_IDENTITY_CACHE_MS = 5000;
/** The price book's currency: one per installation (FAIRWAY_CURRENCY). */
export const DEFAULT_CURRENCY = 'USD';

const envSchema = z
  .object({
    NODE_ENV: z.enum(['development', 'production', 'test']).default('development'),
    PORT: z.coerce.number().int().min(0).max(65535).default(4000),
    HOST: z.string().min(1).default('0.0.0.0'),
    FAIRWAY_DATA_DIR: z.string().min(1).default('./data'),
    DATABASE_URL: z.string().min(1).optional(),
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, 'must start with redis:// or rediss://')
      .optional(),
    // Unset: on outside production (a first run shows something), off in production (no demo
    // data or printed tokens on a real installation; `npm run bootstrap` makes the first admin).
    FAIRWAY_DEMO: booleanFlag.optional(),
    FAIRWAY_GRAPHIQL: booleanFlag.optional(),
    FAIRWAY_SIM_TIME_SCALE: z.coerce.number().positive('must be a positive number').max(1_000_000).default(60),
    FAIRWAY_DEMO_TRICKLE: booleanFlag.optional(),
    // WAL with synchronous=NORMAL: a commit survives the process being killed, not a power cut; FULL fsyncs every commit.
    FAIRWAY_SQLITE_SYNCHRONOUS: z.enum(['normal', 'full']).default('normal'),
    FAIRWAY_DB_CONNECT_TIMEOUT_MS: millis(100, 600_000).default(DEFAULT_DATABASE_TIMEOUTS.connectMs),
    FAIRWAY_DB_ACQUIRE_TIMEOUT_MS: millis(100, 600_000).default(DEFAULT_DATABASE_TIMEOUTS.acquireMs),
    FAIRWAY_DB_STATEMENT_TIMEOUT_MS: millis(100, 3_600_000).default(DEFAULT_DATABASE_TIMEOUTS.statementMs),
    FAIRWAY_READY_TIMEOUT_MS: millis(50, 60_000).default(DEFAULT_READY_TIMEOUT_MS),
    // Under a minute: lastUsedAt is written on a cache miss, at most once a minute (0: no cache).
    FAIRWAY_IDENTITY_CACHE_MS: millis(0, 60_000).default(DEFAULT_IDENTITY_CACHE_MS),
    FAIRWAY_BACKEND: z.enum(['simulated', 'kubernetes']).default('simulated'),
    FAIRWAY_KUBECONFIG: z.string().min(1).optional(),
    FAIRWAY_KUBERNETES_SETTINGS: z.string().min(1).optional(),
    FAIRWAY_KUBERNETES_STARTUP_TIMEOUT_MS: millis(1000, 600_000).default(30_000),
    OIDC_ISSUER: z.string().url().optional(),
    OIDC_AUDIENCE: z.string().min(1).optional(),
    OIDC_JWKS_URL: z.string().url().optional(),
    OIDC_PUBLIC_KEY: z.string().min(1).optional(),
    OIDC_USER_CLAIM: z.string().min(1).default('email'),
    OIDC_ROLES_CLAIM: z.string().min(1).default('fairway_roles'),
    FAIRWAY_METERING_INTERVAL_MS: z.coerce.number().int().min(100, 'must be at least 100').max(3_600_000, 'must be at most an hour').optional(),
    FAIRWAY_CYCLE_SLICE_MS: z.coerce.number().int().min(0).max(60_000, 'must be at most 60000').optional(),
    FAIRWAY_QUOTA_REQUEST_INTERVAL_MS: millis(100, 3_600_000).optional(),
    FAIRWAY_CONTROLLER_WINDOW_MS: millis(1000, 86_400_000).optional(),
    FAIRWAY_IDLE_CHECK_INTERVAL_MS: z.coerce.number().int().min(0).max(3_600_000, 'must be at most an hour').refine((v) => v === 0 || v >= 1000, 'must be 0 (off) or at least 1000').optional(),
    FAIRWAY_PROBE_INTERVAL_MS: millis(1000, 3_600_000).default(60_000),
    FAIRWAY_PROBE_RETENTION_HOURS: z.coerce.number().positive('must be a positive number of hours').max(24 * 366, 'must be at most a year').default(168),
    FAIRWAY_PROBES_PROMETHEUS_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL of a Prometheus server' }).optional(),
    FAIRWAY_PROBES_PROMETHEUS_INTERVAL_MS: millis(1000, 3_600_000).default(30_000),
    FAIRWAY_METRICS_TOKEN: z.string().min(16, 'must be at least 16 characters (a shared secret for Prometheus)').optional(),
    FAIRWAY_CURRENCY: z.string().regex(/^[A-Z]{3}$/, 'must be a 3-letter ISO 4217 code such as USD').default(DEFAULT_CURRENCY),
    // Query limits (src/server/query-limits/limits.ts holds the defaults; unset: the default).
    FAIRWAY_MAX_DEPTH: z.coerce.number().int().min(1).max(1000).optional(),
    FAIRWAY_MAX_ALIASES: z.coerce.number().int().min(0).max(100_000).optional(),
    FAIRWAY_MAX_COST: z.coerce.number().int().min(1).max(100_000_000).optional(),
    FAIRWAY_MAX_TOKENS: z.coerce.number().int().min(100, 'must be at least 100').max(10_000_000).optional(),
    FAIRWAY_MAX_DIRECTIVES: z.coerce.number().int().min(0).max(100_000).optional(),
    FAIRWAY_MAX_BODY_BYTES: z.coerce.number().int().min(1024, 'must be at least 1024').max(1_000_000_000).optional(),
    FAIRWAY_MAX_BATCH: z.coerce.number().int().min(0).max(1000).optional(),
    FAIRWAY_MAX_EXECUTION_MS: z.coerce.number().int().min(1).max(600_000).optional(),
    FAIRWAY_INTROSPECTION: booleanFlag.optional(),
    FAIRWAY_FIELD_SUGGESTIONS: booleanFlag.optional(),
  })
  .superRefine((env, ctx) => {
    const oidcKeySources = [env.OIDC_JWKS_URL, env.OIDC_PUBLIC_KEY].filter(Boolean).length;
    if (env.OIDC_ISSUER && oidcKeySources === 0) {
      ctx.addIssue({ code: 'custom', path: ['OIDC_JWKS_URL'], message: 'OIDC_ISSUER is set: also set OIDC_JWKS_URL or OIDC_PUBLIC_KEY so tokens can be verified' });
    }
    if (oidcKeySources > 0 && !env.OIDC_ISSUER) {
      ctx.addIssue({ code: 'custom', path: ['OIDC_ISSUER'], message: 'set OIDC_ISSUER: JWTs are only accepted from a named issuer' });
    }
    if (oidcKeySources > 1) {
      ctx.addIssue({ code: 'custom', path: ['OIDC_PUBLIC_KEY'], message: 'set only one of OIDC_JWKS_URL and OIDC_PUBLIC_KEY' });
    }
  });

export type DatabaseConfig =
  | { dialect: 'sqlite'; file: string; synchronous?: 'normal' | 'full' }
  | { dialect: 'postgresql'; url: string };

export interface OidcConfig {
  issuer: string;
  audience?: string;
  jwksUrl?: string;
  publicKeyPem?: string;
  userClaim: string;
  rolesClaim: string;
}

export interface FairwayConfig {
  env: 'development' | 'production' | 'test';
  port: number;
  host: string;
  dataDir: string;
  database: DatabaseConfig;
  /** Default: DEFAULT_DATABASE_TIMEOUTS. */
  databaseTimeouts?: DatabaseTimeouts;
  /** How long `/ready` waits for the database before answering 503 (default DEFAULT_READY_TIMEOUT_MS). */
  readyTimeoutMs?: number;
  /** How long a resolved caller is reused without the database (FAIRWAY_IDENTITY_CACHE_MS; default DEFAULT_IDENTITY_CACHE_MS, 0: off). */
  identityCacheMs?: number;
  redisUrl?: string;
  demo: boolean;
  /** Keep submitting small demo jobs so queues move (demo only). */
  demoTrickle: boolean;
  graphiql: boolean;
  /** Simulated cluster speed: 60 = a declared hour runs in one minute. */
  simulatedTimeScale: number;
  /** Where admitted jobs run (FAIRWAY_BACKEND). Default: the simulated cluster. */
  backend?: BackendConfig;
  oidc?: OidcConfig;
  /** The price book's currency, ISO 4217 (FAIRWAY_CURRENCY; default DEFAULT_CURRENCY). */
  currency?: string;
  /** Running jobs' usage is written to the ledger this often (FAIRWAY_METERING_INTERVAL_MS; default 60 000, the demo 15 000). */
  meteringIntervalMs?: number;
  /** Admission cycles run in slices of about this many ms, requests answered between them (FAIRWAY_CYCLE_SLICE_MS; unset: 20; 0: unsliced). */
  cycleSliceMs?: number;
  /** How often the leader activates approved quota requests whose start came and expires temporary ones (FAIRWAY_QUOTA_REQUEST_INTERVAL_MS; unset: 30 000). */
  quotaRequestIntervalMs?: number;
  /** How often the leader checks governed queues' jobs for idle and held reclaim (FAIRWAY_IDLE_CHECK_INTERVAL_MS; unset: 60 000; 0: off). */
  idleCheckIntervalMs?: number;
  /** The governance controller's default window (FAIRWAY_CONTROLLER_WINDOW_MS; unset: 300 000); platform admins may set another. */
  controllerWindowMs?: number;
  /** A bearer token that may read `/metrics` besides platform admins (FAIRWAY_METRICS_TOKEN). */
  metricsToken?: string;
  /** Runtime probes: stored sample interval, retention, and the Kubernetes backend's Prometheus source (FAIRWAY_PROBE_*, FAIRWAY_PROBES_PROMETHEUS_*). */
  probes?: { intervalMs?: number; retentionHours?: number; pollMs?: number; prometheusUrl?: string };
  /** Query limits overriding the defaults (FAIRWAY_MAX_*, FAIRWAY_INTROSPECTION…; see src/server/query-limits/limits.ts). */
  limits?: Partial<QueryLimits>;
  /** Per-token and per-tenant request rates (FAIRWAY_RATE_*; see src/server/rate-limits/limiter.ts). The four below: unset, the defaults for `env`. */
  rateLimits?: RateLimitConfig;
  /** CORS, CSRF prevention, security headers, persisted operations (see src/server/http-security/http-security.ts). */
  http?: HttpSecurityConfig;
  /** Logs and tracing (LOG_LEVEL, FAIRWAY_TRACING…; see src/server/observability/observability.ts). */
  observability?: ObservabilityConfig;
  /** WebSocket caps (FAIRWAY_WS_*; see src/server/websocket/websocket.ts). */
  webSocket?: WebSocketConfig;
}

export type BackendConfig =
  | { kind: 'simulated' }
  | {
      kind: 'kubernetes';
      /** FAIRWAY_KUBECONFIG; unset: in-cluster (service account), else $KUBECONFIG or ~/.kube/config. */
      kubeconfigPath?: string;
      /** FAIRWAY_KUBERNETES_SETTINGS: a YAML file of the backend's settings (flavor mapping, labels…). */
      settingsFile?: string;
      /** How long start-up waits for the first list of Jobs, Pods and Nodes before it gives up. */
      startupTimeoutMs: number;
    };

export class ConfigError extends Error {
  constructor(public readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

function withSqliteSync(database: DatabaseConfig, synchronous: 'normal' | 'full'): DatabaseConfig {
  return database.dialect === 'sqlite' ? { ...database, synchronous } : database;
}

export function parseDatabaseUrl(url: string | undefined, dataDir: string): DatabaseConfig {
  if (!url) return { dialect: 'sqlite', file: path.resolve(dataDir, 'fairway.db') };
  if (/^postgres(ql)?:\/\//.test(url)) return { dialect: 'postgresql', url };
  const sqlite = /^(sqlite|file):(\/\/)?(.+)$/.exec(url);
  if (sqlite) {
    const file = sqlite[3]!;
    return { dialect: 'sqlite', file: file === ':memory:' ? file : path.resolve(file) };
  }
  throw new ConfigError([
    `DATABASE_URL: "${redactUrl(url)}" is not supported; use postgres://user@host:5432/db or sqlite:path/to/file.db`,
  ]);
}

function redactUrl(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:***@');
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): FairwayConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => `${issue.path.join('.') || 'environment'}: ${issue.message}`),
    );
  }
  const e = parsed.data;
  const dataDir = path.resolve(e.FAIRWAY_DATA_DIR);
  const demo = e.FAIRWAY_DEMO ?? e.NODE_ENV !== 'production';
  return {
    env: e.NODE_ENV,
    port: e.PORT,
    host: e.HOST,
    dataDir,
    database: withSqliteSync(parseDatabaseUrl(e.DATABASE_URL, dataDir), e.FAIRWAY_SQLITE_SYNCHRONOUS),
    databaseTimeouts: {
      connectMs: e.FAIRWAY_DB_CONNECT_TIMEOUT_MS,
      acquireMs: e.FAIRWAY_DB_ACQUIRE_TIMEOUT_MS,
      statementMs: e.FAIRWAY_DB_STATEMENT_TIMEOUT_MS,
    },
    readyTimeoutMs: e.FAIRWAY_READY_TIMEOUT_MS,
    identityCacheMs: e.FAIRWAY_IDENTITY_CACHE_MS,
    redisUrl: e.REDIS_URL,
    demo,
    demoTrickle: e.FAIRWAY_DEMO_TRICKLE ?? e.NODE_ENV !== 'production',
    simulatedTimeScale: e.FAIRWAY_SIM_TIME_SCALE,
    backend:
      e.FAIRWAY_BACKEND === 'kubernetes'
        ? { kind: 'kubernetes', kubeconfigPath: e.FAIRWAY_KUBECONFIG, settingsFile: e.FAIRWAY_KUBERNETES_SETTINGS, startupTimeoutMs: e.FAIRWAY_KUBERNETES_STARTUP_TIMEOUT_MS }
        : { kind: 'simulated' },
    graphiql: e.FAIRWAY_GRAPHIQL ?? e.NODE_ENV !== 'production',
    currency: e.FAIRWAY_CURRENCY,
    metricsToken: e.FAIRWAY_METRICS_TOKEN,
    limits: {
      maxDepth: e.FAIRWAY_MAX_DEPTH,
      maxAliases: e.FAIRWAY_MAX_ALIASES,
      maxCost: e.FAIRWAY_MAX_COST,
      maxTokens: e.FAIRWAY_MAX_TOKENS,
      maxDirectives: e.FAIRWAY_MAX_DIRECTIVES,
      maxBodyBytes: e.FAIRWAY_MAX_BODY_BYTES,
      maxBatch: e.FAIRWAY_MAX_BATCH,
      maxExecutionMs: e.FAIRWAY_MAX_EXECUTION_MS,
      introspection: e.FAIRWAY_INTROSPECTION,
      fieldSuggestions: e.FAIRWAY_FIELD_SUGGESTIONS,
    },
    rateLimits: rateLimitsFromEnv(env, e.NODE_ENV),
    http: httpSecurityFromEnv(env, e.NODE_ENV),
    observability: observabilityFromEnv(env, e.NODE_ENV),
    webSocket: webSocketFromEnv(env, e.NODE_ENV),
    // The demo writes usage every 15 s, so its GPU-hours and cost show within the first minute.
    meteringIntervalMs: e.FAIRWAY_METERING_INTERVAL_MS ?? (demo ? 15_000 : 60_000),
    cycleSliceMs: e.FAIRWAY_CYCLE_SLICE_MS,
    quotaRequestIntervalMs: e.FAIRWAY_QUOTA_REQUEST_INTERVAL_MS,
    idleCheckIntervalMs: e.FAIRWAY_IDLE_CHECK_INTERVAL_MS,
    controllerWindowMs: e.FAIRWAY_CONTROLLER_WINDOW_MS,
    probes: { intervalMs: e.FAIRWAY_PROBE_INTERVAL_MS, retentionHours: e.FAIRWAY_PROBE_RETENTION_HOURS, pollMs: e.FAIRWAY_PROBES_PROMETHEUS_INTERVAL_MS, prometheusUrl: e.FAIRWAY_PROBES_PROMETHEUS_URL },
    oidc: e.OIDC_ISSUER
      ? {
          issuer: e.OIDC_ISSUER,
          audience: e.OIDC_AUDIENCE,
          jwksUrl: e.OIDC_JWKS_URL,
          publicKeyPem: e.OIDC_PUBLIC_KEY,
          userClaim: e.OIDC_USER_CLAIM,
          rolesClaim: e.OIDC_ROLES_CLAIM,
        }
      : undefined,
  };
}
