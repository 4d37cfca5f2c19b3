import {
  archiveProject,
  callerProjectRole,
  createProject,
  getTenant,
  isDefaultProject,
  listProjects,
  updateProject,
} from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import { decodeId, descriptionSchema, nameSchema, ProjectStatusEnum, slugSchema } from '../common.js';
import { ProjectRef, TenantRef } from '../refs.js';
import { JobVisibilityEnum, ProjectRoleEnum } from './project-member.js';
import { isEntity } from './tenant.js';
import { tenantConnection } from './tenant-connection.js';

builder.node(ProjectRef, {
  description:
    'A unit of work inside a tenant (a team, product or experiment line); jobs and cost roll up to it.',
  id: { resolve: (project) => project.id },
  isTypeOf: (value) => isEntity(value, 'Project'),
  fields: (t) => ({
    slug: t.exposeString('slug'),
    name: t.exposeString('name'),
    description: t.string({ nullable: true, resolve: (project) => project.description ?? null }),
    status: t.field({ type: ProjectStatusEnum, resolve: (project) => project.status }),
    createdAt: t.field({ type: 'DateTime', resolve: (project) => project.createdAt }),
    archivedAt: t.field({
      type: 'DateTime',
      nullable: true,
      resolve: (project) => project.archivedAt ?? null,
    }),
    tenant: t.field({ type: TenantRef, resolve: (project, _args, ctx) => getTenant(ctx, project.tenant.id) }),
    viewerRole: t.field({
      type: ProjectRoleEnum,
      nullable: true,
      description: "The caller's effective role here (tenant admins: PROJECT_ADMIN); null with none.",
      resolve: (project, _args, ctx) => callerProjectRole(ctx, project),
    }),
    jobVisibility: t.field({ type: JobVisibilityEnum, resolve: (project) => project.jobVisibility }),
    isDefault: t.boolean({
      description: "Submits that name no project land here (the tenant's defaultProject).",
      resolve: (project, _args, ctx) => isDefaultProject(ctx, project),
    }),
  }),
});

builder.objectFields(TenantRef, (t) => ({
  projects: t.connection({
    type: ProjectRef,
    args: { status: t.arg({ type: ProjectStatusEnum }) },
    authScopes: (tenant) => ({ capability: { tenantId: tenant.id, capability: 'tenant:read' } }),
    resolve: (tenant, args, ctx) =>
      tenantConnection(args, tenant, (tenantId) => (page) => listProjects(ctx, tenantId, page, args.status)),
  }),
}));

builder.queryFields((t) => ({
  projects: t.connection({
    type: ProjectRef,
    description: "A tenant's projects (every member may read them).",
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id({ required: true }), status: t.arg({ type: ProjectStatusEnum }) },
    resolve: (_root, args, ctx) =>
      tenantConnection(
        args,
        { globalId: args.tenantId },
        (tenantId) => (page) => listProjects(ctx, tenantId, page, args.status),
      ),
  }),
}));

const CreateProjectInput = builder.inputType('CreateProjectInput', {
  fields: (t) => ({
    tenantId: t.id({ required: true }),
    slug: t.string({ required: true, validate: slugSchema }),
    name: t.string({ required: true, validate: nameSchema }),
    description: t.string({ validate: descriptionSchema }),
  }),
});

const UpdateProjectInput = builder.inputType('UpdateProjectInput', {
  fields: (t) => ({
    id: t.id({ required: true }),
    name: t.string({ validate: nameSchema }),
    description: t.string({ validate: descriptionSchema }),
    jobVisibility: t.field({ type: JobVisibilityEnum }),
  }),
});

builder.mutationFields((t) => ({
  updateProject: t.field({
    type: ProjectRef,
    description: "The project's admins and tenant admins. Fields left out stay as they are.",
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: UpdateProjectInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      updateProject(ctx, decodeId(String(input.id), 'Project'), {
        name: input.name ?? undefined,
        description: input.description === undefined ? undefined : input.description,
        jobVisibility: input.jobVisibility ?? undefined,
      }),
  }),
  createProject: t.field({
    type: ProjectRef,
    description: 'Tenant admins.',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: CreateProjectInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      createProject(ctx, {
        tenantId: decodeId(String(input.tenantId), 'Tenant'),
        slug: input.slug,
        name: input.name,
        description: input.description ?? null,
      }),
  }),
  archiveProject: t.field({
    type: ProjectRef,
    description: 'Tenant admins. An archived project keeps its history and takes no new work.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => archiveProject(ctx, decodeId(String(id), 'Project')),
  }),
}));
