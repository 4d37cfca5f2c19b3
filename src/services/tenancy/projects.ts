import { projectRoleOf } from '../../auth/index.js';
import {
  type JobVisibility,
  Project,
  type ProjectRole,
  type ProjectStatus,
  Tenant,
} from '../../persistence/tenancy/index.js';
import { conflict, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import { requireCapability, requireTenantAdmin, type ServiceContext } from '../context.js';
import { findPage, type PageQuery } from '../paging.js';
import { requireProjectManager, scopeOf } from './project-rights.js';

export interface CreateProjectInput {
  tenantId: string;
  slug: string;
  name: string;
  description?: string | null;
}

export interface UpdateProjectInput {
  name?: string;
  description?: string | null;
  jobVisibility?: JobVisibility;
}

export async function listProjects(
  ctx: ServiceContext,
  tenantId: string,
  page: PageQuery,
  status?: ProjectStatus | null,
): Promise<Project[]> {
  requireCapability(ctx, tenantId, 'tenant:read', 'Tenant');
  return findPage(ctx.em, Project, status ? { tenant: tenantId, status } : { tenant: tenantId }, page);
}

export async function getProject(ctx: ServiceContext, id: string): Promise<Project> {
  const project = await ctx.em.findOne(Project, { id });
  if (!project) throw notFound('Project');
  requireCapability(ctx, project.tenant.id, 'tenant:read', 'Project');
  return project;
}

export async function createProject(ctx: ServiceContext, input: CreateProjectInput): Promise<Project> {
  return auditedMutation(
    ctx,
    { action: 'project.create', input: { ...input }, tenantHint: input.tenantId },
    async (em) => {
      requireTenantAdmin(ctx, input.tenantId, 'projects:write', 'Tenant');
      const tenant = await em.findOne(Tenant, { id: input.tenantId });
      if (!tenant) throw notFound('Tenant');
      if (await em.count(Project, { tenant: tenant.id, slug: input.slug })) {
        throw conflict(`This tenant already has a project with slug "${input.slug}".`);
      }
      const project = em.create(Project, {
        tenant,
        slug: input.slug,
        name: input.name,
        description: input.description ?? null,
        status: 'ACTIVE',
        archivedAt: null,
      });
      await em.flush();
      return { result: project, tenantId: tenant.id, targetType: 'Project', targetId: project.id };
    },
  );
}

export async function archiveProject(ctx: ServiceContext, id: string): Promise<Project> {
  return auditedMutation(ctx, { action: 'project.archive', input: { id } }, async (em) => {
    const project = await em.findOne(Project, { id });
    if (!project) throw notFound('Project');
    requireTenantAdmin(ctx, project.tenant.id, 'projects:write', 'Project');
    const tenant = await em.findOne(Tenant, { id: project.tenant.id });
    if (tenant?.defaultProjectId === project.id)
      throw conflict("This is the tenant's default project; make another project the default first.");
    if (project.status === 'ARCHIVED') throw conflict('The project is already archived.');
    project.status = 'ARCHIVED';
    project.archivedAt = ctx.now();
    await em.flush();
    return { result: project, tenantId: project.tenant.id, targetType: 'Project', targetId: project.id };
  });
}

/** Its admins (and tenant admins): name, description and who reads its jobs' content. */
export async function updateProject(
  ctx: ServiceContext,
  id: string,
  input: UpdateProjectInput,
): Promise<Project> {
  return auditedMutation(ctx, { action: 'project.update', input: { id, ...input } }, async (em) => {
    const project = await em.findOne(Project, { id });
    if (!project) throw notFound('Project');
    requireProjectManager(ctx, project);
    if (input.name !== undefined) project.name = input.name;
    if (input.description !== undefined) project.description = input.description;
    if (input.jobVisibility !== undefined) project.jobVisibility = input.jobVisibility;
    await em.flush();
    return { result: project, tenantId: project.tenant.id, targetType: 'Project', targetId: project.id };
  });
}

/** The caller's effective role in the project (tenant admins: PROJECT_ADMIN), or null. */
export function callerProjectRole(ctx: ServiceContext, project: Project): ProjectRole | null {
  return projectRoleOf(ctx.principal, scopeOf(project))?.role ?? null;
}

/** Whether submits that name no project land in this one. */
export async function isDefaultProject(ctx: ServiceContext, project: Project): Promise<boolean> {
  const tenant = await ctx.loaders.tenant.load(project.tenant.id);
  return tenant?.defaultProjectId === project.id;
}
