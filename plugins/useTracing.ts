import {
  getCurrentOtelContext,
  otelContextMap,
  setCurrentOtelContext,
  useOpenTelemetry,
} from '@envelop/opentelemetry';
import { ROOT_CONTEXT, type Span, SpanKind, type TracerProvider, trace } from '@opentelemetry/api';
import type { GraphQLError } from 'graphql';
import { isAsyncIterable, type Plugin } from 'graphql-yoga';
import type { Principal } from '../src/auth/index.js';

export interface TracingOptions {
  /** The code a caller sees for an error, before yoga's masking (src/server/errors.ts). */
  errorCode: (error: GraphQLError) => string;
}

/**
 * The plugins in order: ours first (its hooks run before the span starts, to give it the
 * caller's W3C trace as parent, and before the span ends, to add Fairway's attributes), then
 * @envelop/opentelemetry with resolvers, variables, result and document off.
 */
export function useTracing(provider: TracerProvider, options: TracingOptions): Plugin[] {
  return [
    useFairwaySpanAttributes(options.errorCode),
    useOpenTelemetry(
      { resolvers: false, variables: false, result: false, document: false },
      provider,
      SpanKind.SERVER,
      {},
      'fairway',
    ) as Plugin,
  ];
}

interface TracedContext {
  request?: Request;
  requestId?: string;
  currentUser?: Principal | null;
  traceId?: string;
}

function useFairwaySpanAttributes(errorCode: (error: GraphQLError) => string): Plugin {
  const adopt = (context: TracedContext) => {
    if (otelContextMap.has(context)) return;
    const parent = parseTraceparent(context.request?.headers.get('traceparent'));
    if (parent) setCurrentOtelContext(context, trace.setSpanContext(ROOT_CONTEXT, parent));
  };
  const annotate = (
    context: TracedContext,
    errors: readonly GraphQLError[] | undefined,
  ): Span | undefined => {
    const span = trace.getSpan(getCurrentOtelContext(context));
    if (!span) return undefined;
    const principal = context.currentUser ?? null;
    const tenants = principal?.token
      ? principal.token.tenantId
        ? [principal.token.tenantId]
        : []
      : [...(principal?.roles.keys() ?? [])];
    span.setAttributes({
      'fairway.request_id': context.requestId ?? '',
      'fairway.principal.kind': principal?.kind ?? 'anonymous',
      ...(principal
        ? {
            'fairway.principal.user_id': principal.userId,
            'fairway.platform_admin': principal.isPlatformAdmin,
            'fairway.tenant_ids': tenants.slice(0, 20),
          }
        : {}),
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
          annotate(
            context,
            error && typeof error === 'object' && (error as Error).name === 'GraphQLError'
              ? [error as GraphQLError]
              : [],
          );
        },
      };
    },
  };
}

/** W3C trace context (`traceparent: 00-<trace id>-<parent span id>-<flags>`); null when absent or malformed. */
export function parseTraceparent(
  header: string | null | undefined,
): { traceId: string; spanId: string; traceFlags: number; isRemote: true } | null {
  const match = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/.exec(header?.trim() ?? '');
  if (!match || /^0+$/.test(match[1]!) || /^0+$/.test(match[2]!)) return null;
  return { traceId: match[1]!, spanId: match[2]!, traceFlags: parseInt(match[3]!, 16), isRemote: true };
}
