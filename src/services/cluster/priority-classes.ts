// Creating, changing and deleting priority classes (platform admins, audited). A class is known by
// its name everywhere (jobs, services, grants, budgets, the price book), so the name never changes;
// its value and preemptibility are the scheduler's, which rebuilds its core once a change is
// committed. Who may use a class (grants to tenants and projects) is tenancy's (grants.ts).
import type { EntityManager } from '@mikro-orm/core';
import { PriorityClassRow, Queue } from '../../persistence/cluster/index.js';
import { InferenceService } from '../../persistence/inference/index.js';
import { Job } from '../../persistence/jobs/index.js';
import { Budget, PriceMultiplier } from '../../persistence/metering/index.js';
import { Project, Tenant } from '../../persistence/tenancy/index.js';
import { badInput, conflict, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import { requirePlatformAdmin, type ServiceContext } from '../context.js';
import { LIVE_JOB_STATES, names, refuseInUse } from './in-use.js';

export const PREEMPTIBLE = ['yes', 'no', 'reclaim-only'] as const;
/** Kubernetes' PriorityClass range: a class's value is a plain integer within it. */
export const PRIORITY_VALUE_LIMIT = 1_000_000_000;

export interface CreatePriorityClassInput {
  name: string;
  value: number;
  preemptible: (typeof PREEMPTIBLE)[number];
  description?: string | null;
  requiresGrant?: boolean | null;
}

export interface UpdatePriorityClassInput {
  name: string;
  value?: number | null;
  preemptible?: (typeof PREEMPTIBLE)[number] | null;
  /** null clears it. */
  description?: string | null;
  requiresGrant?: boolean | null;
}

/**
 * Classes the API falls back to when a caller names none (schema/jobs/job-submit.ts,
 * schema/inference/inference-service-input.ts): deleting one would break those calls.
 */
const API_DEFAULTS: Record<string, string> = {
  training: 'submitJob and submitJobs use it for a job that names no class',
  'inference-critical': "it is createInferenceService's default guaranteedClass",
  production: "it is createInferenceService's default burstClass",
};

/** A Kubernetes object name (DNS-1123 label): the name jobs' pods carry. */
const CLASS_NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

function validate(input: UpdatePriorityClassInput): void {
  if (input.value != null && (!Number.isInteger(input.value) || Math.abs(input.value) > PRIORITY_VALUE_LIMIT))
    throw badInput(`value must be an integer between -${PRIORITY_VALUE_LIMIT} and ${PRIORITY_VALUE_LIMIT}.`);
  if (input.preemptible != null && !PREEMPTIBLE.includes(input.preemptible))
    throw badInput(`preemptible must be one of ${PREEMPTIBLE.join(', ')}.`);
  if (input.description != null && input.description.length > 200)
    throw badInput('description must be at most 200 characters.');
}

/**
 * A new class, as the defaults are (ensurePriorityClasses): no multiplier until setPriceMultiplier
 * (the price book charges 1). A name a deleted class had may be used again: what was charged
 * under it stays as it was.
 */
export async function createPriorityClass(
  ctx: ServiceContext,
  input: CreatePriorityClassInput,
): Promise<PriorityClassRow> {
  const created = await auditedMutation(
    ctx,
    { action: 'priorityClass.create', input: { ...input } },
    async (em) => {
      requirePlatformAdmin(ctx);
      if (!CLASS_NAME.test(input.name))
        throw badInput('name must be lowercase letters, digits and dashes (at most 63), e.g. batch-low.');
      if (input.value == null || input.preemptible == null)
        throw badInput('value and preemptible are required for a new class.');
      validate(input);
      if (await em.count(PriorityClassRow, { name: input.name }))
        throw conflict(
          `A priority class named "${input.name}" already exists (updatePriorityClass changes it).`,
        );
      const row = em.create(PriorityClassRow, {
        name: input.name,
        value: input.value,
        preemptible: input.preemptible,
        description: input.description?.trim() || null,
        requiresGrant: input.requiresGrant ?? false,
      });
      await em.flush();
      return { result: row, tenantId: null, targetType: 'PriorityClass', targetId: row.id };
    },
  );
  // The scheduler orders and preempts by the classes it knows: the leader rebuilds its core.
  ctx.scheduler.announce({ kind: 'config' });
  return created;
}

export async function updatePriorityClass(
  ctx: ServiceContext,
  input: UpdatePriorityClassInput,
): Promise<PriorityClassRow> {
  let scheduling = false;
  const updated = await auditedMutation(
    ctx,
    { action: 'priorityClass.update', input: { ...input } },
    async (em) => {
      requirePlatformAdmin(ctx);
      validate(input);
      const found = await em.findOne(PriorityClassRow, { name: input.name });
      if (!found) throw notFound('PriorityClass');
      if (input.value != null && input.value !== found.value) {
        found.value = input.value;
        scheduling = true;
      }
      if (input.preemptible != null && input.preemptible !== found.preemptible) {
        if (input.preemptible === 'no') await refuseUnreclaimable(em, found.name);
        found.preemptible = input.preemptible;
        scheduling = true;
      }
      if (input.description !== undefined) found.description = input.description?.trim() || null;
      // Checked at submit only: jobs already submitted keep running either way.
      if (input.requiresGrant != null) found.requiresGrant = input.requiresGrant;
      await em.flush();
      return { result: found, tenantId: null, targetType: 'PriorityClass', targetId: found.id };
    },
  );
  // Queue order and who may preempt whom follow the new value at once: the leader rebuilds its core.
  if (scheduling) ctx.scheduler.announce({ kind: 'config' });
  return updated;
}

/**
 * A class that is never preempted runs within nominal quota only: while admitted jobs of it
 * run on borrowed quota, making it so would leave their lenders unable to take it back.
 */
async function refuseUnreclaimable(em: EntityManager, name: string): Promise<void> {
  const admitted = await em.find(
    Job,
    { priorityClass: name, state: { $in: ['ADMITTED', 'RUNNING'] } },
    { fields: ['id', 'admission', 'queue'] },
  );
  const borrowing = admitted.filter((j) => j.admission?.borrowed);
  if (!borrowing.length) return;
  const queues = await em.find(Queue, { id: { $in: [...new Set(borrowing.map((j) => j.queue.id))] } });
  refuseInUse(
    `Priority class "${name}"`,
    [
      `${borrowing.length} admitted job(s) of it run on borrowed quota (queue ${names(queues.map((q) => q.name))})`,
    ],
    'It becomes never-preempted only once they end: their lenders could not take the quota back.',
  );
}

/** What names a class: live jobs, inference services, grants to tenants and projects, budgets' exemptions. */
async function priorityClassUses(em: EntityManager, name: string): Promise<string[]> {
  const uses: string[] = [];
  if (API_DEFAULTS[name]) uses.push(API_DEFAULTS[name]);
  const jobs = await em.find(
    Job,
    {
      priorityClass: name,
      $or: [{ state: { $in: [...LIVE_JOB_STATES] } }, { stoppingUntil: { $ne: null } }],
    },
    { fields: ['id', 'queue'] },
  );
  if (jobs.length) {
    const queues = await em.find(Queue, { id: { $in: [...new Set(jobs.map((j) => j.queue.id))] } });
    uses.push(`${jobs.length} live job(s) of this class (queue ${names(queues.map((q) => q.name))})`);
  }
  const services = await em.find(
    InferenceService,
    { $or: [{ guaranteedClass: name }, { burstClass: name }] },
    { populate: ['queue'] },
  );
  if (services.length)
    uses.push(
      `${services.length} inference service(s) run replicas in it (queue ${names(services.map((s) => s.queue.name))})`,
    );
  const holds = (list: string[] | null | undefined) => (list ?? []).includes(name);
  const tenants = (await em.find(Tenant, {})).filter((t) => holds(t.grantedPriorityClasses));
  const projects = (await em.find(Project, {}, { populate: ['tenant'] })).filter((p) =>
    holds(p.grantedPriorityClasses),
  );
  const granted = [...tenants.map((t) => t.slug), ...projects.map((p) => p.tenant.slug)];
  if (granted.length) uses.push(`it is granted to tenant ${names(granted)} (revokeTenantPriorityClass)`);
  const budgets = (await em.find(Budget, {})).filter((b) => holds(b.exemptPriorityClasses));
  if (budgets.length) uses.push(`${budgets.length} budget(s) exempt it from their holds`);
  return uses;
}

export async function deletePriorityClass(ctx: ServiceContext, name: string): Promise<string> {
  const deleted = await auditedMutation(
    ctx,
    { action: 'priorityClass.delete', input: { name } },
    async (em) => {
      requirePlatformAdmin(ctx);
      const found = await em.findOne(PriorityClassRow, { name });
      if (!found) throw notFound('PriorityClass');
      refuseInUse(
        `Priority class "${name}"`,
        await priorityClassUses(em, name),
        'Nothing may name a class that is deleted.',
      );
      // The ledger keeps what its multipliers charged; the versions go with the class.
      await em.nativeDelete(PriceMultiplier, { priorityClass: name });
      em.remove(found);
      await em.flush();
      return { result: name, tenantId: null, targetType: 'PriorityClass', targetId: found.id };
    },
  );
  ctx.scheduler.announce({ kind: 'config' });
  return deleted;
}
