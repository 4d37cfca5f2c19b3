import type { EntityManager } from '@mikro-orm/core';
import { MUTATING_ROLES } from '../../auth/index.js';
import { announceCredentialsChanged } from '../../events/index.js';
import {
  Membership,
  Project,
  ProjectMembership,
  type ProjectRole,
  type TenantRole,
} from '../../persistence/tenancy/index.js';
import { badInput, conflict, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import { requireCapability, requirePrincipal, type ServiceContext } from '../context.js';
import { findPage, type PageQuery } from '../paging.js';
import { memberName } from './member-names.js';
import { requireProjectManager } from './project-rights.js';

export type { ProjectMembership };

export interface AddProjectMemberInput {
  projectId: string;
  /** The person's tenant membership (Member id). */
  memberId: string;
  role: ProjectRole;
}

export interface ProjectRoleInput {
  projectId: string;
  role: ProjectRole;
}

/**
 * A project cannot give more than the tenant does: someone whose tenant role is read-only
 * (VIEWER, AUDITOR) may only be a project VIEWER. (project-access.ts caps such a role to
 * VIEWER anyway; refusing it here keeps the stored role honest.)
 */
function requireRoleFitsTenantRole(tenantRole: TenantRole, role: ProjectRole): void {
  if (role !== 'VIEWER' && !MUTATING_ROLES.has(tenantRole)) {
    throw badInput(
      `A ${tenantRole} of the tenant can only be a VIEWER of its projects; change their tenant role first.`,
    );
  }
}

export async function listProjectMembers(
  ctx: ServiceContext,
  project: Project,
  page: PageQuery,
): Promise<ProjectMembership[]> {
  requireCapability(ctx, project.tenant.id, 'tenant:read', 'Project');
  return findPage(ctx.em, ProjectMembership, { project: project.id }, page, ['user']);
}

export async function getProjectMember(ctx: ServiceContext, id: string): Promise<ProjectMembership> {
  const row = await ctx.em.findOne(ProjectMembership, { id }, { populate: ['user'] });
  if (!row) throw notFound('ProjectMember');
  requireCapability(ctx, row.tenant.id, 'tenant:read', 'ProjectMember');
  return row;
}

/** The name the tenant knows the person by (the Member name rule: invited name until they accept). */
export async function projectMemberName(ctx: ServiceContext, row: ProjectMembership): Promise<string> {
  const membership = await ctx.loaders.membership.load(`${row.tenant.id}:${row.user.id}`);
  // Removing a tenant member removes their project roles in the same transaction; a row
  // without a membership is never shown a profile name the tenant was not given.
  return membership ? memberName(membership) : 'Former member';
}

export async function addProjectMember(
  ctx: ServiceContext,
  input: AddProjectMemberInput,
): Promise<ProjectMembership> {
  const added = await auditedMutation(
    ctx,
    { action: 'project.addMember', input: { ...input } },
    async (em) => {
      const project = await em.findOne(Project, { id: input.projectId });
      if (!project) throw notFound('Project');
      requireProjectManager(ctx, project);
      const membership = await em.findOne(Membership, { id: input.memberId }, { populate: ['user'] });
      if (!membership || membership.tenant.id !== project.tenant.id) throw notFound('Member');
      const row = await createProjectMembership(em, project, membership, input.role);
      await em.flush();
      return { result: row, tenantId: project.tenant.id, targetType: 'ProjectMember', targetId: row.id };
    },
  );
  projectRoleChanged(ctx, added);
  return added;
}

/** After commit: the person's cached principals (which hold their project roles) are looked up again, on
 * every replica.
 */
function projectRoleChanged(ctx: ServiceContext, row: Pick<ProjectMembership, 'user' | 'tenant'>): void {
  announceCredentialsChanged(ctx.events, {
    userId: row.user.id,
    tenantId: row.tenant.id,
    at: ctx.now().getTime(),
  });
}

/**
 * addMember's `projects`: gives a new tenant member their project roles in the same
 * transaction. Each project is checked as addProjectMember checks it.
 */
export async function addToProjects(
  ctx: ServiceContext,
  em: EntityManager,
  membership: Membership,
  roles: readonly ProjectRoleInput[],
): Promise<void> {
  if (new Set(roles.map((r) => r.projectId)).size !== roles.length)
    throw badInput('Each project may be named only once.');
  for (const { projectId, role } of roles) {
    const project = await em.findOne(Project, { id: projectId });
    if (!project || project.tenant.id !== membership.tenant.id) throw notFound('Project');
    requireProjectManager(ctx, project);
    await createProjectMembership(em, project, membership, role);
  }
}

async function createProjectMembership(
  em: EntityManager,
  project: Project,
  membership: Membership,
  role: ProjectRole,
): Promise<ProjectMembership> {
  requireRoleFitsTenantRole(membership.role, role);
  if (project.status === 'ARCHIVED')
    throw conflict(`Project "${project.slug}" is archived; it takes no new members.`);
  if (await em.count(ProjectMembership, { project: project.id, user: membership.user.id })) {
    throw conflict(
      `${memberName(membership)} is already in project "${project.slug}"; change their role instead.`,
    );
  }
  return em.create(ProjectMembership, { tenant: project.tenant, project, user: membership.user, role });
}

export async function changeProjectMemberRole(
  ctx: ServiceContext,
  id: string,
  role: ProjectRole,
): Promise<ProjectMembership> {
  const changed = await auditedMutation(
    ctx,
    { action: 'project.changeMemberRole', input: { id, role } },
    async (em) => {
      const { row, project } = await loadRow(em, id);
      requireProjectManager(ctx, project);
      const membership = await em.findOne(Membership, { tenant: row.tenant.id, user: row.user.id });
      if (!membership) throw notFound('ProjectMember');
      requireRoleFitsTenantRole(membership.role, role);
      row.role = role;
      await em.flush();
      return { result: row, tenantId: row.tenant.id, targetType: 'ProjectMember', targetId: row.id };
    },
  );
  projectRoleChanged(ctx, changed);
  return changed;
}

/** Project managers remove anyone from the project; anyone may leave a project themself. */
export async function removeProjectMember(ctx: ServiceContext, id: string): Promise<ProjectMembership> {
  const removed = await auditedMutation(
    ctx,
    { action: 'project.removeMember', input: { id } },
    async (em) => {
      const { row, project } = await loadRow(em, id);
      const principal = requirePrincipal(ctx);
      // Leaving only takes access away, so seeing the tenant is enough (a VIEWER may leave too).
      if (row.user.id === principal.userId && principal.kind === 'user')
        requireCapability(ctx, row.tenant.id, 'tenant:read', 'ProjectMember');
      else requireProjectManager(ctx, project);
      const removed = { ...row } as ProjectMembership;
      em.remove(row);
      await em.flush();
      return { result: removed, tenantId: removed.tenant.id, targetType: 'ProjectMember', targetId: id };
    },
  );
  projectRoleChanged(ctx, removed);
  return removed;
}

/** removeMember: a person who leaves the tenant leaves all its projects (same transaction). */
export async function removeFromTenantProjects(
  em: EntityManager,
  tenantId: string,
  userId: string,
): Promise<void> {
  await em.nativeDelete(ProjectMembership, { tenant: tenantId, user: userId });
}

async function loadRow(em: EntityManager, id: string): Promise<{ row: ProjectMembership; project: Project }> {
  const row = await em.findOne(ProjectMembership, { id }, { populate: ['user'] });
  const project = row ? await em.findOne(Project, { id: row.project.id }) : null;
  if (!row || !project) throw notFound('ProjectMember');
  return { row, project };
}
