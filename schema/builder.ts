import SchemaBuilder from '@pothos/core';
import RelayPlugin from '@pothos/plugin-relay';
import ScopeAuthPlugin from '@pothos/plugin-scope-auth';
import ValidationPlugin from '@pothos/plugin-validation';
import { GraphQLError } from 'graphql';
import { type Capability, callerHasCapability } from '../src/services/context.js';
import type { GraphQLContext } from './context.js';

export const builder = new SchemaBuilder<{
  Context: GraphQLContext;
  DefaultFieldNullability: false;
  Scalars: {
    DateTime: { Input: Date; Output: Date };
    JSON: { Input: unknown; Output: unknown };
  };
  AuthScopes: {
    authenticated: boolean;
    platformAdmin: boolean;
    /** The caller holds this capability in that tenant (role ∩ token scopes). */
    capability: { tenantId: string; capability: Capability };
    /** The caller is this user. */
    self: string;
  };
}>({
  // scope-auth first so nothing resolves before the check; relay before it would only matter for globalID
  // args.
  plugins: [ScopeAuthPlugin, RelayPlugin, ValidationPlugin],
  defaultFieldNullability: false,
  scopeAuth: {
    // Unset, anonymous subscriptions reach their resolver (docs/decisions/0006-node-20-pins.md, pitfall 3).
    authorizeOnSubscribe: true,
    authScopes: (ctx) => ({
      authenticated: ctx.principal !== null,
      platformAdmin: ctx.principal?.isPlatformAdmin ?? false,
      capability: ({ tenantId, capability }) => callerHasCapability(ctx, tenantId, capability),
      self: (userId) => ctx.principal?.userId === userId,
    }),
    unauthorizedError: (_parent, ctx, info) =>
      ctx.principal
        ? new GraphQLError(
            `Not allowed to read ${info.parentType.name}.${info.fieldName} with your role or token scopes.`,
            {
              extensions: { code: 'FORBIDDEN' },
            },
          )
        : new GraphQLError('Sign in first: send "Authorization: Bearer <API token or OIDC JWT>".', {
            extensions: { code: 'UNAUTHENTICATED' },
          }),
  },
  relay: {
    clientMutationId: 'omit',
    cursorType: 'String',
    // node/nodes are defined in schema/cluster/node.ts so that a foreign id answers NOT_FOUND.
    nodeQueryOptions: false,
    nodesQueryOptions: false,
  },
  validation: {
    validationError: (failure) => {
      const problems = failure.issues.map((issue) => {
        const path = (issue.path ?? [])
          .map((p) => (typeof p === 'object' ? String(p.key) : String(p)))
          .join('.');
        return path ? `${path}: ${issue.message}` : issue.message;
      });
      return new GraphQLError(`Invalid input: ${problems.join('; ')}`, {
        extensions: { code: 'BAD_USER_INPUT', problems },
      });
    },
  },
});

builder.queryType({});
builder.mutationType({});
builder.subscriptionType({});
