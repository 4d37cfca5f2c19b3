import { pino, stdSerializers, stdTimeFunctions, type DestinationStream } from 'pino';
import type { Plugin } from 'graphql-yoga';
import { ConfigError } from '../../config/index.js';
import { requestLogContext, useRequestLogging } from '../../../plugins/useRequestLogging.js';
import { startTracing, type TracingConfig } from '../../../plugins/useTracing.js';

export type { TracingConfig } from '../../../plugins/useTracing.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export interface ObservabilityConfig {
  /** LOG_LEVEL (default info; tests: error, so suites do not print a line per request). */
  logLevel: LogLevel;
  /** FAIRWAY_TRACING=otlp: spans of GraphQL operations sent to an OTLP/HTTP collector; null when off. */
  tracing: TracingConfig | null;
}

export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318';

/** LOG_LEVEL, FAIRWAY_TRACING, OTEL_EXPORTER_OTLP_ENDPOINT (or _TRACES_ENDPOINT), OTEL_EXPORTER_OTLP_HEADERS, OTEL_SERVICE_NAME. */
export function observabilityFromEnv(env: NodeJS.ProcessEnv, nodeEnv: 'development' | 'production' | 'test'): ObservabilityConfig {
  const problems: string[] = [];
  const levelText = env.LOG_LEVEL?.trim().toLowerCase();
  // Production logs every operation (info). A developer's terminal (the demo) shows warnings
  // and errors only, so the demo's tokens and hints are not buried under a line per request.
  let logLevel: LogLevel = nodeEnv === 'test' ? 'error' : nodeEnv === 'development' ? 'warn' : 'info';
  if (levelText) {
    if ((LOG_LEVELS as readonly string[]).includes(levelText)) logLevel = levelText as LogLevel;
    else problems.push(`LOG_LEVEL: "${env.LOG_LEVEL}" is not one of ${LOG_LEVELS.join(', ')}`);
  }

  let tracing: TracingConfig | null = null;
  const mode = env.FAIRWAY_TRACING?.trim().toLowerCase() || 'off';
  if (mode === 'otlp') {
    // The standard variables: a traces-specific URL is used as is; the base endpoint gets /v1/traces.
    const specific = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
    const base = (env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || DEFAULT_OTLP_ENDPOINT).replace(/\/+$/, '');
    const url = specific || `${base}/v1/traces`;
    const variable = specific ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
    if (!isHttpUrl(url)) problems.push(`${variable}: "${specific || base}" is not an http(s) URL`);
    const headers = parseHeaders(env.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? env.OTEL_EXPORTER_OTLP_HEADERS);
    if (headers === null) problems.push('OTEL_EXPORTER_OTLP_HEADERS: expected key=value pairs separated by commas');
    tracing = { url, headers: headers ?? {}, serviceName: env.OTEL_SERVICE_NAME?.trim() || 'fairway' };
  } else if (mode !== 'off') {
    problems.push(`FAIRWAY_TRACING: "${env.FAIRWAY_TRACING}" is not one of off, otlp`);
  }
  if (problems.length) throw new ConfigError(problems);
  return { logLevel, tracing };
}

function isHttpUrl(value: string): boolean {
  try {
    return ['http:', 'https:'].includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** The OTLP headers format: `key=value,key2=value2`, values URL-encoded. Null when malformed. */
function parseHeaders(text: string | undefined): Record<string, string> | null {
  const headers: Record<string, string> = {};
  for (const pair of (text ?? '').split(',').map((p) => p.trim()).filter(Boolean)) {
    const at = pair.indexOf('=');
    if (at <= 0) return null;
    try {
      headers[pair.slice(0, at).trim()] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      return null;
    }
  }
  return headers;
}

/** The process's structured logger (pino satisfies it). Kept minimal in the type so tests can pass their own. */
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
const SENSITIVE_KEYS = ['authorization', 'Authorization', 'cookie', 'password', 'token', 'secret', 'apiKey', 'connectionParams', 'variables', 'variableValues'];
export const REDACTED_PATHS = SENSITIVE_KEYS.flatMap((key) => [key, `*.${key}`, `*.*.${key}`]);

/**
 * JSON lines on stdout (or `destination`: tests capture them). Errors under `err` carry their
 * type, message, stack and causes: the stack is for this log only, clients get the masked error.
 */
export function createLogger(config: Pick<ObservabilityConfig, 'logLevel'>, destination?: DestinationStream): FairwayLogger {
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
    const text = args.filter((a) => typeof a === 'string' || typeof a === 'number' || typeof a === 'boolean').join(' ');
    return { err, text: text || err?.message || 'yoga' };
  };
  // yoga's debug lines trace each request's phases (our request log covers that), and the
  // errors it reports are the ones it masked: typed answers to the caller, whose messages may
  // quote a variable's value. Unexpected errors are logged by maskError. Neither is kept here.
  const at = (level: 'info' | 'warn' | 'error') => (...args: unknown[]) => {
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
export function observabilityPlugins(config: ObservabilityConfig, deps: { logger: FairwayLogger }): { plugins: Plugin[]; close(): Promise<void> } {
  const tracing = config.tracing ? startTracing(config.tracing, { logger: deps.logger }) : null;
  return {
    plugins: [useRequestLogging({ logger: deps.logger.child({ component: 'graphql' }) }), ...(tracing?.plugins ?? [])],
    close: async () => {
      await tracing?.close();
    },
  };
}
