import { z } from 'zod';
import {
  grantedPoolsOf,
  grantedPriorityClassesOf,
  grantProjectAccess,
  grantTenantPriorityClass,
  revokeProjectAccess,
  revokeTenantPriorityClass,
  tenantDedicatedPools,
} from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';
import { ProjectRef, TenantRef } from '../refs.js';

// Platform → tenant → project: what a project may use beyond its quota. PriorityClass.requiresGrant
// lives with the priority classes (cluster.ts), updatePriorityClass beside them (priority-class.ts).

const GrantKindEnum = builder.enumType('GrantKind', {
  values: {
    PRIORITY_CLASS: { description: 'A priority class that needs a grant (PriorityClass.requiresGrant).' },
    POOL: { description: 'A node pool dedicated to the tenant (Tenant.dedicatedPools).' },
  } as const,
});

builder.objectFields(TenantRef, (t) => ({
  grantedPriorityClasses: t.stringList({
    description:
      'Priority classes needing a grant that platform admins gave this tenant; its admins pass them on to projects.',
    authScopes: (tenant) => ({ capability: { tenantId: tenant.id, capability: 'tenant:read' } }),
    resolve: (tenant) => grantedPriorityClassesOf(tenant),
  }),
  dedicatedPools: t.stringList({
    description:
      "Node pools dedicated to this tenant (its queues' dedicated pools and pools dedicated to it); its admins grant them to projects.",
    authScopes: (tenant) => ({ capability: { tenantId: tenant.id, capability: 'tenant:read' } }),
    resolve: (tenant, _args, ctx) => tenantDedicatedPools(ctx.em, tenant.id),
  }),
}));

builder.objectFields(ProjectRef, (t) => ({
  grantedPriorityClasses: t.stringList({
    description: 'Priority classes needing a grant that this project may use (within the tenant’s).',
    authScopes: (project) => ({ capability: { tenantId: project.tenant.id, capability: 'tenant:read' } }),
    resolve: (project) => grantedPriorityClassesOf(project),
  }),
  grantedPools: t.stringList({
    description: "The tenant's dedicated pools this project's jobs may use.",
    authScopes: (project) => ({ capability: { tenantId: project.tenant.id, capability: 'tenant:read' } }),
    resolve: (project) => grantedPoolsOf(project),
  }),
}));

const priorityClassName = z.string().min(1, 'must not be empty').max(63, 'must be at most 63 characters');

const ProjectAccessInput = builder.inputType('ProjectAccessInput', {
  fields: (t) => ({
    projectId: t.id({ required: true }),
    kind: t.field({ type: GrantKindEnum, required: true }),
    name: t.string({
      required: true,
      description: 'The priority class or pool.',
      validate: priorityClassName,
    }),
  }),
});

builder.mutationFields((t) => ({
  grantTenantPriorityClass: t.field({
    type: TenantRef,
    description:
      'Platform admins. Lets the tenant (and, once its admins pass it on, its projects) use a priority class that needs a grant.',
    authScopes: { authenticated: true },
    args: {
      tenantId: t.arg.id({ required: true }),
      priorityClass: t.arg.string({ required: true, validate: priorityClassName }),
    },
    resolve: (_r, args, ctx) =>
      grantTenantPriorityClass(ctx, decodeId(String(args.tenantId), 'Tenant'), args.priorityClass),
  }),
  revokeTenantPriorityClass: t.field({
    type: TenantRef,
    description: 'Platform admins. Takes the class from the tenant and from each of its projects.',
    authScopes: { authenticated: true },
    args: {
      tenantId: t.arg.id({ required: true }),
      priorityClass: t.arg.string({ required: true, validate: priorityClassName }),
    },
    resolve: (_r, args, ctx) =>
      revokeTenantPriorityClass(ctx, decodeId(String(args.tenantId), 'Tenant'), args.priorityClass),
  }),
  grantProjectAccess: t.field({
    type: ProjectRef,
    description:
      'Tenant admins. Only within what the tenant holds: a priority class granted to the tenant, a pool dedicated to it.',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: ProjectAccessInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      grantProjectAccess(ctx, {
        projectId: decodeId(String(input.projectId), 'Project'),
        kind: input.kind,
        name: input.name,
      }),
  }),
  revokeProjectAccess: t.field({
    type: ProjectRef,
    description: 'Tenant admins. Jobs already queued keep their place; new submits are refused.',
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: ProjectAccessInput, required: true }) },
    resolve: (_r, { input }, ctx) =>
      revokeProjectAccess(ctx, {
        projectId: decodeId(String(input.projectId), 'Project'),
        kind: input.kind,
        name: input.name,
      }),
  }),
}));
