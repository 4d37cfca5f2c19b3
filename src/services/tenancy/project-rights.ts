import type { EntityManager } from '@mikro-orm/core';
import {
  type ContentSettings,
  type JobScope,
  mayChangeJob,
  mayManageProject,
  mayReadJobContent,
  maySubmitTo,
} from '../../auth/index.js';
import { findOneMapped, type ReadOne } from '../../persistence/plain-rows.js';
import { Project, Tenant } from '../../persistence/tenancy/index.js';
import { forbidden } from '../../shared/index.js';
import {
  noteAccess,
  type Principal,
  requireCapability,
  requireMutatingCapability,
  type ServiceContext,
} from '../context.js';

/**
 * The service-layer checks of project and job rights (the rules are in
 * src/auth/project-access.ts). Each first applies the tenant check, so a caller outside
 * the tenant gets NOT_FOUND as for a missing thing, then the project's rule (FORBIDDEN).
 */

/** Its admins (and tenant admins): members, default queue, visibility, data boundaries. */
export function requireProjectManager(ctx: ServiceContext, project: Project): Principal {
  const principal = requireMutatingCapability(ctx, project.tenant.id, 'projects:write', 'Project');
  if (!mayManageProject(principal, scopeOf(project)))
    throw forbidden(`Only admins of project "${project.slug}" (and tenant admins) may change it.`);
  return principal;
}

/** Contributors and admins of the project submit (and preview) jobs in it. */
export function requireContributor(ctx: ServiceContext, project: Project): Principal {
  const principal = requireMutatingCapability(ctx, project.tenant.id, 'jobs:write', 'Project');
  if (!maySubmitTo(principal, scopeOf(project)))
    throw forbidden(
      `You are not a contributor of project "${project.slug}": ask one of its admins to add you.`,
    );
  return principal;
}

/** The job's submitter (still a contributor) and the project's admins cancel or change it. */
export function requireJobChanger(
  ctx: ServiceContext,
  job: { tenant: { id: string }; project?: { id: string } | null; submittedBy?: { id: string } | null },
): Principal {
  const principal = requireMutatingCapability(ctx, job.tenant.id, 'jobs:write', 'Job');
  if (!mayChangeJob(principal, jobScopeOf(job)))
    throw forbidden("Only the job's submitter and its project's admins may change it.");
  return principal;
}

/**
 * Whether the caller may read a job's content (container, command, environment, data
 * paths). Needs the tenant's and the project's settings; the loaders batch them.
 */
export async function mayReadContent(
  ctx: ServiceContext,
  job: { tenant: { id: string }; project?: { id: string } | null; submittedBy?: { id: string } | null },
): Promise<boolean> {
  requireCapability(ctx, job.tenant.id, 'jobs:read', 'Job');
  const settings = await contentSettings(ctx, job);
  return noteAccess(
    ctx,
    job.tenant.id,
    mayReadJobContent(ctx.principal, jobScopeOf(job), settings),
    'job content',
  );
}

/** The settings mayReadContent reads, for a caller who checks again later without SQL (a log stream). */
export function contentSettingsOf(
  ctx: ServiceContext,
  job: { tenant: { id: string }; project?: { id: string } | null },
): Promise<ContentSettings> {
  return contentSettings(ctx, job);
}

/** mayReadContent with the settings already read (contentSettingsOf): no SQL, for a stream's events. */
export function mayReadContentWith(
  ctx: ServiceContext,
  job: { tenant: { id: string }; project?: { id: string } | null; submittedBy?: { id: string } | null },
  settings: ContentSettings,
): boolean {
  requireCapability(ctx, job.tenant.id, 'jobs:read', 'Job');
  return noteAccess(
    ctx,
    job.tenant.id,
    mayReadJobContent(ctx.principal, jobScopeOf(job), settings),
    'job content',
  );
}

async function contentSettings(
  ctx: ServiceContext,
  job: { tenant: { id: string }; project?: { id: string } | null },
): Promise<ContentSettings> {
  const [tenant, project] = await Promise.all([
    ctx.loaders.tenant.load(job.tenant.id),
    job.project ? ctx.loaders.project.load(job.project.id) : null,
  ]);
  return { projectsOpen: tenant?.projectsOpen ?? false, jobVisibility: project?.jobVisibility ?? 'PROJECT' };
}

export function scopeOf(project: Project): { id: string; tenantId: string } {
  return { id: project.id, tenantId: project.tenant.id };
}

export function jobScopeOf(job: {
  tenant: { id: string };
  project?: { id: string } | null;
  submittedBy?: { id: string } | null;
}): JobScope {
  return {
    tenantId: job.tenant.id,
    projectId: job.project?.id ?? null,
    submittedById: job.submittedBy?.id ?? null,
  };
}

/**
 * The project a submit lands in when it names none: the tenant's default project. `read` reads a row by id
 * (persistence/plain-rows.ts: managed entities by default, plain rows where nothing is written through them).
 */
export async function defaultProjectOf(
  em: EntityManager,
  tenantId: string,
  read: ReadOne = findOneMapped,
): Promise<Project | null> {
  const tenant = await read(em, Tenant, tenantId);
  return tenant?.defaultProjectId ? read(em, Project, tenant.defaultProjectId) : null;
}
