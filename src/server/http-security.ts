// STUB (lead): the HTTP-security helper replaces this file. Exported names and signatures are fixed.
import type { Plugin, YogaServerOptions } from 'graphql-yoga';

export interface HttpSecurityConfig {
  corsOrigins: string[];
}

/** FAIRWAY_CORS_ORIGINS, FAIRWAY_CSRF…, FAIRWAY_PERSISTED_OPERATIONS… */
export function httpSecurityFromEnv(_env: NodeJS.ProcessEnv, _nodeEnv: 'development' | 'production' | 'test'): HttpSecurityConfig {
  return { corsOrigins: [] };
}

/** The yoga options and plugins for CORS, CSRF prevention, security headers and persisted operations. */
export async function httpSecurity(_config: HttpSecurityConfig): Promise<{ cors: YogaServerOptions<Record<string, unknown>, Record<string, unknown>>['cors']; plugins: Plugin[] }> {
  return { cors: undefined, plugins: [] };
}
