import { AsyncLocalStorage } from 'node:async_hooks';
import type { Plugin } from 'graphql-yoga';
import { type DestinationStream, pino, stdSerializers, stdTimeFunctions } from 'pino';
import { type RequestLogStore, useRequestLogging } from '../../../plugins/useRequestLogging.js';
import type { ObservabilityConfig } from '../../config/index.js';
import { errorCode } from '../errors.js';
import { startTracing } from './tracing.js';

/** The settings (LOG_LEVEL, FAIRWAY_TRACING, OTEL_*) and their defaults:
 * src/config/sections/observability.ts.
 */
export type { LogLevel, ObservabilityConfig } from '../../config/index.js';

/** The process's structured logger (pino satisfies it). Kept minimal in the type so tests can pass their
 * own.
 */
export interface FairwayLogger {
  error(obj: object, msg?: string): void;
  warn(obj: object, msg?: string): void;
  info(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
  child(bindings: object): FairwayLogger;
}

/**
 * Credentials never reach a log line, whatever object a caller logs: these keys are replaced
 * at any of the first three levels (pino's redaction works on paths, not on free text).
 * Variables are the caller's data: they are not logged at all, and censored if an object
 * carrying them is.
 */
const SENSITIVE_KEYS = [
  'authorization',
  'Authorization',
  'cookie',
  'password',
  'token',
  'secret',
  'apiKey',
  'connectionParams',
  'variables',
  'variableValues',
];
export const REDACTED_PATHS = SENSITIVE_KEYS.flatMap((key) => [key, `*.${key}`, `*.*.${key}`]);

/**
 * The HTTP request being handled (plugins/useRequestLogging.ts fills it in), for every line
 * logged while it is: createLogger's mixin adds it.
 */
export const requestLogContext = new AsyncLocalStorage<RequestLogStore>();

/**
 * JSON lines on stdout (or `destination`: tests capture them). Errors under `err` carry their
 * type, message, stack and causes: the stack is for this log only, clients get the masked error.
 */
export function createLogger(
  config: Pick<ObservabilityConfig, 'logLevel'>,
  destination?: DestinationStream,
): FairwayLogger {
  return pino(
    {
      name: 'fairway',
      level: config.logLevel,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      serializers: { err: stdSerializers.errWithCause },
      timestamp: stdTimeFunctions.isoTime,
      // The request id of the HTTP request being handled, on every line logged for it.
      mixin: () => requestLogContext.getStore() ?? {},
      // "level":"info" rather than 30: readable without a table, and what most log stores index.
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
}

/** yoga's `logging` option: its messages into this logger. */
export interface YogaLoggerAdapter {
  debug(...args: unknown[]): void;
  info(...args: unknown[]): void;
  warn(...args: unknown[]): void;
  error(...args: unknown[]): void;
}

/**
 * Adapts the logger to yoga's (debug/info/warn/error taking any arguments). Only text and
 * errors are kept: yoga's other arguments may carry request parameters (variables).
 * yoga calls `error(err)` for every error its mask replaced, typed client errors included,
 * and maskError (createMaskError → logError) already logs the unexpected ones at error
 * level: errors passed to yoga's `error` go to debug, so nothing is logged twice and a
 * FORBIDDEN answer is not an incident.
 */
export function yogaLogger(logger: FairwayLogger): YogaLoggerAdapter {
  const yoga = logger.child({ component: 'yoga' });
  const split = (args: unknown[]) => {
    const err = args.find((a): a is Error => a instanceof Error);
    const text = args
      .filter((a) => typeof a === 'string' || typeof a === 'number' || typeof a === 'boolean')
      .join(' ');
    return { err, text: text || err?.message || 'yoga' };
  };
  // yoga's debug lines trace each request's phases (our request log covers that), and the
  // errors it reports are the ones it masked: typed answers to the caller, whose messages may
  // quote a variable's value. Unexpected errors are logged by maskError. Neither is kept here.
  const at =
    (level: 'info' | 'warn' | 'error') =>
    (...args: unknown[]) => {
      const { err, text } = split(args);
      if (err) return;
      yoga[level]({}, text);
    };
  return { debug: () => {}, info: at('info'), warn: at('warn'), error: at('error') };
}

/**
 * Request logging (one line per GraphQL operation) and, when configured, OpenTelemetry
 * tracing. Placed after useFairwayAuth and useRateLimits: the caller is known by then.
 * `close()` flushes the spans not yet sent and stops the exporter.
 */
export function observabilityPlugins(
  config: ObservabilityConfig,
  deps: { logger: FairwayLogger },
): { plugins: Plugin[]; close(): Promise<void> } {
  const tracing = config.tracing ? startTracing(config.tracing, { logger: deps.logger }) : null;
  return {
    plugins: [
      useRequestLogging({
        logger: deps.logger.child({ component: 'graphql' }),
        requestContext: requestLogContext,
        errorCode,
      }),
      ...(tracing?.plugins ?? []),
    ],
    close: async () => {
      await tracing?.close();
    },
  };
}
