import { randomBytes } from 'node:crypto';
import {
  DEFAULT_CONCURRENCY,
  DEFAULT_RATE_BUDGETS,
  DEFAULT_RATE_KEY_PREFIX,
  type FairwayConfig,
  load,
} from '../../src/config/index.js';

/**
 * The rate limits the test suite runs with: the production defaults, every budget × this.
 * Measured with the suite on a loaded 2-core machine (a 4-s window's peak): one token 144
 * points (role-matrix-projects), 108 (cross-tenant, which walks the whole schema), one tenant
 * 279, anonymous 87 a minute, failed credentials 11 a minute (auth-jwt). An idle machine runs
 * these loops several times faster, on localhost, with no network between: faster than any
 * remote client, so the production numbers would refuse them. The limits stay on in tests;
 * the rate-limit tests set small budgets of their own.
 */
export const TEST_BUDGET_FACTOR = 20;

/**
 * Tests run many apps, in parallel files, against one Redis, with row ids that repeat across
 * their databases: each test process gets its own prefix so they never share a budget (two
 * apps in one test still do).
 */
export const TEST_PROCESS_PREFIX = `${DEFAULT_RATE_KEY_PREFIX}:test-${randomBytes(4).toString('hex')}`;

const f = TEST_BUDGET_FACTOR;
const d = DEFAULT_RATE_BUDGETS;

/** The environment that gives a server the test budgets (a server started as a child process, see
 * process.ts); its own key prefix per call.
 */
export function testRateLimitEnv(): Record<string, string> {
  return {
    FAIRWAY_RATE_TOKEN_PER_SECOND: String(d.tokenPerSecond * f),
    FAIRWAY_RATE_TOKEN_BURST: String(d.tokenBurst * f),
    FAIRWAY_RATE_TENANT_PER_SECOND: String(d.tenantPerSecond * f),
    FAIRWAY_RATE_TENANT_BURST: String(d.tenantBurst * f),
    FAIRWAY_RATE_ANONYMOUS_PER_MINUTE: String(d.anonymousPerMinute * f),
    FAIRWAY_RATE_AUTH_FAILURES_PER_MINUTE: String(d.authFailuresPerMinute * f),
    FAIRWAY_RATE_MAX_IN_FLIGHT: String(DEFAULT_CONCURRENCY.maxInFlight * f),
    FAIRWAY_RATE_MAX_QUEUED: String(DEFAULT_CONCURRENCY.maxQueued * f),
    FAIRWAY_RATE_REDIS_PREFIX: `${DEFAULT_RATE_KEY_PREFIX}:test-${randomBytes(4).toString('hex')}`,
  };
}

/** The rate-limit section of an in-process test app: the test budgets, this process's key prefix. */
export function testRateLimits(): FairwayConfig['rateLimits'] {
  return load({ ...testRateLimitEnv(), FAIRWAY_RATE_REDIS_PREFIX: TEST_PROCESS_PREFIX }).rateLimits;
}
