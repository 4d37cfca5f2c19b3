import type { JobVisibility, ProjectRole } from '../persistence/tenancy/index.js';
import { MUTATING_ROLES } from './capabilities.js';
import { type Access, accessFor, type Principal } from './principal.js';

/**
 * Rights below the tenant: a person's role in a project, and what it lets them do with the
 * project and its jobs. Pure rules over the Principal; the services load the rows and
 * throw (services/project-rights.ts).
 *
 * - A tenant admin is PROJECT_ADMIN of every project of the tenant.
 * - A project role held by someone whose tenant role is read-only (VIEWER, AUDITOR) counts
 *   as VIEWER: a project cannot give more than the tenant does.
 * - A platform admin has no project role, except under a break-glass grant for the tenant
 *   (then PROJECT_ADMIN, audited).
 * - An API token carries its owner's project roles; its scopes still gate each action.
 */
export interface ProjectScope {
  id: string;
  tenantId: string;
}

export interface EffectiveProjectRole {
  role: ProjectRole;
  via: Access;
}

const RANK: Record<ProjectRole, number> = { VIEWER: 1, CONTRIBUTOR: 2, PROJECT_ADMIN: 3 };

export function projectRoleOf(
  principal: Principal | null,
  project: ProjectScope,
): EffectiveProjectRole | null {
  if (!principal) return null;
  if (principal.token && principal.token.tenantId !== null && principal.token.tenantId !== project.tenantId)
    return null;
  const tenantRole = principal.roles.get(project.tenantId);
  if (tenantRole === 'TENANT_ADMIN') return { role: 'PROJECT_ADMIN', via: 'role' };
  const own = principal.projectRoles.get(project.id);
  if (tenantRole !== undefined && own && own.tenantId === project.tenantId) {
    return { role: MUTATING_ROLES.has(tenantRole) ? own.role : 'VIEWER', via: 'role' };
  }
  if (principal.isPlatformAdmin && principal.breakGlass.has(project.tenantId))
    return { role: 'PROJECT_ADMIN', via: 'break-glass' };
  return null;
}

export function atLeast(role: ProjectRole | undefined | null, wanted: ProjectRole): boolean {
  return role != null && RANK[role] >= RANK[wanted];
}

/** Manage a project: its members, default queue, job visibility and data boundaries. */
export function mayManageProject(principal: Principal | null, project: ProjectScope): Access | null {
  if (!accessFor(principal, project.tenantId, 'projects:write')) return null;
  const effective = projectRoleOf(principal, project);
  return effective && atLeast(effective.role, 'PROJECT_ADMIN') ? effective.via : null;
}

/** Submit (and preview) jobs in a project. */
export function maySubmitTo(principal: Principal | null, project: ProjectScope): Access | null {
  if (!accessFor(principal, project.tenantId, 'jobs:write')) return null;
  const effective = projectRoleOf(principal, project);
  return effective && atLeast(effective.role, 'CONTRIBUTOR') ? effective.via : null;
}

export interface JobScope {
  tenantId: string;
  projectId: string | null;
  submittedById: string | null;
}

/** Cancel or change a job: its submitter (while still a contributor) and the project's admins. */
export function mayChangeJob(principal: Principal | null, job: JobScope): Access | null {
  if (!principal || !accessFor(principal, job.tenantId, 'jobs:write')) return null;
  const effective = job.projectId
    ? projectRoleOf(principal, { id: job.projectId, tenantId: job.tenantId })
    : tenantAdminRole(principal, job.tenantId);
  if (!effective) return null;
  if (atLeast(effective.role, 'PROJECT_ADMIN')) return effective.via;
  return atLeast(effective.role, 'CONTRIBUTOR') && job.submittedById === principal.userId
    ? effective.via
    : null;
}

export interface ContentSettings {
  /** The tenant's setting: every member may read every project's job content. */
  projectsOpen: boolean;
  /** The job's project's setting. */
  jobVisibility: JobVisibility;
}

/**
 * Read a job's content (image, command, arguments, environment, data paths; logs when a
 * backend has them). Job metadata (name, state, resources, position) stays readable by
 * everyone with jobs:read in the tenant, platform admins included.
 */
export function mayReadJobContent(
  principal: Principal | null,
  job: JobScope,
  settings: ContentSettings,
): Access | null {
  if (!principal) return null;
  const access = accessFor(principal, job.tenantId, 'jobs:read');
  if (!access) return null;
  if (access === 'platform') return principal.breakGlass.has(job.tenantId) ? 'break-glass' : null;
  if (access === 'break-glass') return access;
  if (principal.roles.get(job.tenantId) === 'TENANT_ADMIN') return 'role';
  if (job.submittedById === principal.userId) return 'role';
  const effective = job.projectId
    ? projectRoleOf(principal, { id: job.projectId, tenantId: job.tenantId })
    : null;
  if (effective && atLeast(effective.role, 'PROJECT_ADMIN')) return effective.via;
  if (settings.jobVisibility === 'SUBMITTER') return null;
  if (effective) return effective.via;
  return settings.projectsOpen ? 'role' : null;
}

function tenantAdminRole(principal: Principal, tenantId: string): EffectiveProjectRole | null {
  if (principal.roles.get(tenantId) === 'TENANT_ADMIN') return { role: 'PROJECT_ADMIN', via: 'role' };
  if (principal.isPlatformAdmin && principal.breakGlass.has(tenantId))
    return { role: 'PROJECT_ADMIN', via: 'break-glass' };
  return null;
}
