import { type ResolveCursorConnectionArgs, resolveCursorConnection } from '@pothos/plugin-relay';
import { z } from 'zod';
import type { Tenant } from '../../src/persistence/tenancy/index.js';
import { callerRoleIn } from '../../src/services/context.js';
import {
  createTenant,
  defaultProjectOfTenant,
  getTenantBySlug,
  listTenants,
  updateTenant,
  updateTenantSettings,
} from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import {
  decodeId,
  IsolationLevelEnum,
  nameSchema,
  pageFrom,
  slugSchema,
  TenantRoleEnum,
  TenantStatusEnum,
  TenantTierEnum,
  toCursor,
} from '../common.js';
import { ProjectRef, TenantRef } from '../refs.js';

builder.node(TenantRef, {
  description: 'An organisation sharing the GPU pool: its own members, projects, queues and quota.',
  id: { resolve: (tenant) => tenant.id },
  isTypeOf: (value) => isEntity(value, 'Tenant'),
  fields: (t) => ({
    slug: t.exposeString('slug'),
    name: t.exposeString('name'),
    tier: t.field({ type: TenantTierEnum, resolve: (tenant) => tenant.tier }),
    isolationLevel: t.field({ type: IsolationLevelEnum, resolve: (tenant) => tenant.isolationLevel }),
    status: t.field({ type: TenantStatusEnum, resolve: (tenant) => tenant.status }),
    createdAt: t.field({ type: 'DateTime', resolve: (tenant) => tenant.createdAt }),
    viewerRole: t.field({
      type: TenantRoleEnum,
      nullable: true,
      description: "The caller's role here; null for a platform admin who is not a member.",
      resolve: (tenant, _args, ctx) => callerRoleIn(ctx, tenant.id) ?? null,
    }),
    projectsOpen: t.boolean({
      description:
        "When true, every member reads the job content of every project whose visibility is PROJECT; when false, only each project's own people.",
      resolve: (tenant) => tenant.projectsOpen,
    }),
    defaultProject: t.field({
      type: ProjectRef,
      nullable: true,
      description: 'Where submits that name no project go.',
      resolve: (tenant, _args, ctx) => defaultProjectOfTenant(ctx, tenant),
    }),
  }),
});

/** Defined on the class MikroORM generates for each defineEntity schema. */
/** An entity of that name, or a plain row of it (raw-reads.ts findPlain: class `<Entity>Row`). */
export function isEntity(value: unknown, entityName: string): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const name = (value as { constructor?: { name?: string } }).constructor?.name;
  return name === entityName || name === `${entityName}Row`;
}

builder.queryFields((t) => ({
  tenant: t.field({
    type: TenantRef,
    description: 'A tenant you belong to (platform admins: any tenant), by slug.',
    authScopes: { authenticated: true },
    args: { slug: t.arg.string({ required: true, validate: z.string().max(63) }) },
    resolve: async (_root, { slug }, ctx) => {
      const tenant = await getTenantBySlug(ctx, slug);
      // Loaded by id again further down (project and queue tenants, job content rights): the request's
      // loader has it now.
      ctx.loaders.tenant.prime(tenant.id, tenant);
      return tenant;
    },
  }),
  tenants: t.connection({
    type: TenantRef,
    description: 'Platform admins: every tenant. Everyone else: the tenants you belong to.',
    authScopes: { authenticated: true },
    resolve: (_root, args, ctx) =>
      resolveCursorConnection({ args, toCursor }, (page: ResolveCursorConnectionArgs) =>
        listTenants(ctx, pageFrom(page)),
      ),
  }),
}));

const CreateTenantInput = builder.inputType('CreateTenantInput', {
  fields: (t) => ({
    slug: t.string({ required: true, validate: slugSchema }),
    name: t.string({ required: true, validate: nameSchema }),
    tier: t.field({ type: TenantTierEnum }),
    isolationLevel: t.field({ type: IsolationLevelEnum }),
    adminEmail: t.string({
      description: "The tenant's first admin. Platform admins set a tenant up; its admins run it.",
      validate: z.string().trim().email('must be an e-mail address').max(254),
    }),
  }),
});

const UpdateTenantInput = builder.inputType('UpdateTenantInput', {
  fields: (t) => ({
    id: t.id({ required: true }),
    name: t.string({ validate: nameSchema }),
    tier: t.field({ type: TenantTierEnum }),
    isolationLevel: t.field({ type: IsolationLevelEnum }),
    status: t.field({ type: TenantStatusEnum }),
  }),
});

const UpdateTenantSettingsInput = builder.inputType('UpdateTenantSettingsInput', {
  fields: (t) => ({
    tenantId: t.id({ required: true }),
    projectsOpen: t.boolean(),
    defaultProjectId: t.id({ description: 'An active project of this tenant.' }),
  }),
});

builder.mutationFields((t) => ({
  updateTenantSettings: t.field({
    type: TenantRef,
    description: 'Tenant admins. Fields left out stay as they are.',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: UpdateTenantSettingsInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      updateTenantSettings(ctx, decodeId(String(input.tenantId), 'Tenant'), {
        projectsOpen: input.projectsOpen ?? undefined,
        defaultProjectId: input.defaultProjectId
          ? decodeId(String(input.defaultProjectId), 'Project')
          : undefined,
      }),
  }),
  createTenant: t.field({
    type: TenantRef,
    description: 'Platform admins only.',
    authScopes: { platformAdmin: true },
    args: { input: t.arg({ type: CreateTenantInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      createTenant(ctx, {
        slug: input.slug,
        name: input.name,
        tier: input.tier ?? undefined,
        isolationLevel: input.isolationLevel ?? undefined,
        adminEmail: input.adminEmail ?? null,
      }),
  }),
  updateTenant: t.field({
    type: TenantRef,
    description: 'Platform admins only.',
    authScopes: { platformAdmin: true },
    args: { input: t.arg({ type: UpdateTenantInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      updateTenant(ctx, decodeId(String(input.id), 'Tenant'), {
        name: input.name ?? undefined,
        tier: input.tier ?? undefined,
        isolationLevel: input.isolationLevel ?? undefined,
        status: input.status ?? undefined,
      }),
  }),
}));

export type { Tenant };
