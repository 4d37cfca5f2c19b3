import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { z } from 'zod';
import { ConfigError } from '../../config/index.js';

/**
 * Request rates per caller, so one token (or one guesser) cannot take a replica, or the
 * database behind it, away from everyone else.
 *
 * Each bucket is a rate-limiter-flexible fixed window: `burst` points per `burst / perSecond`
 * seconds. That is a token bucket's promise, coarsened: on average `perSecond`, and up to
 * `burst` at once (a window edge can allow two bursts back to back, never more).
 *
 * Defaults, for a client across a network: a portal page makes ~5 requests, a script that
 * polls or submits in a loop waits for each answer (a few ms to tens of ms away) and stays
 * under ~20-50 requests/s. 50/s sustained with bursts of 200 per token is that with room to
 * spare, and cuts issue 13's 140 requests/s to 50 within 4 s. A tenant gets 3 busy tokens'
 * worth (150/s, burst 600), so no single tenant, however many tokens it mints, can take the
 * gateway from the others. Anonymous callers can do little but fail (and introspect in
 * development): 300 a minute per IP. Failed credentials: 20 a minute per IP, then every
 * credential from that IP is refused until the minute is over; guessing a 32-byte token stays
 * hopeless, a person who mistyped one is back within a minute.
 *
 * NODE_ENV=test multiplies every default by TEST_BUDGET_FACTOR. Measured with the suite on a
 * loaded 2-core machine (a 4-s window's peak): one token 144 points (role-matrix-projects),
 * 108 (cross-tenant, which walks the whole schema), one tenant 279, anonymous 87 a minute,
 * failed credentials 11 a minute (auth-jwt). An idle machine runs these loops several times
 * faster, on localhost, with no network between: faster than any remote client, so the
 * production numbers would refuse them. The limits stay on in tests; the rate-limit tests set
 * small budgets of their own.
 */

/** What an operation costs: writes (a mutation, previewJob among them) cost more than reads. */
export const OPERATION_COST = { query: 1, subscription: 1, mutation: 3 } as const;
/** NODE_ENV=test: every default budget × this (see above). */
export const TEST_BUDGET_FACTOR = 20;
/** Platform admins operate every tenant: their own bucket is this many times a token's. */
export const PLATFORM_ADMIN_FACTOR = 4;

export interface Bucket {
  /** Points regained per second on average. */
  perSecond: number;
  /** Points that may be spent at once. */
  burst: number;
}

export interface RateLimitConfig {
  enabled: boolean;
  /** Per principal: an API token, else the signed-in user. */
  principal: Bucket;
  /** Per tenant, shared by all its tokens and (single-tenant) users. */
  tenant: Bucket;
  /** Per client IP, for requests without a credential. */
  anonymousPerMinute: number;
  /** Per client IP: failed credentials a minute before its credential attempts are refused. */
  authFailuresPerMinute: number;
  /** Reverse proxies in front of Fairway whose X-Forwarded-For entries are believed (0: none; the socket's address). */
  trustProxyHops: number;
  /** Prefix of the Redis keys (replicas of one deployment must share it). */
  keyPrefix: string;
  /** Requests of one caller executing at once, and waiting their turn (plugins/useCallerConcurrency.ts). */
  concurrency: { maxInFlight: number; maxQueued: number; maxWaitMs: number };
}

/**
 * Tests run many apps, in parallel files, against one Redis, with row ids that repeat across
 * their databases: each test process gets its own prefix so they never share a budget (two
 * apps in one test still do).
 */
const TEST_PROCESS_PREFIX = `fairway:rate:test-${randomBytes(4).toString('hex')}`;

export const DEFAULT_RATE_BUDGETS = { tokenPerSecond: 50, tokenBurst: 200, tenantPerSecond: 150, tenantBurst: 600, anonymousPerMinute: 300, authFailuresPerMinute: 20 } as const;

/**
 * One caller's requests at once: 4 execute (a portal page's parallel requests mostly fit; the
 * rest wait milliseconds), 64 wait their turn for at most 10 s, more are refused. Measured with
 * `npm run bench:flood`: see bench/RESULTS.md.
 */
export const DEFAULT_CONCURRENCY = { maxInFlight: 4, maxQueued: 64, maxWaitMs: 10_000 } as const;

const positiveInt = (max: number) => z.coerce.number().int('must be a whole number').min(1, 'must be at least 1').max(max, `must be at most ${max}`);
const envSchema = z.object({
  FAIRWAY_RATE_LIMITS: z.enum(['on', 'off', 'true', 'false', '1', '0']).default('on'),
  FAIRWAY_RATE_TOKEN_PER_SECOND: positiveInt(1_000_000).optional(),
  FAIRWAY_RATE_TOKEN_BURST: positiveInt(100_000_000).optional(),
  FAIRWAY_RATE_TENANT_PER_SECOND: positiveInt(1_000_000).optional(),
  FAIRWAY_RATE_TENANT_BURST: positiveInt(100_000_000).optional(),
  FAIRWAY_RATE_ANONYMOUS_PER_MINUTE: positiveInt(100_000_000).optional(),
  FAIRWAY_RATE_AUTH_FAILURES_PER_MINUTE: positiveInt(1_000_000).optional(),
  FAIRWAY_TRUST_PROXY_HOPS: z.coerce.number().int('must be a whole number').min(0, 'must be 0 or more').max(10, 'must be at most 10').default(0),
  FAIRWAY_RATE_MAX_IN_FLIGHT: positiveInt(100_000).optional(),
  FAIRWAY_RATE_MAX_QUEUED: z.coerce.number().int('must be a whole number').min(0, 'must be 0 or more').max(1_000_000).optional(),
  FAIRWAY_RATE_REDIS_PREFIX: z.string().regex(/^[\w:.-]{1,64}$/, 'must be 1-64 letters, digits or :._-').optional(),
});

/** FAIRWAY_RATE_* variables; unset: the defaults. Throws a ConfigError naming the variable on bad values. */
export function rateLimitsFromEnv(env: NodeJS.ProcessEnv, nodeEnv: 'development' | 'production' | 'test'): RateLimitConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) throw new ConfigError(parsed.error.issues.map((issue) => `${issue.path.join('.')}: ${issue.message}`));
  const e = parsed.data;
  const factor = nodeEnv === 'test' ? TEST_BUDGET_FACTOR : 1;
  const d = DEFAULT_RATE_BUDGETS;
  /** An unset burst follows a raised rate: never below one second's worth. */
  const bucket = (name: string, perSecond: number, setBurst: number | undefined, defaultBurst: number): Bucket => {
    const burst = setBurst ?? Math.max(defaultBurst, perSecond);
    if (burst < perSecond) throw new ConfigError([`FAIRWAY_RATE_${name}_BURST: must be at least FAIRWAY_RATE_${name}_PER_SECOND (${perSecond})`]);
    return { perSecond, burst };
  };
  return {
    enabled: ['on', 'true', '1'].includes(e.FAIRWAY_RATE_LIMITS),
    principal: bucket('TOKEN', e.FAIRWAY_RATE_TOKEN_PER_SECOND ?? d.tokenPerSecond * factor, e.FAIRWAY_RATE_TOKEN_BURST, d.tokenBurst * factor),
    tenant: bucket('TENANT', e.FAIRWAY_RATE_TENANT_PER_SECOND ?? d.tenantPerSecond * factor, e.FAIRWAY_RATE_TENANT_BURST, d.tenantBurst * factor),
    anonymousPerMinute: e.FAIRWAY_RATE_ANONYMOUS_PER_MINUTE ?? d.anonymousPerMinute * factor,
    authFailuresPerMinute: e.FAIRWAY_RATE_AUTH_FAILURES_PER_MINUTE ?? d.authFailuresPerMinute * factor,
    trustProxyHops: e.FAIRWAY_TRUST_PROXY_HOPS,
    keyPrefix: e.FAIRWAY_RATE_REDIS_PREFIX ?? (nodeEnv === 'test' ? TEST_PROCESS_PREFIX : 'fairway:rate'),
    concurrency: {
      maxInFlight: e.FAIRWAY_RATE_MAX_IN_FLIGHT ?? DEFAULT_CONCURRENCY.maxInFlight * factor,
      maxQueued: e.FAIRWAY_RATE_MAX_QUEUED ?? DEFAULT_CONCURRENCY.maxQueued * factor,
      maxWaitMs: DEFAULT_CONCURRENCY.maxWaitMs,
    },
  };
}

/** Which limit refused, for the message and `extensions.limit`. */
export type RateLimitName = 'token' | 'tenant' | 'anonymous' | 'credential-failures';

export interface RateLimitRefusal {
  limit: RateLimitName;
  /** Whole seconds until the bucket has room again (at least 1). */
  retryAfterSeconds: number;
}

/** Who pays for a request. */
export type ChargeSubject =
  | { kind: 'principal'; principalKey: string; isPlatformAdmin: boolean; tenantIds: string[] }
  | { kind: 'anonymous'; ip: string };

export interface RateLimiter {
  readonly config: RateLimitConfig;
  /** Takes `points` from every bucket the subject pays into; the first refusal, or null when allowed. */
  charge(subject: ChargeSubject, points: number): Promise<RateLimitRefusal | null>;
  /** Whether this IP may present a credential now (not after too many failures). */
  credentialAttemptAllowed(ip: string): Promise<RateLimitRefusal | null>;
  /** Counts a credential from this IP that failed verification. */
  credentialFailed(ip: string): Promise<void>;
  close(): Promise<void>;
}

/** A window of `burst` points that refills at `perSecond`: burst / perSecond seconds (at least 1). */
function windowOf(bucket: Bucket): { points: number; duration: number } {
  return { points: bucket.burst, duration: Math.max(1, Math.round(bucket.burst / bucket.perSecond)) };
}

const retryAfter = (res: RateLimiterRes) => Math.max(1, Math.ceil(res.msBeforeNext / 1000));

/** How long a Redis command may take before the replica limits on its own for that request. */
const REDIS_COMMAND_TIMEOUT_MS = 250;
/** How long start-up waits for Redis before it begins with per-replica limits. */
const REDIS_CONNECT_WAIT_MS = 2000;

export async function createRateLimiter(config: RateLimitConfig, deps: { redisUrl?: string; logError: (error: unknown) => void }): Promise<RateLimiter> {
  if (!config.enabled) {
    return { config, charge: async () => null, credentialAttemptAllowed: async () => null, credentialFailed: async () => {}, close: async () => {} };
  }
  const redis = deps.redisUrl ? connectRedis(deps.redisUrl, deps.logError) : null;
  if (redis) await redis.ready;

  /**
   * One limiter per bucket kind. With Redis, the counters live there (replicas share them);
   * its insurance limiter, in this process's memory with the same window, answers whenever
   * Redis does not (refused, unanswered, not connected): an outage neither refuses
   * everything nor stops limiting, it limits per replica until Redis is back.
   */
  const limiter = (name: string, window: { points: number; duration: number }): RateLimiterAbstract => {
    const options = { keyPrefix: `${config.keyPrefix}:${name}`, ...window };
    if (!redis) return new RateLimiterMemory(options);
    return new RateLimiterRedis({ ...options, storeClient: redis.client, useRedisPackage: false, rejectIfRedisNotReady: true, insuranceLimiter: new RateLimiterMemory(options) });
  };
  const adminBucket = { perSecond: config.principal.perSecond * PLATFORM_ADMIN_FACTOR, burst: config.principal.burst * PLATFORM_ADMIN_FACTOR };
  const principal = limiter('principal', windowOf(config.principal));
  const admin = limiter('admin', windowOf(adminBucket));
  const tenant = limiter('tenant', windowOf(config.tenant));
  const anonymous = limiter('anonymous', { points: config.anonymousPerMinute, duration: 60 });
  const authFailures = limiter('auth-failures', { points: config.authFailuresPerMinute, duration: 60 });

  /** Resolves null when consumed, a refusal when the bucket is empty; any other failure is logged and allows (the insurance limiter already failed too). */
  const take = async (bucket: RateLimiterAbstract, key: string, points: number, limit: RateLimitName): Promise<RateLimitRefusal | null> => {
    try {
      await bucket.consume(key, points);
      return null;
    } catch (error) {
      if (error instanceof RateLimiterRes) return { limit, retryAfterSeconds: retryAfter(error) };
      deps.logError(error);
      return null;
    }
  };

  return {
    config,
    async charge(subject, points) {
      if (subject.kind === 'anonymous') return take(anonymous, subject.ip, points, 'anonymous');
      const own = await take(subject.isPlatformAdmin ? admin : principal, subject.principalKey, points, 'token');
      if (own) return own;
      for (const tenantId of subject.tenantIds) {
        const refused = await take(tenant, tenantId, points, 'tenant');
        if (refused) return refused;
      }
      return null;
    },
    async credentialAttemptAllowed(ip) {
      try {
        const res = await authFailures.get(ip);
        return res && res.consumedPoints >= config.authFailuresPerMinute ? { limit: 'credential-failures', retryAfterSeconds: retryAfter(res) } : null;
      } catch (error) {
        deps.logError(error);
        return null;
      }
    },
    async credentialFailed(ip) {
      await take(authFailures, ip, 1, 'credential-failures');
    },
    async close() {
      await redis?.close();
    },
  };
}

/**
 * The limiter's own ioredis connection. It never queues commands while disconnected and gives
 * up on an unanswered one quickly: the request is then limited by the insurance limiter
 * instead of waiting for Redis. An outage is logged once when it starts, not per request.
 */
function connectRedis(url: string, logError: (error: unknown) => void) {
  const client = new Redis(url, { enableOfflineQueue: false, maxRetriesPerRequest: 0, commandTimeout: REDIS_COMMAND_TIMEOUT_MS, lazyConnect: true });
  let closing = false;
  let reported = false;
  const outage = (reason: string) => {
    if (closing || reported) return;
    reported = true;
    logError(new Error(`rate limits: Redis unavailable (${reason}); limiting per replica until it is back`));
  };
  client.on('error', (error: Error) => outage(error.message));
  // A connection that drops is the outage's start: the first reconnect's error comes only after
  // ioredis's retry delay, while requests are already limited per replica.
  client.on('close', () => outage('connection closed'));
  client.on('ready', () => {
    reported = false;
  });
  // Start-up waits a little for Redis; after that (or when it is down) requests are limited
  // per replica until ioredis reconnects by itself.
  const ready = Promise.race([client.connect().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, REDIS_CONNECT_WAIT_MS).unref())]);
  return {
    client,
    ready,
    async close() {
      closing = true;
      await client.quit().catch(() => client.disconnect());
    },
  };
}

