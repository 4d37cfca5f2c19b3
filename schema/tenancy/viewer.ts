import { getTenant } from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import { ApiTokenScopeEnum, TenantRoleEnum } from '../common.js';
import { TenantRef, ViewerRef } from '../refs.js';

const ViewerMembership = builder.objectRef<{ tenantId: string; role: string }>('ViewerMembership').implement({
  fields: (t) => ({
    role: t.field({ type: TenantRoleEnum, resolve: (m) => m.role as never }),
    tenant: t.field({ type: TenantRef, resolve: (m, _args, ctx) => getTenant(ctx, m.tenantId) }),
  }),
});

const AuthKind = builder.enumType('AuthKind', { values: ['USER', 'API_TOKEN'] as const });

ViewerRef.implement({
  description: 'Who is calling: the signed-in user, or the user an API token acts for.',
  fields: (t) => ({
    name: t.exposeString('name'),
    email: t.exposeString('email'),
    isPlatformAdmin: t.exposeBoolean('isPlatformAdmin'),
    authKind: t.field({ type: AuthKind, resolve: (p) => (p.kind === 'user' ? 'USER' : 'API_TOKEN') }),
    tokenScopes: t.field({
      type: [ApiTokenScopeEnum],
      nullable: true,
      description: "For an API token: the scopes it actually holds (its grant narrowed by its owner's role).",
      resolve: (p) => (p.token ? ([...p.token.scopes] as never) : null),
    }),
    memberships: t.field({
      type: [ViewerMembership],
      description: 'Your tenants and your role in each (for an API token: its one tenant).',
      resolve: (p) => [...p.roles.entries()].map(([tenantId, role]) => ({ tenantId, role })),
    }),
  }),
});

builder.queryFields((t) => ({
  viewer: t.field({
    type: ViewerRef,
    authScopes: { authenticated: true },
    resolve: (_root, _args, ctx) => ctx.principal!,
  }),
}));
