import type { EntityManager } from '@mikro-orm/core';
import { Queue } from '../../persistence/cluster/index.js';
import { readSubmitRows } from '../../persistence/jobs/index.js';
import { findOneMapped, findOnePlain, type ReadOne } from '../../persistence/plain-rows.js';
import { Project, Tenant } from '../../persistence/tenancy/index.js';
import { badInput, conflict, notFound } from '../../shared/index.js';
import {
  requireCapability,
  requireMutatingCapability,
  requirePrincipal,
  type ServiceContext,
} from '../context.js';
import { defaultProjectOf, requireContributor } from '../tenancy/index.js';
import type { SubmitJobInput } from './submit-input.js';
import { enforceSubmitPolicy, type SubmitTarget } from './submit-policy.js';

/**
 * Where a submission goes and whether the caller may put it there: the queue (named, or the
 * project's default) and the project (named, or the tenant's default project). Outsiders
 * get NOT_FOUND; a tenant member who is not a contributor of the project gets FORBIDDEN;
 * then the tenant's and project's grants and data boundaries (submit-policy.ts) refuse
 * what the project may not use. Nothing is written before all of it passes.
 */
export async function resolveTarget(
  ctx: ServiceContext,
  em: EntityManager,
  input: SubmitJobInput,
  options: { managed?: boolean } = {},
) {
  // By hand-written SQL (the tenant filter applied there): the ORM's finds and entity mapping were most of a
  // submit's CPU. Plain rows unless the caller writes through the entities (an inference service's relations).
  const read: ReadOne = options.managed ? findOneMapped : findOnePlain;
  if (!options.managed && input.queueId) {
    // The common case, a named queue: everything in one statement. Not found: the steps below say which.
    const rows = await readSubmitRows(em, {
      queueId: input.queueId,
      projectId: input.projectId ?? null,
      priorityClass: input.priorityClass,
      idempotencyKey: input.idempotencyKey ?? null,
    });
    if (rows) {
      if (input.projectId && !rows.project) throw notFound('Project');
      requireMutatingCapability(ctx, rows.queue.tenant.id, 'jobs:write', 'Queue');
      if (rows.project && rows.project.tenant.id !== rows.queue.tenant.id) throw notFound('Project');
      await checkTarget(ctx, em, input, { ...rows, priorityClassRow: rows.priorityClass });
      return { queue: rows.queue, project: rows.project!, existing: rows.existing };
    }
  }
  let project: Project | null = null;
  if (input.projectId) {
    project = await read(em, Project, input.projectId);
    if (!project) throw notFound('Project');
  } else if (!input.queueId) {
    // Neither named: a caller of one tenant means its default project (and that project's queue).
    const tenants = [...requirePrincipal(ctx).roles.keys()];
    if (tenants.length === 1) project = await defaultProjectOf(em, tenants[0]!, read);
  }
  const queueId = input.queueId ?? project?.defaultQueueId ?? null;
  if (!queueId) {
    if (project) requireCapability(ctx, project.tenant.id, 'jobs:write', 'Project');
    throw badInput(
      project
        ? `Project "${project.slug}" has no default queue: name a queue (queueId).`
        : 'Name a queue (queueId) or a project (projectId): you belong to several tenants, or none.',
    );
  }
  const queue = await read(em, Queue, queueId);
  if (!queue) throw notFound('Queue');
  requireMutatingCapability(ctx, queue.tenant.id, 'jobs:write', 'Queue');
  if (project && project.tenant.id !== queue.tenant.id) throw notFound('Project');
  project ??= await defaultProjectOf(em, queue.tenant.id, read);
  const tenant = await read(em, Tenant, queue.tenant.id);
  if (!tenant) throw notFound('Queue');
  await checkTarget(ctx, em, input, { queue, project, tenant });
  return { queue, project: project!, existing: undefined };
}

/** resolveTarget's checks once the rows are read: the project, the submit policy, the backend. */
async function checkTarget(
  ctx: ServiceContext,
  em: EntityManager,
  input: SubmitJobInput,
  target: Omit<SubmitTarget, 'input' | 'project'> & { project: Project | null },
): Promise<void> {
  const { project } = target;
  if (!project) throw badInput('This tenant has no default project: name one (projectId).');
  requireContributor(ctx, project);
  if (project.status !== 'ACTIVE') throw conflict('The project is archived and takes no new jobs.');
  await enforceSubmitPolicy(em, { ...target, project, input });
  // A kind the backend cannot run (a CRD the cluster does not serve, pod sets the controller cannot take).
  const kindProblem = await ctx.scheduler.workloadProblem(input);
  if (kindProblem) throw badInput(kindProblem);
}
