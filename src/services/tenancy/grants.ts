import type { EntityManager } from '@mikro-orm/core';
import { NodePool, PriorityClassRow, Queue } from '../../persistence/cluster/index.js';
import { type DataBoundaries, Project, Tenant } from '../../persistence/tenancy/index.js';
import { badInput, forbidden, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import { requirePlatformAdmin, requireTenantAdmin, type ServiceContext } from '../context.js';
import { BOUNDARY_KINDS, entriesOutside, KIND_LABEL, normaliseList } from './data-boundaries.js';
import { requireProjectManager } from './project-rights.js';

/**
 * What a tenant and its projects may use beyond their quota, handed down level by level:
 * platform admins mark priority classes as needing a grant and grant them to tenants
 * (pools are dedicated to a tenant through its queues and node pools); tenant admins pass
 * them on to projects, never more than the tenant holds. Data boundaries narrow the same
 * way: the platform sets a tenant's, a project's admins narrow them further.
 */

export type GrantKind = 'PRIORITY_CLASS' | 'POOL';

export interface ProjectAccessInput {
  projectId: string;
  kind: GrantKind;
  name: string;
}

/** The dedicated pools of a tenant: its queues' dedicated pools and the node pools dedicated to it. */
export async function tenantDedicatedPools(em: EntityManager, tenantId: string): Promise<string[]> {
  const queues = await em.find(Queue, { tenant: tenantId, dedicatedPool: { $ne: null } });
  const pools = await em.find(NodePool, { dedicatedTenant: tenantId });
  return [...new Set([...queues.map((q) => q.dedicatedPool!), ...pools.map((p) => p.name)])].sort();
}

export const grantedPriorityClassesOf = (holder: { grantedPriorityClasses?: string[] | null }): string[] =>
  holder.grantedPriorityClasses ?? [];
export const grantedPoolsOf = (project: { grantedPools?: string[] | null }): string[] =>
  project.grantedPools ?? [];

async function knownPriorityClass(em: EntityManager, name: string): Promise<PriorityClassRow> {
  const found = await em.findOne(PriorityClassRow, { name });
  if (!found) {
    const names = (await em.find(PriorityClassRow, {}, { orderBy: { value: 'desc' } })).map((c) => c.name);
    throw badInput(`There is no priority class "${name}" (there are: ${names.join(', ')}).`);
  }
  return found;
}

/** Platform admins grant a priority class to a tenant; its admins then pass it on to projects. */
export async function grantTenantPriorityClass(
  ctx: ServiceContext,
  tenantId: string,
  priorityClass: string,
): Promise<Tenant> {
  return auditedMutation(
    ctx,
    { action: 'tenant.grantPriorityClass', input: { tenantId, priorityClass }, tenantHint: tenantId },
    async (em) => {
      requirePlatformAdmin(ctx);
      const tenant = await em.findOne(Tenant, { id: tenantId });
      if (!tenant) throw notFound('Tenant');
      await knownPriorityClass(em, priorityClass);
      const granted = grantedPriorityClassesOf(tenant);
      if (!granted.includes(priorityClass))
        tenant.grantedPriorityClasses = [...granted, priorityClass].sort();
      await em.flush();
      return { result: tenant, tenantId: tenant.id, targetType: 'Tenant', targetId: tenant.id };
    },
  );
}

/** Takes the class from the tenant and from every project of it (a project never holds more than its
 * tenant).
 */
export async function revokeTenantPriorityClass(
  ctx: ServiceContext,
  tenantId: string,
  priorityClass: string,
): Promise<Tenant> {
  return auditedMutation(
    ctx,
    { action: 'tenant.revokePriorityClass', input: { tenantId, priorityClass }, tenantHint: tenantId },
    async (em) => {
      requirePlatformAdmin(ctx);
      const tenant = await em.findOne(Tenant, { id: tenantId });
      if (!tenant) throw notFound('Tenant');
      tenant.grantedPriorityClasses = grantedPriorityClassesOf(tenant).filter((c) => c !== priorityClass);
      for (const project of await em.find(Project, { tenant: tenant.id })) {
        if (grantedPriorityClassesOf(project).includes(priorityClass))
          project.grantedPriorityClasses = grantedPriorityClassesOf(project).filter(
            (c) => c !== priorityClass,
          );
      }
      await em.flush();
      return { result: tenant, tenantId: tenant.id, targetType: 'Tenant', targetId: tenant.id };
    },
  );
}

/**
 * Tenant admins give a project a priority class or a dedicated pool, within what the
 * tenant holds: a class the platform granted the tenant, a pool dedicated to the tenant.
 */
export async function grantProjectAccess(ctx: ServiceContext, input: ProjectAccessInput): Promise<Project> {
  return changeProjectAccess(ctx, input, 'grant');
}

/** Tenant admins take a priority class or pool back from a project (its queued jobs stay queued). */
export async function revokeProjectAccess(ctx: ServiceContext, input: ProjectAccessInput): Promise<Project> {
  return changeProjectAccess(ctx, input, 'revoke');
}

async function changeProjectAccess(
  ctx: ServiceContext,
  input: ProjectAccessInput,
  change: 'grant' | 'revoke',
): Promise<Project> {
  return auditedMutation(
    ctx,
    {
      action: `project.${change}Access`,
      input: { ...input },
      tenantHint: await tenantOfProject(ctx, input.projectId),
    },
    async (em) => {
      const project = await em.findOne(Project, { id: input.projectId });
      if (!project) throw notFound('Project');
      requireTenantAdmin(ctx, project.tenant.id, 'projects:write', 'Project');
      const tenant = await em.findOneOrFail(Tenant, { id: project.tenant.id });
      if (input.kind === 'PRIORITY_CLASS') {
        const current = grantedPriorityClassesOf(project);
        if (change === 'grant') {
          await knownPriorityClass(em, input.name);
          if (!grantedPriorityClassesOf(tenant).includes(input.name)) {
            throw forbidden(
              `Tenant "${tenant.slug}" has not been granted priority class "${input.name}", so it cannot pass it on: ask a platform admin to grant it to the tenant first.`,
            );
          }
          if (!current.includes(input.name)) project.grantedPriorityClasses = [...current, input.name].sort();
        } else {
          project.grantedPriorityClasses = current.filter((c) => c !== input.name);
        }
      } else {
        const current = grantedPoolsOf(project);
        if (change === 'grant') {
          const pools = await tenantDedicatedPools(em, tenant.id);
          if (!pools.includes(input.name)) {
            throw forbidden(
              `"${input.name}" is not a pool dedicated to tenant "${tenant.slug}" (its dedicated pools: ${pools.join(', ') || 'none'}); platform admins dedicate pools to tenants.`,
            );
          }
          if (!current.includes(input.name)) project.grantedPools = [...current, input.name].sort();
        } else {
          project.grantedPools = current.filter((p) => p !== input.name);
        }
      }
      await em.flush();
      return { result: project, tenantId: project.tenant.id, targetType: 'Project', targetId: project.id };
    },
  );
}

/** So a refused change of a project is audited in its tenant's log (auditedMutation files it there only for
 * callers who see the tenant).
 */
async function tenantOfProject(ctx: ServiceContext, projectId: string): Promise<string | null> {
  return (await ctx.loaders.project.load(projectId))?.tenant.id ?? null;
}

export interface DataBoundariesInput {
  imageRegistries?: string[] | null;
  datasetLocations?: string[] | null;
  artifactStores?: string[] | null;
}

/** Each list checked and written in canonical form; an omitted list is unrestricted. */
function normaliseBoundaries(input: DataBoundariesInput): DataBoundaries {
  const out = { imageRegistries: null, datasetLocations: null, artifactStores: null } as DataBoundaries;
  for (const kind of BOUNDARY_KINDS) {
    const result = normaliseList(input[kind] ?? null, kind);
    if (!result.ok) throw badInput(`${kind}: ${result.problem}.`);
    out[kind] = result.list;
  }
  return out;
}

/** Platform admins set where a tenant's jobs may take images from and read and write data. */
export async function setTenantDataBoundaries(
  ctx: ServiceContext,
  tenantId: string,
  input: DataBoundariesInput,
): Promise<Tenant> {
  return auditedMutation(
    ctx,
    {
      action: 'tenant.setDataBoundaries',
      input: { tenantId, boundaries: { ...input } },
      tenantHint: tenantId,
    },
    async (em) => {
      requirePlatformAdmin(ctx);
      const tenant = await em.findOne(Tenant, { id: tenantId });
      if (!tenant) throw notFound('Tenant');
      tenant.dataBoundaries = normaliseBoundaries(input);
      await em.flush();
      return { result: tenant, tenantId: tenant.id, targetType: 'Tenant', targetId: tenant.id };
    },
  );
}

/**
 * A project's admins narrow the tenant's data boundaries for the project: every entry
 * must lie within the tenant's list (a project cannot reach what its tenant may not).
 */
export async function setProjectDataBoundaries(
  ctx: ServiceContext,
  projectId: string,
  input: DataBoundariesInput,
): Promise<Project> {
  return auditedMutation(
    ctx,
    {
      action: 'project.setDataBoundaries',
      input: { projectId, boundaries: { ...input } },
      tenantHint: await tenantOfProject(ctx, projectId),
    },
    async (em) => {
      const project = await em.findOne(Project, { id: projectId });
      if (!project) throw notFound('Project');
      requireProjectManager(ctx, project);
      const tenant = await em.findOneOrFail(Tenant, { id: project.tenant.id });
      const boundaries = normaliseBoundaries(input);
      for (const kind of BOUNDARY_KINDS) {
        const tenantList = tenant.dataBoundaries?.[kind] ?? null;
        const outside = entriesOutside(boundaries[kind], tenantList, kind);
        if (outside.length) {
          throw badInput(
            `${kind}: ${outside.map((e) => `"${e}"`).join(', ')} ${outside.length === 1 ? 'is' : 'are'} not within the ${KIND_LABEL[kind]} tenant "${tenant.slug}" allows (${tenantList!.join(', ') || 'none'}).`,
          );
        }
      }
      project.dataBoundaries = boundaries;
      await em.flush();
      return { result: project, tenantId: project.tenant.id, targetType: 'Project', targetId: project.id };
    },
  );
}
