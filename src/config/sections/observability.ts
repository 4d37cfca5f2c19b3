import { z } from 'zod';
import { section } from '../section.js';

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export const DEFAULT_OTLP_ENDPOINT = 'http://localhost:4318';
export const DEFAULT_SERVICE_NAME = 'fairway';

/** Spans of GraphQL operations sent to an OTLP/HTTP collector (plugins/useTracing.ts). */
export interface TracingConfig {
  /** Where spans are POSTed (OTLP/HTTP, JSON): the collector's /v1/traces. */
  url: string;
  /** Sent with every export (OTEL_EXPORTER_OTLP_HEADERS), e.g. a collector's API key. */
  headers: Record<string, string>;
  /** OTEL_SERVICE_NAME: the resource's service.name. */
  serviceName: string;
}

export interface ObservabilityConfig {
  /** LOG_LEVEL (default info; development: warn; tests: error, so suites do not print a line per request). */
  logLevel: LogLevel;
  /** FAIRWAY_TRACING=otlp: spans of GraphQL operations sent to an OTLP/HTTP collector; null when off. */
  tracing: TracingConfig | null;
  /** A bearer token that may read `/metrics` besides platform admins (FAIRWAY_METRICS_TOKEN). */
  metricsToken?: string;
}

/** A variable read trimmed and in lower case; blank is unset. */
const oneOf = <T extends string>(values: readonly T[]) =>
  z
    .string()
    .optional()
    .transform((raw, ctx): T | undefined => {
      const text = raw?.trim().toLowerCase();
      if (!text) return undefined;
      if ((values as readonly string[]).includes(text)) return text as T;
      ctx.addIssue({ code: 'custom', message: `"${raw}" is not one of ${values.join(', ')}` });
      return z.NEVER;
    });

const list = (values: readonly string[]) => values.map((v) => `\`${v}\``).join(', ');

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
  for (const pair of (text ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)) {
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

export const observabilitySection = section({
  key: 'observability',
  title: 'Logs, traces and metrics',
  description:
    "Logs are JSON lines on stdout, one per GraphQL operation at `info`. Traces are off unless `FAIRWAY_TRACING=otlp`; the `OTEL_*` variables are the OpenTelemetry standard ones and are read only then. `/metrics` is Prometheus's text format, readable by platform admins and with `FAIRWAY_METRICS_TOKEN`.",
  variables: {
    LOG_LEVEL: oneOf(LOG_LEVELS)
      .describe('Least severe level logged (any case).')
      .meta({
        typeText: list(LOG_LEVELS),
        defaultText: '`info`; `warn` when `NODE_ENV=development`, `error` when `NODE_ENV=test`',
      }),
    FAIRWAY_TRACING: oneOf(['off', 'otlp'] as const)
      .describe('`otlp`: a span per GraphQL operation, sent over OTLP/HTTP (JSON).')
      .meta({ typeText: '`off`, `otlp`', defaultText: '`off`' }),
    OTEL_EXPORTER_OTLP_ENDPOINT: z
      .string()
      .optional()
      .describe('The collector (`/v1/traces` is appended).')
      .meta({ typeText: 'http(s) URL', defaultText: `\`${DEFAULT_OTLP_ENDPOINT}\`` }),
    OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z
      .string()
      .optional()
      .describe('The traces URL, used as is (over `OTEL_EXPORTER_OTLP_ENDPOINT`).')
      .meta({ typeText: 'http(s) URL' }),
    OTEL_EXPORTER_OTLP_HEADERS: z
      .string()
      .optional()
      .describe("`key=value,…` (values URL-encoded) sent with each export, e.g. a collector's API key.")
      .meta({ typeText: '`key=value` pairs, comma separated' }),
    OTEL_EXPORTER_OTLP_TRACES_HEADERS: z
      .string()
      .optional()
      .describe('The same for traces only (over `OTEL_EXPORTER_OTLP_HEADERS`).')
      .meta({ typeText: '`key=value` pairs, comma separated' }),
    OTEL_SERVICE_NAME: z
      .string()
      .optional()
      .describe("The spans' `service.name`.")
      .meta({ defaultText: `\`${DEFAULT_SERVICE_NAME}\`` }),
    FAIRWAY_METRICS_TOKEN: z
      .string()
      .min(16, 'must be at least 16 characters (a shared secret for Prometheus)')
      .optional()
      .describe(
        'A shared secret a Prometheus server sends as `Authorization: Bearer <token>` to read `/metrics`. Unset: platform admins only.',
      )
      .meta({ typeText: 'string, ≥ 16 characters' }),
  },
  resolve: (v, ctx): ObservabilityConfig => {
    // Production logs every operation (info). A developer's terminal (the demo) shows warnings
    // and errors only, so the demo's tokens and hints are not buried under a line per request.
    const logLevel =
      v.LOG_LEVEL ?? (ctx.nodeEnv === 'test' ? 'error' : ctx.nodeEnv === 'development' ? 'warn' : 'info');
    let tracing: TracingConfig | null = null;
    if (v.FAIRWAY_TRACING === 'otlp') {
      // The standard variables: a traces-specific URL is used as is; the base endpoint gets /v1/traces.
      const specific = v.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
      const base = (v.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || DEFAULT_OTLP_ENDPOINT).replace(/\/+$/, '');
      const url = specific || `${base}/v1/traces`;
      const variable = specific ? 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' : 'OTEL_EXPORTER_OTLP_ENDPOINT';
      if (!isHttpUrl(url)) ctx.problem(variable, `"${specific || base}" is not an http(s) URL`);
      const headers = parseHeaders(v.OTEL_EXPORTER_OTLP_TRACES_HEADERS ?? v.OTEL_EXPORTER_OTLP_HEADERS);
      if (headers === null)
        ctx.problem('OTEL_EXPORTER_OTLP_HEADERS', 'expected key=value pairs separated by commas');
      tracing = {
        url,
        headers: headers ?? {},
        serviceName: v.OTEL_SERVICE_NAME?.trim() || DEFAULT_SERVICE_NAME,
      };
    }
    return { logLevel, tracing, metricsToken: v.FAIRWAY_METRICS_TOKEN };
  },
});
