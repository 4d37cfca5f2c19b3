// STUB (lead): the rate-limits helper replaces this file.
import type { Plugin } from 'graphql-yoga';
import type { RateLimiter } from '../src/server/rate-limits.js';

export interface RateLimitsOptions {
  limiter: RateLimiter;
  logError: (error: unknown) => void;
}

/** Placed right after useFairwayAuth: sees the principal in the context. */
export function useRateLimits(_options: RateLimitsOptions): Plugin {
  return {};
}
