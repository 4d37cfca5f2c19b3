import type { Plugin } from '@envelop/core';
import { EnvelopArmorPlugin } from '@escape.tech/graphql-armor';
import type { GraphQLArmorRejectCallback } from '@escape.tech/graphql-armor-types';
import {
  GraphQLError,
  NoSchemaIntrospectionCustomRule,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';

/** The limits this plugin applies (src/server/query-limits/limits.ts's QueryLimits has them, with their
 * defaults).
 */
export interface QueryLimitsOptions {
  maxDepth: number;
  maxAliases: number;
  maxCost: number;
  maxTokens: number;
  maxDirectives: number;
  introspection: boolean;
  fieldSuggestions: boolean;
}

/** Which limit refused a request, in `extensions.limit`, so a client can tell them apart. */
export type QueryLimitName = 'depth' | 'aliases' | 'cost' | 'tokens' | 'directives' | 'introspection';

/**
 * A refusal is the caller's input, not an incident: BAD_USER_INPUT (never masked as INTERNAL),
 * with the limit named. graphql-armor's own errors carry no code and a misleading
 * "Syntax Error:" prefix, so they are replaced.
 */
function limitError(limit: QueryLimitName, message: string): GraphQLError {
  return new GraphQLError(message.replace(/^Syntax Error: /, ''), {
    extensions: { code: 'BAD_USER_INPUT', limit },
  });
}

/** Validation limits report on the context; the token limit runs inside the parser (no context) and throws.
 *
 */
function rejectAs(limit: QueryLimitName): GraphQLArmorRejectCallback {
  return (context, error) => {
    const typed = limitError(limit, error.message);
    if (context) context.reportError(typed);
    else throw typed;
  };
}

/** graphql's rule, with its refusal typed like the other limits. */
const noIntrospection: ValidationRule = (context) => {
  const typed = Object.create(context) as ValidationContext;
  typed.reportError = (error: GraphQLError) =>
    context.reportError(
      limitError(
        'introspection',
        `${error.message.replace(/\.$/, '')}: introspection is disabled on this server.`,
      ),
    );
  return NoSchemaIntrospectionCustomRule(typed);
};

/**
 * Depth, aliases, cost, tokens and directives limits (graphql-armor), field suggestions and
 * introspection, assembled from one QueryLimits. Body size and batching are yoga options
 * (`maxRequestBodySize`, `batching`), set next to this plugin in src/server/app.ts.
 */
export function useQueryLimits(options: QueryLimitsOptions): Plugin {
  const common = { exposeLimits: true, propagateOnRejection: false } as const;
  const armor = EnvelopArmorPlugin({
    maxDepth: {
      enabled: true,
      n: options.maxDepth,
      flattenFragments: true,
      ignoreIntrospection: true,
      ...common,
      onReject: [rejectAs('depth')],
    },
    maxAliases: { enabled: true, n: options.maxAliases, ...common, onReject: [rejectAs('aliases')] },
    costLimit: {
      enabled: true,
      maxCost: options.maxCost,
      ignoreIntrospection: true,
      ...common,
      onReject: [rejectAs('cost')],
    },
    maxTokens: { enabled: true, n: options.maxTokens, ...common, onReject: [rejectAs('tokens')] },
    maxDirectives: { enabled: true, n: options.maxDirectives, ...common, onReject: [rejectAs('directives')] },
    blockFieldSuggestion: { enabled: !options.fieldSuggestions },
  });
  return {
    onPluginInit({ addPlugin }) {
      addPlugin(armor);
    },
    onValidate({ addValidationRule }) {
      if (!options.introspection) addValidationRule(noIntrospection);
    },
  };
}
