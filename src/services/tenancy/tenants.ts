import { announceCredentialsChanged } from '../../events/index.js';
import { uuidv7 } from '../../persistence/ids.js';
import { findPlain } from '../../persistence/raw-reads.js';
import {
  type IsolationLevel,
  Membership,
  Project,
  Tenant,
  type TenantStatus,
  type TenantTier,
  User,
} from '../../persistence/tenancy/index.js';
import { badInput, conflict, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import {
  requireCapability,
  requirePlatformAdmin,
  requirePrincipal,
  requireTenantAdmin,
  type ServiceContext,
} from '../context.js';
import { findPage, type PageQuery } from '../paging.js';
import { invitation, newInvitedUser } from './members.js';

export interface CreateTenantInput {
  slug: string;
  name: string;
  tier?: TenantTier;
  isolationLevel?: IsolationLevel;
  /** The tenant's first admin (an unknown address becomes an invited user, as addMember). */
  adminEmail?: string | null;
}
export interface UpdateTenantInput {
  name?: string;
  tier?: TenantTier;
  isolationLevel?: IsolationLevel;
  status?: TenantStatus;
}

export interface TenantSettingsInput {
  /** Every member reads every project's job content (projects with visibility PROJECT). */
  projectsOpen?: boolean;
  /** Where submits that name no project go. */
  defaultProjectId?: string;
}

/** Platform admins see every tenant; everyone else only the tenants they belong to. */
export async function listTenants(ctx: ServiceContext, page: PageQuery): Promise<Tenant[]> {
  const principal = requirePrincipal(ctx);
  const where = principal.isPlatformAdmin ? {} : { id: { $in: [...principal.roles.keys()] } };
  return findPage(ctx.em, Tenant, where, page);
}

export async function getTenant(ctx: ServiceContext, id: string): Promise<Tenant> {
  requireCapability(ctx, id, 'tenant:read', 'Tenant');
  // Through the request's loader: one read per tenant however many queues, projects or members point at it
  // (a plain row; the tenant(slug) entry point primes it).
  const tenant = await ctx.loaders.tenant.load(id);
  if (!tenant) throw notFound('Tenant');
  return tenant;
}

export async function getTenantBySlug(ctx: ServiceContext, slug: string): Promise<Tenant> {
  requirePrincipal(ctx);
  // The dashboard's entry point: a plain row, read without the query builder (raw-reads.ts).
  const [tenant] = await findPlain(ctx.em, Tenant, { slug }, { limit: 1 });
  // Resolve first, then check: a slug of a foreign tenant answers exactly like a missing one.
  if (!tenant) throw notFound('Tenant');
  requireCapability(ctx, tenant.id, 'tenant:read', 'Tenant');
  return tenant;
}

export async function createTenant(ctx: ServiceContext, input: CreateTenantInput): Promise<Tenant> {
  const created = await auditedMutation(ctx, { action: 'tenant.create', input: { ...input } }, async (em) => {
    requirePlatformAdmin(ctx);
    if (await em.count(Tenant, { slug: input.slug }))
      throw conflict(`A tenant with slug "${input.slug}" already exists.`);
    const tenant = em.create(Tenant, {
      slug: input.slug,
      name: input.name,
      tier: input.tier ?? 'STANDARD',
      isolationLevel: input.isolationLevel ?? 'ELASTIC',
      status: 'ACTIVE',
      projectsOpen: false,
    });
    // Every tenant has a project a submit can default to; its members are added by its admins.
    const project = em.create(Project, {
      id: uuidv7(),
      tenant,
      slug: 'default',
      name: 'Default',
      description: null,
      status: 'ACTIVE',
      archivedAt: null,
      defaultQueueId: null,
    });
    tenant.defaultProjectId = project.id;
    if (input.adminEmail) {
      // A platform admin sets a tenant up, then stays out of it: the first admin takes over.
      const { email, invitedName } = invitation(input.adminEmail);
      const user = (await em.findOne(User, { email })) ?? newInvitedUser(em, email, invitedName);
      em.create(Membership, { tenant, user, role: 'TENANT_ADMIN', invitedName });
    }
    await em.flush();
    return { result: tenant, tenantId: tenant.id, targetType: 'Tenant', targetId: tenant.id };
  });
  // After the commit, so the leader's rebuild reads the new tenant: a backend that isolates tenants
  // (Kubernetes) makes its namespace.
  ctx.scheduler.announce({ kind: 'config' });
  // Every cached principal is looked up again: a JWT's roles claim names tenants by slug, so
  // a session cached before the tenant existed must now get its role (and the first admin theirs).
  announceCredentialsChanged(ctx.events, { tenantId: created.id, at: ctx.now().getTime() });
  return created;
}

export async function updateTenant(
  ctx: ServiceContext,
  id: string,
  input: UpdateTenantInput,
): Promise<Tenant> {
  const updated = await auditedMutation(
    ctx,
    { action: 'tenant.update', input: { id, ...input }, tenantHint: id },
    async (em) => {
      requirePlatformAdmin(ctx);
      const tenant = await em.findOne(Tenant, { id });
      if (!tenant) throw notFound('Tenant');
      em.assign(
        tenant,
        Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined && v !== null)),
      );
      await em.flush();
      return { result: tenant, tenantId: tenant.id, targetType: 'Tenant', targetId: tenant.id };
    },
  );
  // After the commit: the leader's rebuild must read the new row. Isolation level and status shape
  // the tenant's namespace (placement, removal when archived); the tier chooses governed queues' policies.
  ctx.scheduler.announce({ kind: 'config' });
  return updated;
}

/** Tenant admins: how open the tenant's projects are to each other, and the default project. */
export async function updateTenantSettings(
  ctx: ServiceContext,
  tenantId: string,
  input: TenantSettingsInput,
): Promise<Tenant> {
  return auditedMutation(
    ctx,
    { action: 'tenant.updateSettings', input: { tenantId, ...input }, tenantHint: tenantId },
    async (em) => {
      requireTenantAdmin(ctx, tenantId, 'projects:write', 'Tenant');
      const tenant = await em.findOne(Tenant, { id: tenantId });
      if (!tenant) throw notFound('Tenant');
      if (input.defaultProjectId !== undefined) {
        const project = await em.findOne(Project, { id: input.defaultProjectId });
        if (!project || project.tenant.id !== tenant.id) throw notFound('Project');
        if (project.status === 'ARCHIVED')
          throw badInput(
            `Project "${project.slug}" is archived; an archived project takes no new work, so it cannot be the default.`,
          );
        tenant.defaultProjectId = project.id;
      }
      if (input.projectsOpen !== undefined) tenant.projectsOpen = input.projectsOpen;
      await em.flush();
      return { result: tenant, tenantId: tenant.id, targetType: 'Tenant', targetId: tenant.id };
    },
  );
}

/** The project submits go to when they name none (null only for a tenant being set up). */
export async function defaultProjectOfTenant(ctx: ServiceContext, tenant: Tenant): Promise<Project | null> {
  requireCapability(ctx, tenant.id, 'tenant:read', 'Tenant');
  return tenant.defaultProjectId ? ctx.loaders.project.load(tenant.defaultProjectId) : null;
}
