import { type ResolveCursorConnectionArgs, resolveCursorConnection } from '@pothos/plugin-relay';
import type { JOB_VISIBILITIES, PROJECT_ROLES } from '../../src/persistence/tenancy/index.js';
import {
  addProjectMember,
  changeProjectMemberRole,
  getProject,
  listProjectMembers,
  projectMemberName,
  removeProjectMember,
  visibleEmail,
} from '../../src/services/tenancy/index.js';
import { builder } from '../builder.js';
import { decodeId, pageFrom, toCursor } from '../common.js';
import { ProjectMemberRef, ProjectRef } from '../refs.js';
import { isEntity } from './tenant.js';

export const ProjectRoleEnum = builder.enumType('ProjectRole', {
  description:
    'Rights inside one project. Tenant admins are PROJECT_ADMIN of every project; a tenant VIEWER or AUDITOR is at most a project VIEWER.',
  values: {
    PROJECT_ADMIN: {
      description:
        "Manages the project's members, default queue, job visibility and data boundaries; cancels any of its jobs.",
    },
    CONTRIBUTOR: { description: 'Submits jobs to the project and cancels their own.' },
    VIEWER: {
      description: "Reads the project's jobs (their content too, when the project's visibility is PROJECT).",
    },
  } satisfies Record<(typeof PROJECT_ROLES)[number], unknown>,
});

export const JobVisibilityEnum = builder.enumType('JobVisibility', {
  description:
    "Who reads a project's job content (container, command, environment, data paths). Job metadata stays visible to the tenant.",
  values: {
    PROJECT: {
      description:
        "Every member of the project (and every member of the tenant when the tenant's projectsOpen is on).",
    },
    SUBMITTER: { description: "Only the job's submitter, the project's admins and tenant admins." },
  } satisfies Record<(typeof JOB_VISIBILITIES)[number], unknown>,
});

builder.node(ProjectMemberRef, {
  description: "A person's role in one project. They are a member of the project's tenant.",
  id: { resolve: (row) => row.id },
  isTypeOf: (value) => isEntity(value, 'ProjectMembership'),
  fields: (t) => ({
    project: t.field({ type: ProjectRef, resolve: (row, _args, ctx) => getProject(ctx, row.project.id) }),
    name: t.string({
      description: "The person's name as their tenant knows them (see Member.name).",
      resolve: (row, _args, ctx) => projectMemberName(ctx, row),
    }),
    email: t.string({
      nullable: true,
      description: 'Tenant admins, platform admins under a break-glass grant, and the person themself only.',
      resolve: (row, _args, ctx) => visibleEmail(ctx, row.tenant.id, row.user),
    }),
    role: t.field({
      type: ProjectRoleEnum,
      description: "The stored role (a tenant admin's effective role is PROJECT_ADMIN whatever it says).",
      resolve: (row) => row.role,
    }),
    isViewer: t.boolean({
      description: 'True for your own project membership.',
      resolve: (row, _args, ctx) => row.user.id === ctx.principal?.userId,
    }),
    createdAt: t.field({ type: 'DateTime', resolve: (row) => row.createdAt }),
  }),
});

builder.objectFields(ProjectRef, (t) => ({
  members: t.connection({
    type: ProjectMemberRef,
    description: "The project's own members (tenant admins administer every project without being listed).",
    authScopes: (project) => ({ capability: { tenantId: project.tenant.id, capability: 'tenant:read' } }),
    resolve: (project, args, ctx) =>
      resolveCursorConnection({ args, toCursor }, (page: ResolveCursorConnectionArgs) =>
        listProjectMembers(ctx, project, pageFrom(page)),
      ),
  }),
}));

const AddProjectMemberInput = builder.inputType('AddProjectMemberInput', {
  fields: (t) => ({
    projectId: t.id({ required: true }),
    memberId: t.id({ required: true, description: "The person's Member id in the project's tenant." }),
    role: t.field({ type: ProjectRoleEnum, required: true }),
  }),
});

/** A project role given with addMember. */
export const ProjectRoleInputRef = builder.inputType('ProjectRoleInput', {
  fields: (t) => ({
    projectId: t.id({ required: true }),
    role: t.field({ type: ProjectRoleEnum, required: true }),
  }),
});

const RemoveProjectMemberPayload = builder
  .objectRef<{ removedProjectMemberId: string }>('RemoveProjectMemberPayload')
  .implement({
    fields: (t) => ({ removedProjectMemberId: t.exposeID('removedProjectMemberId') }),
  });

builder.mutationFields((t) => ({
  addProjectMember: t.field({
    type: ProjectMemberRef,
    description:
      "The project's admins and tenant admins. CONFLICT if the person is already in the project; a tenant VIEWER or AUDITOR can only be a project VIEWER (BAD_USER_INPUT).",
    authScopes: { authenticated: true },
    args: { input: t.arg({ type: AddProjectMemberInput, required: true }) },
    resolve: (_root, { input }, ctx) =>
      addProjectMember(ctx, {
        projectId: decodeId(String(input.projectId), 'Project'),
        memberId: decodeId(String(input.memberId), 'Member'),
        role: input.role,
      }),
  }),
  changeProjectMemberRole: t.field({
    type: ProjectMemberRef,
    description: "The project's admins and tenant admins.",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }), role: t.arg({ type: ProjectRoleEnum, required: true }) },
    resolve: (_root, { id, role }, ctx) =>
      changeProjectMemberRole(ctx, decodeId(String(id), 'ProjectMember'), role),
  }),
  removeProjectMember: t.field({
    type: RemoveProjectMemberPayload,
    description: "The project's admins and tenant admins; or the person themself, to leave the project.",
    authScopes: { authenticated: true },
    args: { id: t.arg.id({ required: true }) },
    resolve: async (_root, { id }, ctx) => {
      await removeProjectMember(ctx, decodeId(String(id), 'ProjectMember'));
      return { removedProjectMemberId: String(id) };
    },
  }),
}));
