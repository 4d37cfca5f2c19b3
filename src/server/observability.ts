// STUB (lead): the observability helper replaces this file. Exported names and signatures are fixed.
import type { Plugin } from 'graphql-yoga';

export interface ObservabilityConfig {
  logLevel: string;
}

/** LOG_LEVEL, FAIRWAY_LOG_FORMAT, OTEL_* / FAIRWAY_TRACING… */
export function observabilityFromEnv(_env: NodeJS.ProcessEnv, _nodeEnv: 'development' | 'production' | 'test'): ObservabilityConfig {
  return { logLevel: 'info' };
}

/** The process's structured logger (pino). Kept minimal in the type so tests can pass their own. */
export interface FairwayLogger {
  error(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
  child(bindings: object): FairwayLogger;
}

export function createLogger(_config: ObservabilityConfig): FairwayLogger {
  const logger: FairwayLogger = {
    error: (obj, msg) => console.error('[fairway]', msg ?? '', obj),
    warn: (obj, msg) => console.warn('[fairway]', msg ?? '', obj),
    info: () => {},
    debug: () => {},
    child: () => logger,
  };
  return logger;
}

/** Request logging (request id, tenant, operation) and, when configured, OpenTelemetry tracing. Placed after useFairwayAuth. */
export function observabilityPlugins(_config: ObservabilityConfig, _deps: { logger: FairwayLogger }): { plugins: Plugin[]; close(): Promise<void> } {
  return { plugins: [], close: async () => {} };
}
