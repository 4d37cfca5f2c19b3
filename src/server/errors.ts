import { GraphQLError } from 'graphql';
import { PothosValidationError } from '@pothos/core';
import { FairwayError } from '../services/errors.js';

const PUBLIC_CODES = new Set([
  'BAD_USER_INPUT',
  'UNAUTHENTICATED',
  'FORBIDDEN',
  'NOT_FOUND',
  'CONFLICT',
  'GRAPHQL_VALIDATION_FAILED',
  'GRAPHQL_PARSE_FAILED',
  'BAD_REQUEST',
  'PERSISTED_QUERY_NOT_FOUND',
]);

export type ErrorLogger = (error: unknown) => void;

/**
 * What a client may see of an error: our typed errors with their code and message;
 * everything else becomes INTERNAL_SERVER_ERROR with no message or stack from inside.
 */
export function createMaskError(log: ErrorLogger) {
  return (error: unknown, _message: string): Error => {
    const graphQLError = error instanceof GraphQLError ? error : null;
    const original = graphQLError?.originalError ?? error;
    const location = graphQLError ? { nodes: graphQLError.nodes, source: graphQLError.source, positions: graphQLError.positions, path: graphQLError.path } : {};
    if (original instanceof FairwayError) {
      return new GraphQLError(original.message, { ...location, extensions: { code: original.code, ...(original.details ?? {}) } });
    }
    if (original instanceof PothosValidationError) {
      return new GraphQLError(original.message, { ...location, extensions: { code: 'BAD_USER_INPUT' } });
    }
    if (original instanceof GraphQLError && typeof original.extensions?.code === 'string' && PUBLIC_CODES.has(original.extensions.code)) {
      return graphQLError && graphQLError !== original ? new GraphQLError(original.message, { ...location, extensions: original.extensions }) : original;
    }
    if (graphQLError && !graphQLError.originalError) {
      // Errors graphql-js raised itself (coercion of arguments and variables): the caller's input.
      const code = graphQLError.extensions?.code;
      if (typeof code === 'string' && !PUBLIC_CODES.has(code) && code !== 'INTERNAL_SERVER_ERROR') return graphQLError;
      return new GraphQLError(graphQLError.message, { ...location, extensions: { ...graphQLError.extensions, code: typeof code === 'string' ? code : 'BAD_USER_INPUT' } });
    }
    log(original);
    return new GraphQLError('Unexpected error.', { ...location, extensions: { code: 'INTERNAL_SERVER_ERROR' } });
  };
}
