import type { TracerProvider } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  type ReadableSpan,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';
import type { Plugin } from 'graphql-yoga';
import { useTracing } from '../../../plugins/useTracing.js';
import type { TracingConfig } from '../../config/index.js';
import { errorCode } from '../errors.js';
import type { FairwayLogger } from './observability.js';

/**
 * Span attributes and events that may hold the caller's data: the document (literal
 * arguments, variable defaults), variables, results, resolver arguments, and error
 * messages (graphql-js quotes the offending variable value in them). They are removed
 * before export whatever the plugin's options, so a later option change cannot leak them.
 */
const PRIVATE_ATTRIBUTES = [
  'graphql.execute.document',
  'graphql.execute.variables',
  'graphql.execute.result',
  'graphql.resolver.args',
];
const PRIVATE_EVENT_ATTRIBUTES = ['exception.message', 'exception.stacktrace'];
/** Export failures (collector down) are logged at most this often. */
const EXPORT_FAILURE_LOG_EVERY_MS = 60_000;

/**
 * Spans of GraphQL operations (one per query, mutation or subscription; no resolver spans,
 * they cost more than they tell; plugins/useTracing.ts) through a provider of our own: nothing
 * is registered globally, so several apps in one process (the tests) each export to their own
 * collector. `close()` exports what is buffered, then stops.
 */
export function startTracing(
  config: TracingConfig,
  deps: { logger: FairwayLogger },
): { plugins: Plugin[]; provider: TracerProvider; close(): Promise<void> } {
  const exporter = new PrivateSpanExporter(
    new OTLPTraceExporter({ url: config.url, headers: config.headers }),
    deps.logger,
  );
  const provider = new BasicTracerProvider({
    resource: new Resource({ 'service.name': config.serviceName }),
  });
  provider.addSpanProcessor(new BatchSpanProcessor(exporter));
  let closed: Promise<void> | null = null;
  return {
    provider,
    plugins: useTracing(provider, { errorCode }),
    close: () =>
      (closed ??= provider
        .forceFlush()
        .then(() => provider.shutdown())
        .catch((error: unknown) => deps.logger.warn({ err: error }, 'tracing shutdown failed'))),
  };
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
  const events = span.events.map((event) =>
    event.attributes ? { ...event, attributes: omit(event.attributes, PRIVATE_EVENT_ATTRIBUTES) } : event,
  );
  // A view over the span (its methods, e.g. spanContext(), stay on the prototype chain).
  return Object.create(span, {
    attributes: { value: attributes },
    events: { value: events },
  }) as ReadableSpan;
}

function omit<T extends Record<string, unknown>>(record: T, keys: readonly string[]): T {
  if (!keys.some((key) => key in record)) return record;
  return Object.fromEntries(Object.entries(record).filter(([key]) => !keys.includes(key))) as T;
}
