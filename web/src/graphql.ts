// The console's GraphQL documents as gql.tada typed documents: `tsc -p web` checks every field and
// variable against schema/schema.graphql (through the generated introspection the CLI shares).
import { initGraphQLTada, type ResultOf, type VariablesOf } from 'gql.tada';
import type { introspection } from '../../src/cli/tenant/graphql-env.js';

export const graphql = initGraphQLTada<{
  introspection: introspection;
  scalars: { DateTime: string; JSON: unknown };
}>();

export type { ResultOf, VariablesOf };
