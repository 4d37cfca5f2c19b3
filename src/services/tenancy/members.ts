import { announceCredentialsChanged } from '../../events/index.js';
import { Membership, Tenant, type TenantRole, User } from '../../persistence/tenancy/index.js';
import { conflict, forbidden, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import {
  callerHasCapability,
  requireCapability,
  requireMutatingCapability,
  type ServiceContext,
} from '../context.js';
import { findPage, type PageQuery } from '../paging.js';
import { addToProjects, type ProjectRoleInput, removeFromTenantProjects } from './project-members.js';

export interface AddMemberInput {
  tenantId: string;
  email: string;
  name?: string;
  role: TenantRole;
  /** Project roles to give in the same transaction. */
  projects?: readonly ProjectRoleInput[];
}

/**
 * The one rule for a person's e-mail address, wherever it is shown (Member.email,
 * AuditEvent.actorEmail, …): the person themself, and holders of members:read in the
 * tenant the record belongs to (tenant admins; a platform admin only under a break-glass
 * grant, audited). Records of no tenant (the platform audit log): the person and platform
 * admins only.
 */
export function maySeeEmail(
  ctx: Pick<ServiceContext, 'principal' | 'breakGlassReads'>,
  tenantId: string | null,
  userId: string,
): boolean {
  const principal = ctx.principal;
  if (!principal) return false;
  if (principal.userId === userId) return true;
  if (tenantId === null) return principal.isPlatformAdmin;
  return callerHasCapability(ctx, tenantId, 'members:read', 'e-mail addresses');
}

/** The address, or FORBIDDEN (a nullable field: null with the error, as every field rule). */
export function visibleEmail(
  ctx: ServiceContext,
  tenantId: string | null,
  user: { id: string; email: string },
): string {
  if (!maySeeEmail(ctx, tenantId, user.id))
    throw forbidden(
      'Only tenant admins and the person themself may read this e-mail address (members:read).',
    );
  return user.email;
}

export async function listMembers(
  ctx: ServiceContext,
  tenantId: string,
  page: PageQuery,
): Promise<Membership[]> {
  requireCapability(ctx, tenantId, 'tenant:read', 'Tenant');
  return findPage(ctx.em, Membership, { tenant: tenantId }, page, ['user']);
}

export async function getMember(ctx: ServiceContext, id: string): Promise<Membership> {
  const membership = await ctx.em.findOne(Membership, { id }, { populate: ['user'] });
  if (!membership) throw notFound('Member');
  requireCapability(ctx, membership.tenant.id, 'tenant:read', 'Member');
  return membership;
}

/** How an address is stored, and the name a tenant shows for it until the person accepts (default: the part
 * before the @).
 */
export function invitation(email: string, typedName?: string | null): { email: string; invitedName: string } {
  const normalised = email.trim().toLowerCase();
  return { email: normalised, invitedName: typedName?.trim() || normalised.split('@')[0]! };
}

/** A person known only by the address someone typed: their profile name is the invited name until they sign
 * in.
 */
export function newInvitedUser(em: ServiceContext['em'], email: string, invitedName: string): User {
  return em.create(User, { email, name: invitedName, isPlatformAdmin: false, externalId: null });
}

/**
 * Adds a person to a tenant by e-mail; an unknown address becomes a new (invited) user.
 * The answer is the same whether or not the address belongs to someone who already exists
 * elsewhere: the membership shows the name typed here (or the address's local part), never
 * the stored profile, until the person accepts. Otherwise any tenant admin could look up who
 * has an account with another tenant, and under which name.
 */
export async function addMember(ctx: ServiceContext, input: AddMemberInput): Promise<Membership> {
  const { email, invitedName } = invitation(input.email, input.name);
  const membership = await auditedMutation(
    ctx,
    { action: 'member.add', input: { ...input, email }, tenantHint: input.tenantId },
    async (em) => {
      requireMutatingCapability(ctx, input.tenantId, 'members:write', 'Tenant');
      const tenant = await em.findOne(Tenant, { id: input.tenantId });
      if (!tenant) throw notFound('Tenant');
      const existing = await em.findOne(User, { email });
      if (existing && (await em.count(Membership, { tenant: tenant.id, user: existing.id }))) {
        throw conflict(`${email} is already a member of this tenant; change their role instead.`);
      }
      const user = existing ?? newInvitedUser(em, email, invitedName);
      const membership = em.create(Membership, { tenant, user, role: input.role, invitedName });
      await em.flush();
      if (input.projects?.length) {
        await addToProjects(ctx, em, membership, input.projects);
        await em.flush();
      }
      return { result: membership, tenantId: tenant.id, targetType: 'Member', targetId: membership.id };
    },
  );
  membershipChanged(ctx, membership);
  return membership;
}

/** After commit: the person's cached principals (sessions and tokens) are looked up again, on every replica.
 *
 */
function membershipChanged(ctx: ServiceContext, membership: Pick<Membership, 'user' | 'tenant'>): void {
  announceCredentialsChanged(ctx.events, {
    userId: membership.user.id,
    tenantId: membership.tenant.id,
    at: ctx.now().getTime(),
  });
}

/** The person themself accepts a membership: from now on the tenant sees their own profile name. */
export async function acceptMembership(ctx: ServiceContext, id: string): Promise<Membership> {
  return auditedMutation(ctx, { action: 'member.accept', input: { id } }, async (em) => {
    const membership = await em.findOne(Membership, { id }, { populate: ['user'] });
    if (!membership) throw notFound('Member');
    const principal = requireCapability(ctx, membership.tenant.id, 'tenant:read', 'Member');
    if (membership.user.id !== principal.userId)
      throw forbidden('Only the person themself may accept their membership.');
    membership.invitedName = null;
    await em.flush();
    return {
      result: membership,
      tenantId: membership.tenant.id,
      targetType: 'Member',
      targetId: membership.id,
    };
  });
}

export async function changeMemberRole(
  ctx: ServiceContext,
  id: string,
  role: TenantRole,
): Promise<Membership> {
  const changed = await auditedMutation(
    ctx,
    { action: 'member.changeRole', input: { id, role } },
    async (em) => {
      const membership = await loadForChange(ctx, em, id);
      if (membership.role === 'TENANT_ADMIN' && role !== 'TENANT_ADMIN')
        await ensureAnotherAdmin(em, membership);
      membership.role = role;
      await em.flush();
      return {
        result: membership,
        tenantId: membership.tenant.id,
        targetType: 'Member',
        targetId: membership.id,
      };
    },
  );
  membershipChanged(ctx, changed);
  return changed;
}

export async function removeMember(ctx: ServiceContext, id: string): Promise<Membership> {
  const removed = await auditedMutation(ctx, { action: 'member.remove', input: { id } }, async (em) => {
    const membership = await loadForChange(ctx, em, id);
    if (membership.role === 'TENANT_ADMIN') await ensureAnotherAdmin(em, membership);
    const removed = { ...membership } as Membership;
    await removeFromTenantProjects(em, membership.tenant.id, membership.user.id);
    em.remove(membership);
    await em.flush();
    return { result: removed, tenantId: removed.tenant.id, targetType: 'Member', targetId: id };
  });
  membershipChanged(ctx, removed);
  return removed;
}

async function loadForChange(ctx: ServiceContext, em: ServiceContext['em'], id: string): Promise<Membership> {
  const membership = await em.findOne(Membership, { id }, { populate: ['user'] });
  if (!membership) throw notFound('Member');
  requireMutatingCapability(ctx, membership.tenant.id, 'members:write', 'Member');
  return membership;
}

/** A tenant never loses its last admin: someone must be able to manage it. */
async function ensureAnotherAdmin(em: ServiceContext['em'], membership: Membership) {
  const admins = await em.count(Membership, {
    tenant: membership.tenant.id,
    role: 'TENANT_ADMIN',
    id: { $ne: membership.id },
  });
  if (admins === 0) throw conflict('This is the last tenant admin; make someone else an admin first.');
}
