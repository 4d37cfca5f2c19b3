import { Redis } from 'ioredis';
import {
  type RateLimiterAbstract,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible';
import type { RateLimitBuckets, RateLimitName, RateLimitRefusal } from '../../../plugins/useRateLimits.js';
import type { Bucket, RateLimitConfig } from '../../config/index.js';

/**
 * Request rates per caller, so one token (or one guesser) cannot take a replica, or the
 * database behind it, away from everyone else.
 *
 * Each bucket is a rate-limiter-flexible fixed window: `burst` points per `burst / perSecond`
 * seconds. That is a token bucket's promise, coarsened: on average `perSecond`, and up to
 * `burst` at once (a window edge can allow two bursts back to back, never more).
 *
 * The settings and their defaults: src/config/sections/rate-limits.ts (FAIRWAY_RATE_*). The
 * test suite's larger budgets: test/helpers/rate-limits.ts.
 */

/** Platform admins operate every tenant: their own bucket is this many times a token's. */
export const PLATFORM_ADMIN_FACTOR = 4;

export type { Bucket, RateLimitConfig } from '../../config/index.js';

/** The buckets plugins/useRateLimits.ts charges (and the WebSocket transport's credential checks), per
 * replica or in Redis.
 */
export interface RateLimiter extends RateLimitBuckets {
  readonly config: RateLimitConfig;
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

export async function createRateLimiter(
  config: RateLimitConfig,
  deps: { redisUrl?: string; logError: (error: unknown) => void },
): Promise<RateLimiter> {
  if (!config.enabled) {
    return {
      config,
      charge: async () => null,
      credentialAttemptAllowed: async () => null,
      credentialFailed: async () => {},
      close: async () => {},
    };
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
    return new RateLimiterRedis({
      ...options,
      storeClient: redis.client,
      useRedisPackage: false,
      rejectIfRedisNotReady: true,
      insuranceLimiter: new RateLimiterMemory(options),
    });
  };
  const adminBucket = {
    perSecond: config.principal.perSecond * PLATFORM_ADMIN_FACTOR,
    burst: config.principal.burst * PLATFORM_ADMIN_FACTOR,
  };
  const principal = limiter('principal', windowOf(config.principal));
  const admin = limiter('admin', windowOf(adminBucket));
  const tenant = limiter('tenant', windowOf(config.tenant));
  const anonymous = limiter('anonymous', { points: config.anonymousPerMinute, duration: 60 });
  const authFailures = limiter('auth-failures', { points: config.authFailuresPerMinute, duration: 60 });

  /** Resolves null when consumed, a refusal when the bucket is empty; any other failure is logged and allows
   * (the insurance limiter already failed too).
   */
  const take = async (
    bucket: RateLimiterAbstract,
    key: string,
    points: number,
    limit: RateLimitName,
  ): Promise<RateLimitRefusal | null> => {
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
      const own = await take(
        subject.isPlatformAdmin ? admin : principal,
        subject.principalKey,
        points,
        'token',
      );
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
        return res && res.consumedPoints >= config.authFailuresPerMinute
          ? { limit: 'credential-failures', retryAfterSeconds: retryAfter(res) }
          : null;
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
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: REDIS_COMMAND_TIMEOUT_MS,
    lazyConnect: true,
  });
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
  const ready = Promise.race([
    client.connect().catch(() => undefined),
    new Promise((resolve) => setTimeout(resolve, REDIS_CONNECT_WAIT_MS).unref()),
  ]);
  return {
    client,
    ready,
    async close() {
      closing = true;
      await client.quit().catch(() => client.disconnect());
    },
  };
}
