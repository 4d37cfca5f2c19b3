import { z } from 'zod';
import { flag, section } from '../section.js';

/**
 * Request rates per caller (src/server/rate-limits/limiter.ts), so one token (or one guesser)
 * cannot take a replica, or the database behind it, away from everyone else.
 *
 * Sized to what a replica does (`npm run bench:api`, part 2c: a few hundred submits a second one by
 * one on 2 cores; bench/RESULTS-api.md): one token sustains 150 points/s, i.e. 50 mutations a second
 * (a sweep submitted one by one runs 1,000 jobs in 20 s, after a burst of 200 at once), and a tenant
 * three busy tokens' worth (450/s, burst 1,800), about half of what a replica measured, so no single
 * tenant, however many tokens it mints, can take the gateway from the others. `submitJobs` stays the
 * cheap path: 3 points plus one per 10 jobs, so 1,000 jobs cost 103 points. Anonymous callers can do
 * little but fail (and introspect in development): 300 a minute per IP. Failed credentials: 20 a
 * minute per IP, then every credential from that IP is refused until the minute is over; guessing a
 * 32-byte token stays hopeless, a person who mistyped one is back within a minute.
 *
 * The same in every environment: the test suite's local loops, faster than any remote client,
 * run with larger budgets that test/helpers/rate-limits.ts passes in.
 */
export const DEFAULT_RATE_BUDGETS = {
  tokenPerSecond: 150,
  tokenBurst: 600,
  tenantPerSecond: 450,
  tenantBurst: 1800,
  anonymousPerMinute: 300,
  authFailuresPerMinute: 20,
} as const;

/**
 * One caller's requests at once: 4 execute (a portal page's parallel requests mostly fit; the
 * rest wait milliseconds), 64 wait their turn for at most 10 s, more are refused. Measured with
 * `npm run bench:flood`: see bench/RESULTS.md.
 */
export const DEFAULT_CONCURRENCY = { maxInFlight: 4, maxQueued: 64, maxWaitMs: 10_000 } as const;

export const DEFAULT_RATE_KEY_PREFIX = 'fairway:rate';

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
  /** Reverse proxies in front of Fairway whose X-Forwarded-For entries are believed (0: none; the socket's
   * address).
   */
  trustProxyHops: number;
  /** Prefix of the Redis keys (replicas of one deployment must share it). */
  keyPrefix: string;
  /** Requests of one caller executing at once, and waiting their turn (plugins/useCallerConcurrency.ts). */
  concurrency: { maxInFlight: number; maxQueued: number; maxWaitMs: number };
}

const positiveInt = (max: number) =>
  z.coerce
    .number()
    .int('must be a whole number')
    .min(1, 'must be at least 1')
    .max(max, `must be at most ${max}`);
const d = DEFAULT_RATE_BUDGETS;

export const rateLimitsSection = section({
  key: 'rateLimits',
  title: 'Rate limits',
  description:
    "Every operation costs points before it runs (a query or a subscription start 1, a mutation 3, `submitJobs` 3 plus one per 10 jobs; subscription events are free), taken from the caller's bucket (its API token, else the signed-in user) and from its tenant's. A bucket of rate R and burst B is a window of B points every B ÷ R seconds. Refusals are `RATE_LIMITED` (HTTP 429 with `Retry-After`). With `REDIS_URL` the counters are shared by every replica; while Redis is unreachable each replica limits on its own.",
  variables: {
    FAIRWAY_RATE_LIMITS: flag('`false` turns every rate limit and the per-caller turn-taking off.', true),
    FAIRWAY_RATE_TOKEN_PER_SECOND: positiveInt(1_000_000)
      .default(d.tokenPerSecond)
      .describe('Points a second each API token (or signed-in user) regains; platform admins get 4×.'),
    FAIRWAY_RATE_TOKEN_BURST: positiveInt(100_000_000)
      .optional()
      .describe('Points a token may spend at once; at least `FAIRWAY_RATE_TOKEN_PER_SECOND`.')
      .meta({ defaultText: `\`${d.tokenBurst}\`, or the rate when that is higher` }),
    FAIRWAY_RATE_TENANT_PER_SECOND: positiveInt(1_000_000)
      .default(d.tenantPerSecond)
      .describe("The same, shared by all of a tenant's tokens and its single-tenant users."),
    FAIRWAY_RATE_TENANT_BURST: positiveInt(100_000_000)
      .optional()
      .describe("A tenant's burst; at least `FAIRWAY_RATE_TENANT_PER_SECOND`.")
      .meta({ defaultText: `\`${d.tenantBurst}\`, or the rate when that is higher` }),
    FAIRWAY_RATE_ANONYMOUS_PER_MINUTE: positiveInt(100_000_000)
      .default(d.anonymousPerMinute)
      .describe('Requests a minute without a credential, per client address.'),
    FAIRWAY_RATE_AUTH_FAILURES_PER_MINUTE: positiveInt(1_000_000)
      .default(d.authFailuresPerMinute)
      .describe(
        'Failed credentials a minute per client address; past it every credential from that address is refused until the minute is over.',
      ),
    FAIRWAY_TRUST_PROXY_HOPS: z.coerce
      .number()
      .int('must be a whole number')
      .min(0, 'must be 0 or more')
      .max(10, 'must be at most 10')
      .default(0)
      .describe(
        "Reverse proxies in front whose `X-Forwarded-For` entry is believed for the client address (`0`: the socket's address; behind one ingress: `1`).",
      ),
    FAIRWAY_RATE_MAX_IN_FLIGHT: positiveInt(100_000)
      .default(DEFAULT_CONCURRENCY.maxInFlight)
      .describe(
        'Requests of one caller (one credential, or one address when anonymous) executing at once; the next ones wait their turn.',
      ),
    FAIRWAY_RATE_MAX_QUEUED: z.coerce
      .number()
      .int('must be a whole number')
      .min(0, 'must be 0 or more')
      .max(1_000_000)
      .default(DEFAULT_CONCURRENCY.maxQueued)
      .describe(
        `Requests of one caller waiting their turn (at most ${DEFAULT_CONCURRENCY.maxWaitMs / 1000} s); more are refused \`RATE_LIMITED\` at once.`,
      ),
    FAIRWAY_RATE_REDIS_PREFIX: z
      .string()
      .regex(/^[\w:.-]{1,64}$/, 'must be 1-64 letters, digits or :._-')
      .default(DEFAULT_RATE_KEY_PREFIX)
      .describe(
        'Redis key prefix of the shared counters (with `REDIS_URL`); deployments sharing one Redis need different ones, replicas of one deployment the same.',
      )
      .meta({ typeText: '1-64 letters, digits or `:._-`' }),
  },
  resolve: (v, ctx): RateLimitConfig => {
    /** An unset burst follows a raised rate: never below one second's worth. */
    const bucket = (
      name: string,
      perSecond: number,
      setBurst: number | undefined,
      defaultBurst: number,
    ): Bucket => {
      const burst = setBurst ?? Math.max(defaultBurst, perSecond);
      if (burst < perSecond)
        ctx.problem(
          `FAIRWAY_RATE_${name}_BURST`,
          `must be at least FAIRWAY_RATE_${name}_PER_SECOND (${perSecond})`,
        );
      return { perSecond, burst };
    };
    return {
      enabled: v.FAIRWAY_RATE_LIMITS,
      principal: bucket('TOKEN', v.FAIRWAY_RATE_TOKEN_PER_SECOND, v.FAIRWAY_RATE_TOKEN_BURST, d.tokenBurst),
      tenant: bucket('TENANT', v.FAIRWAY_RATE_TENANT_PER_SECOND, v.FAIRWAY_RATE_TENANT_BURST, d.tenantBurst),
      anonymousPerMinute: v.FAIRWAY_RATE_ANONYMOUS_PER_MINUTE,
      authFailuresPerMinute: v.FAIRWAY_RATE_AUTH_FAILURES_PER_MINUTE,
      trustProxyHops: v.FAIRWAY_TRUST_PROXY_HOPS,
      keyPrefix: v.FAIRWAY_RATE_REDIS_PREFIX,
      concurrency: {
        maxInFlight: v.FAIRWAY_RATE_MAX_IN_FLIGHT,
        maxQueued: v.FAIRWAY_RATE_MAX_QUEUED,
        maxWaitMs: DEFAULT_CONCURRENCY.maxWaitMs,
      },
    };
  },
});
