import { z } from 'zod';
import {
  acceptMembership,
  addMember,
  changeMemberRole,
  getTenant,
  listMembers,
  memberName,
  removeMember,
  visibleEmail,
} from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import { decodeId, emailSchema, nameSchema, TenantRoleEnum } from '../common.js';
import { MemberRef, TenantRef } from '../refs.js';
import { ProjectRoleInputRef } from './project-member.js';
import { isEntity } from './tenant.js';
import { tenantConnection } from './tenant-connection.js';

builder.node(MemberRef, {
  description: "A person's membership in a tenant, with their role there.",
  id: { resolve: (member) => member.id },
  isTypeOf: (value) => isEntity(value, 'Membership'),
  fields: (t) => ({
    name: t.string({
      description: 'The name given when the person was added, until they accept; then their own.',
      resolve: (member) => memberName(member),
    }),
    accepted: t.boolean({
      description: 'False until the person accepts (acceptMembership).',
      resolve: (member) => member.invitedName === null,
    }),
    email: t.string({
      nullable: true,
      description: 'Tenant admins, platform admins and the member themself only.',
      resolve: (member, _args, ctx) => visibleEmail(ctx, member.tenant.id, member.user),
    }),
    role: t.field({ type: TenantRoleEnum, resolve: (member) => member.role }),
    isViewer: t.boolean({
      description: 'True for your own membership.',
      resolve: (member, _args, ctx) => member.user.id === ctx.principal?.userId,
    }),
    joinedAt: t.field({ type: 'DateTime', resolve: (member) => member.createdAt }),
    tenant: t.field({ type: TenantRef, resolve: (member, _args, ctx) => getTenant(ctx, member.tenant.id) }),
  }),
});

builder.objectFields(TenantRef, (t) => ({
  members: t.connection({
    type: MemberRef,
    authScopes: (tenant) => ({ capability: { tenantId: tenant.id, capability: 'tenant:read' } }),
    resolve: (tenant, args, ctx) =>
      tenantConnection(args, tenant, (tenantId) => (page) => listMembers(ctx, tenantId, page)),
  }),
}));

builder.queryFields((t) => ({
  members: t.connection({
    type: MemberRef,
    description: "A tenant's members.",
    authScopes: { authenticated: true },
    args: { tenantId: t.arg.id({ required: true }) },
    resolve: (_root, args, ctx) =>
      tenantConnection(
        args,
        { globalId: args.tenantId },
        (tenantId) => (page) => listMembers(ctx, tenantId, page),
      ),
  }),
}));

const AddMemberInput = builder.inputType('AddMemberInput', {
  description:
    'Adds a person by e-mail; an address Fairway does not know yet is invited as a new user. The member is shown under `name` (default: the address before the @) until they accept.',
  fields: (t) => ({
    tenantId: t.id({ required: true }),
    email: t.string({ required: true, validate: emailSchema }),
    name: t.string({ validate: nameSchema }),
    role: t.field({ type: TenantRoleEnum, required: true }),
    projects: t.field({
      type: [ProjectRoleInputRef],
      description:
        'Project roles to give at once (same transaction: all or nothing). A VIEWER or AUDITOR can only be a project VIEWER.',
      validate: z.array(z.any()).max(100, 'at most 100 projects'),
    }),
  }),
});

const RemoveMemberPayload = builder.objectRef<{ removedMemberId: string }>('RemoveMemberPayload').implement({
  fields: (t) => ({ removedMemberId: t.exposeID('removedMemberId') }),
});

builder.mutationFields((t) => ({
  addMember: t.field({
    type: MemberRef,
    description: 'Tenant admins.',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: AddMemberInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      addMember(ctx, {
        tenantId: decodeId(String(input.tenantId), 'Tenant'),
        email: input.email,
        name: input.name ?? undefined,
        role: input.role,
        projects: input.projects?.map((p) => ({
          projectId: decodeId(String(p.projectId), 'Project'),
          role: p.role,
        })),
      }),
  }),
  acceptMembership: t.field({
    type: MemberRef,
    description:
      'The person themself: accept a membership, so the tenant sees your own name instead of the one typed when you were added.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: (_root, { id }, ctx) => acceptMembership(ctx, decodeId(String(id), 'Member')),
  }),
  changeMemberRole: t.field({
    type: MemberRef,
    description: 'Tenant admins. A tenant always keeps at least one admin.',
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }), role: t.arg({ type: TenantRoleEnum, required: true }) },
    resolve: (_root, { id, role }, ctx) => changeMemberRole(ctx, decodeId(String(id), 'Member'), role),
  }),
  removeMember: t.field({
    type: RemoveMemberPayload,
    description:
      "Tenant admins. A tenant always keeps at least one admin. The person's project roles in the tenant go with the membership.",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await removeMember(ctx, decodeId(String(id), 'Member'));
      return { removedMemberId: String(id) };
    },
  }),
}));
