// STUB (lead): the rate-limits helper replaces this file. Exported names and signatures are fixed.
import type { Plugin } from 'graphql-yoga';

export interface RateLimitConfig {
  enabled: boolean;
}

/** FAIRWAY_RATE_* variables; unset: the defaults. Throws ConfigError-like Error with a readable message on bad values. */
export function rateLimitsFromEnv(_env: NodeJS.ProcessEnv, _nodeEnv: 'development' | 'production' | 'test'): RateLimitConfig {
  return { enabled: false };
}

export interface RateLimiter {
  readonly config: RateLimitConfig;
  close(): Promise<void>;
}

export async function createRateLimiter(config: RateLimitConfig, _deps: { redisUrl?: string; logError: (error: unknown) => void }): Promise<RateLimiter> {
  return { config, close: async () => {} };
}

export type RateLimitPlugins = Plugin[];
