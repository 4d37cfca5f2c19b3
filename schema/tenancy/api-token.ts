import { z } from 'zod';
import {
  type CreatedApiToken,
  createApiToken,
  getTenant,
  listApiTokens,
  MAX_TOKEN_LIFETIME_DAYS,
  revokeApiToken,
} from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import { ApiTokenScopeEnum, decodeId } from '../common.js';
import { ApiTokenRef, TenantRef } from '../refs.js';
import { isEntity } from './tenant.js';
import { tenantConnection } from './tenant-connection.js';

builder.node(ApiTokenRef, {
  description:
    'A credential for automation, acting for its creator within one tenant and its scopes. The secret is never readable here.',
  id: { resolve: (token) => token.id },
  isTypeOf: (value) => isEntity(value, 'ApiToken'),
  fields: (t) => ({
    name: t.exposeString('name'),
    prefix: t.string({
      description: 'The first characters of the secret, to tell tokens apart.',
      resolve: (token) => token.prefix,
    }),
    scopes: t.field({ type: [ApiTokenScopeEnum], resolve: (token) => token.scopes as never }),
    isPlatformToken: t.boolean({ resolve: (token) => token.tenant === null }),
    createdByName: t.string({ resolve: (token) => token.createdBy.name }),
    createdAt: t.field({ type: 'DateTime', resolve: (token) => token.createdAt }),
    expiresAt: t.field({ type: 'DateTime', resolve: (token) => token.expiresAt }),
    revokedAt: t.field({ type: 'DateTime', nullable: true, resolve: (token) => token.revokedAt ?? null }),
    lastUsedAt: t.field({ type: 'DateTime', nullable: true, resolve: (token) => token.lastUsedAt ?? null }),
    tenant: t.field({
      type: TenantRef,
      nullable: true,
      resolve: (token, _args, ctx) => (token.tenant ? getTenant(ctx, token.tenant.id) : null),
    }),
  }),
});

builder.objectFields(TenantRef, (t) => ({
  apiTokens: t.connection({
    type: ApiTokenRef,
    description: 'Tenant admins see every token; others see their own.',
    authScopes: (tenant) => ({ capability: { tenantId: tenant.id, capability: 'tenant:read' } }),
    resolve: (tenant, args, ctx) =>
      tenantConnection(args, tenant, (tenantId) => (page) => listApiTokens(ctx, tenantId, page)),
  }),
}));

builder.queryFields((t) => ({
  apiTokens: t.connection({
    type: ApiTokenRef,
    description: "A tenant's API tokens: all of them for tenant admins, your own otherwise.",
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) =>
      tenantConnection(
        args,
        { globalId: args.tenantId },
        (tenantId) => (page) => listApiTokens(ctx, tenantId, page),
      ),
  }),
}));

const CreateApiTokenInput = builder.inputType('CreateApiTokenInput', {
  fields: (t) => ({
    tenantId: t.id({
      description: 'The tenant the token acts in. Omit for a platform token (platform admins only).',
    }),
    name: t.string({
      required: true,
      validate: z.string().trim().min(1, 'must not be empty').max(100, 'must be at most 100 characters'),
    }),
    scopes: t.field({
      type: [ApiTokenScopeEnum],
      required: true,
      validate: z
        .array(z.string())
        .max(20)
        .refine((s) => new Set(s).size === s.length, 'list each scope once'),
    }),
    expiresInDays: t.int({
      defaultValue: 90,
      validate: z
        .number()
        .int()
        .min(1, 'must be at least 1 day')
        .max(MAX_TOKEN_LIFETIME_DAYS, `must be at most ${MAX_TOKEN_LIFETIME_DAYS} days`),
    }),
  }),
});

const CreateApiTokenPayload = builder.objectRef<CreatedApiToken>('CreateApiTokenPayload').implement({
  description: 'Returned once, to the creator: store the secret now, it cannot be shown again.',
  fields: (t) => ({
    secret: t.exposeString('secret', { description: 'Send as "Authorization: Bearer <secret>".' }),
    token: t.field({ type: ApiTokenRef, resolve: (payload) => payload.token }),
  }),
});

builder.mutationFields((t) => ({
  createApiToken: t.field({
    type: CreateApiTokenPayload,
    description:
      'Members and tenant admins, for a tenant they belong to, with scopes their role allows. Signed-in users only: a token cannot mint tokens.',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: CreateApiTokenInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      createApiToken(ctx, {
        tenantId: input.tenantId == null ? null : decodeId(String(input.tenantId), 'Tenant'),
        name: input.name,
        scopes: input.scopes as never,
        expiresInDays: input.expiresInDays ?? 90,
      }),
  }),
  revokeApiToken: t.field({
    type: ApiTokenRef,
    description: "The token's creator, or a tenant admin. Takes effect on the next request.",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => revokeApiToken(ctx, decodeId(String(id), 'ApiToken')),
  }),
}));
