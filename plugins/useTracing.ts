import type { GraphQLError } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import { ROOT_CONTEXT, SpanKind, trace, type Span, type TracerProvider } from '@opentelemetry/api';
import { BasicTracerProvider, BatchSpanProcessor, type ReadableSpan, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import { getCurrentOtelContext, otelContextMap, setCurrentOtelContext, useOpenTelemetry } from '@envelop/opentelemetry';
import type { Principal } from '../src/auth/principal.js';
import type { FairwayLogger } from '../src/server/observability/observability.js';
import { errorCode } from './useMetrics.js';

export interface TracingConfig {
  /** Where spans are POSTed (OTLP/HTTP, JSON): the collector's /v1/traces. */
  url: string;
  /** Sent with every export (OTEL_EXPORTER_OTLP_HEADERS), e.g. a collector's API key. */
  headers: Record<string, string>;
  /** OTEL_SERVICE_NAME: the resource's service.name. */
  serviceName: string;
}

/**
 * Span attributes and events that may hold the caller's data: the document (literal
 * arguments, variable defaults), variables, results, resolver arguments, and error
 * messages (graphql-js quotes the offending variable value in them). They are removed
 * before export whatever the plugin's options, so a later option change cannot leak them.
 */
const PRIVATE_ATTRIBUTES = ['graphql.execute.document', 'graphql.execute.variables', 'graphql.execute.result', 'graphql.resolver.args'];
const PRIVATE_EVENT_ATTRIBUTES = ['exception.message', 'exception.stacktrace'];
/** Export failures (collector down) are logged at most this often. */
const EXPORT_FAILURE_LOG_EVERY_MS = 60_000;

/**
 * Spans of GraphQL operations (one per query, mutation or subscription; no resolver spans,
 * they cost more than they tell) through a provider of our own: nothing is registered
 * globally, so several apps in one process (the tests) each export to their own collector.
 * `close()` exports what is buffered, then stops.
 */
export function startTracing(config: TracingConfig, deps: { logger: FairwayLogger }): { plugins: Plugin[]; provider: TracerProvider; close(): Promise<void> } {
  const exporter = new PrivateSpanExporter(new OTLPTraceExporter({ url: config.url, headers: config.headers }), deps.logger);
  const provider = new BasicTracerProvider({ resource: new Resource({ 'service.name': config.serviceName }) });
  provider.addSpanProcessor(new BatchSpanProcessor(exporter));
  let closed: Promise<void> | null = null;
  return {
    provider,
    plugins: useTracing(provider),
    close: () =>
      (closed ??= provider
        .forceFlush()
        .then(() => provider.shutdown())
        .catch((error: unknown) => deps.logger.warn({ err: error }, 'tracing shutdown failed'))),
  };
}

/**
 * The plugins in order: ours first (its hooks run before the span starts, to give it the
 * caller's W3C trace as parent, and before the span ends, to add Fairway's attributes), then
 * @envelop/opentelemetry with resolvers, variables, result and document off.
 */
export function useTracing(provider: TracerProvider): Plugin[] {
  return [useFairwaySpanAttributes(), useOpenTelemetry({ resolvers: false, variables: false, result: false, document: false }, provider, SpanKind.SERVER, {}, 'fairway') as Plugin];
}

interface TracedContext {
  request?: Request;
  requestId?: string;
  currentUser?: Principal | null;
  traceId?: string;
}

function useFairwaySpanAttributes(): Plugin {
  const adopt = (context: TracedContext) => {
    if (otelContextMap.has(context)) return;
    const parent = parseTraceparent(context.request?.headers.get('traceparent'));
    if (parent) setCurrentOtelContext(context, trace.setSpanContext(ROOT_CONTEXT, parent));
  };
  const annotate = (context: TracedContext, errors: readonly GraphQLError[] | undefined): Span | undefined => {
    const span = trace.getSpan(getCurrentOtelContext(context));
    if (!span) return undefined;
    const principal = context.currentUser ?? null;
    const tenants = principal?.token ? (principal.token.tenantId ? [principal.token.tenantId] : []) : [...(principal?.roles.keys() ?? [])];
    span.setAttributes({
      'fairway.request_id': context.requestId ?? '',
      'fairway.principal.kind': principal?.kind ?? 'anonymous',
      ...(principal ? { 'fairway.principal.user_id': principal.userId, 'fairway.platform_admin': principal.isPlatformAdmin, 'fairway.tenant_ids': tenants.slice(0, 20) } : {}),
      ...(principal?.token ? { 'fairway.principal.token_id': principal.token.id } : {}),
    });
    const codes = [...new Set((errors ?? []).map(errorCode))];
    if (codes.length) span.setAttribute('graphql.error.codes', codes);
    // For the request's log line: the line and the trace find each other.
    context.traceId = span.spanContext().traceId;
    return span;
  };
  return {
    onExecute({ args }) {
      const context = args.contextValue as TracedContext;
      adopt(context);
      return {
        onExecuteDone({ result }) {
          if (!isAsyncIterable(result)) annotate(context, result.errors);
          else annotate(context, undefined);
        },
      };
    },
    onSubscribe({ args }) {
      const context = args.contextValue as TracedContext;
      adopt(context);
      return {
        onSubscribeResult({ result }) {
          annotate(context, isAsyncIterable(result) ? undefined : result.errors);
        },
        onSubscribeError({ error }) {
          annotate(context, error && typeof error === 'object' && (error as Error).name === 'GraphQLError' ? [error as GraphQLError] : []);
        },
      };
    },
  };
}

/** W3C trace context (`traceparent: 00-<trace id>-<parent span id>-<flags>`); null when absent or malformed. */
export function parseTraceparent(header: string | null | undefined): { traceId: string; spanId: string; traceFlags: number; isRemote: true } | null {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(header?.trim() ?? '');
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return null;
  return { traceId: match[1]!, spanId: match[2]!, traceFlags: parseInt(match[3]!, 16), isRemote: true };
}

/** Removes the private attributes and event texts, then exports; failures are logged, rarely. */
class PrivateSpanExporter implements SpanExporter {
  private lastFailureLoggedAt = -Infinity;

  constructor(
    private readonly inner: SpanExporter,
    private readonly logger: FairwayLogger,
  ) {}

  export(spans: ReadableSpan[], resultCallback: Parameters<SpanExporter['export']>[1]): void {
    this.inner.export(spans.map(withoutPrivateData), (result) => {
      if (result.code !== 0 && Date.now() - this.lastFailureLoggedAt >= EXPORT_FAILURE_LOG_EVERY_MS) {
        this.lastFailureLoggedAt = Date.now();
        this.logger.warn({ err: result.error, spans: spans.length }, 'trace export failed (spans dropped)');
      }
      resultCallback(result);
    });
  }

  shutdown(): Promise<void> {
    return this.inner.shutdown();
  }

  forceFlush(): Promise<void> {
    return this.inner.forceFlush?.() ?? Promise.resolve();
  }
}

function withoutPrivateData(span: ReadableSpan): ReadableSpan {
  const attributes = omit(span.attributes, PRIVATE_ATTRIBUTES);
  const events = span.events.map((event) => (event.attributes ? { ...event, attributes: omit(event.attributes, PRIVATE_EVENT_ATTRIBUTES) } : event));
  // A view over the span (its methods, e.g. spanContext(), stay on the prototype chain).
  return Object.create(span, { attributes: { value: attributes }, events: { value: events } }) as ReadableSpan;
}

function omit<T extends Record<string, unknown>>(record: T, keys: readonly string[]): T {
  if (!keys.some((key) => key in record)) return record;
  return Object.fromEntries(Object.entries(record).filter(([key]) => !keys.includes(key))) as T;
}
