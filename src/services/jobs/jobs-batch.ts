import { type EntityManager, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { JobSpec } from '../../core/scheduling/index.js';
import { insertRows } from '../../persistence/bound-sql.js';
import { Job, type JobView, jobsByIdempotencyKey } from '../../persistence/jobs/index.js';
import { jobEventRow } from '../../persistence/scheduling/index.js';
import { badInput, conflict, FairwayError } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import { requirePrincipal, type ServiceContext } from '../context.js';
import { schedulerInputError } from '../errors.js';
import { totalGpus } from '../scheduling/index.js';
import { coreSpec, pendingJobFields, requestHash } from './jobs.js';
import { jobViewOf, newJobRow } from './new-job-rows.js';
import type { SubmitJobInput } from './submit-input.js';
import { resolveTarget } from './submit-target.js';

/** Slurm's default MaxArraySize is 1,001 tasks; a bigger sweep is several calls. */
export const MAX_BATCH_JOBS = 1000;

export function requireBatchSize(count: number): void {
  if (count < 1 || count > MAX_BATCH_JOBS) {
    throw badInput(
      `Submit from 1 to ${MAX_BATCH_JOBS} jobs per call (got ${count}): split a larger sweep into several calls.`,
      { count, max: MAX_BATCH_JOBS },
    );
  }
}

/**
 * A refusal of one job of a batch, as the caller must see it: which job (its index in the
 * call, in the message and `extensions.index`) and, when the refusal names a field, the
 * field under that job (`jobs[17].container.image`). The code stays submitJob's, so a
 * NOT_FOUND says no more about another tenant's queue than submitJob would.
 */
export function atIndex(index: number, error: unknown): never {
  if (!(error instanceof FairwayError)) throw error;
  const field = error.details?.field;
  throw new FairwayError(error.code, `jobs[${index}]: ${error.message}`, {
    ...error.details,
    index,
    ...(typeof field === 'string' ? { field: `jobs[${index}].${field}` } : {}),
  });
}

type Target = Awaited<ReturnType<typeof resolveTarget>>;

interface Planned {
  input: SubmitJobInput;
  target: Target;
  hash: string;
  /** The job an earlier call made under this job's idempotency key. */
  existing?: Job;
  spec?: JobSpec;
  /** The row written for it (new jobs). */
  job?: JobView;
}

/**
 * Submits up to MAX_BATCH_JOBS jobs, all or nothing, with submitJob's rules for each: every
 * job is checked (rights, grants, data boundaries, the scheduler's validation) before
 * anything is written, and the first refusal refuses the call. Jobs whose idempotency key
 * an earlier call already used come back as they are (CONFLICT if their payload differs);
 * the others are written in one transaction with their SUBMITTED events and one audit
 * event listing them, then handed to the scheduler. Answers in input order.
 */
export async function submitJobs(ctx: ServiceContext, inputs: SubmitJobInput[]): Promise<JobView[]> {
  requirePrincipal(ctx);
  requireBatchSize(inputs.length);
  requireDistinctKeys(inputs);
  return attempt(
    ctx,
    inputs,
    inputs.some((input) => input.idempotencyKey),
  );
}

async function attempt(ctx: ServiceContext, inputs: SubmitJobInput[], mayRetry: boolean): Promise<JobView[]> {
  const plan = await resolveAll(ctx, inputs);
  const tenantId = plan[0]!.target.queue.tenant.id;
  await findExisting(ctx.em, tenantId, plan);
  const fresh = plan.filter((p) => !p.existing);
  validateShapes(ctx, plan);
  if (!fresh.length) return plan.map((p) => p.existing!);
  try {
    await write(ctx, tenantId, fresh);
  } catch (error) {
    // Two retries of one call raced on a key (the unique index; auditedMutation answers CONFLICT): the
    // second look finds the winner's jobs.
    if (
      mayRetry &&
      (error instanceof UniqueConstraintViolationException ||
        (error instanceof FairwayError && error.code === 'CONFLICT'))
    )
      return attempt(ctx, inputs, false);
    throw error;
  }
  // On the leader each spec goes straight into the core (one cycle serves the burst); a follower tells the
  // leader.
  for (const p of fresh) ctx.scheduler.submitted(p.spec!);
  const at = ctx.now().getTime();
  for (const queueId of new Set(fresh.map((p) => p.target.queue.id)))
    ctx.events.publish('queue-updated', queueId, { queueId, at });
  return plan.map((p) => p.existing ?? p.job!);
}

function requireDistinctKeys(inputs: SubmitJobInput[]): void {
  const seen = new Map<string, number>();
  inputs.forEach((input, index) => {
    const key = input.idempotencyKey;
    if (!key) return;
    const first = seen.get(key);
    if (first !== undefined) {
      throw badInput(
        `jobs[${index}]: idempotencyKey is also that of jobs[${first}]; each job of a call needs its own key.`,
        { index, field: `jobs[${index}].idempotencyKey` },
      );
    }
    seen.set(key, index);
  });
}

/**
 * Where each job goes and whether the caller may put it there (resolveTarget, as submitJob).
 * A sweep's jobs mostly share a queue, project, priority class and data references, so the
 * checks run once per distinct combination: commands, arguments, environment, names and
 * pod shapes change nothing about where a job may go.
 */
async function resolveAll(ctx: ServiceContext, inputs: SubmitJobInput[]): Promise<Planned[]> {
  const targets = new Map<string, Target>();
  const plan: Planned[] = [];
  for (const [index, input] of inputs.entries()) {
    const key = policyKey(input);
    let target = targets.get(key);
    if (!target) {
      try {
        target = await resolveTarget(ctx, ctx.em, input);
      } catch (error) {
        atIndex(index, error);
      }
      targets.set(key, target);
    }
    const tenantId = plan[0]?.target.queue.tenant.id;
    if (tenantId && target.queue.tenant.id !== tenantId) {
      throw badInput(
        `jobs[${index}]: its queue is in another tenant than jobs[0]'s; one call submits to one tenant's queues.`,
        { index, field: `jobs[${index}].queueId` },
      );
    }
    plan.push({ input, target, hash: requestHash(input, target.queue.id) });
  }
  return plan;
}

/** What resolveTarget and enforceSubmitPolicy read of a job. */
function policyKey(input: SubmitJobInput): string {
  const container = input.workload?.container as
    | {
        image?: string;
        datasets?: { location: string }[];
        artifactStore?: string | null;
        securityContext?: unknown;
      }
    | undefined;
  return JSON.stringify([
    input.queueId ?? null,
    input.projectId ?? null,
    input.priorityClass,
    container
      ? [
          container.image,
          container.datasets?.map((d) => d.location),
          container.artifactStore ?? null,
          container.securityContext ?? null,
        ]
      : null,
  ]);
}

/**
 * Every key of the call in one query; a key reused for a different payload refuses the call.
 * Read as bare columns (the ORM took ~30 ms to build and run a 1,000-key `$in` find that
 * almost always finds nothing); only jobs actually found are loaded as entities.
 */
async function findExisting(em: EntityManager, tenantId: string, plan: Planned[]): Promise<void> {
  const keys = plan.flatMap((p) => (p.input.idempotencyKey ? [p.input.idempotencyKey] : []));
  const found = await jobsByIdempotencyKey(em, tenantId, keys);
  if (!found.length) return;
  const byKey = new Map(found.map((row) => [row.key, row]));
  const entities = new Map(
    (await em.find(Job, { id: { $in: found.map((row) => row.id) } })).map((job) => [job.id, job]),
  );
  plan.forEach((p, index) => {
    const existing = p.input.idempotencyKey ? byKey.get(p.input.idempotencyKey) : undefined;
    if (!existing) return;
    if (existing.requestHash !== p.hash) {
      throw conflict(
        `jobs[${index}]: this idempotency key was already used for a different job; use a new key for a new job.`,
      );
    }
    p.existing = entities.get(existing.id);
    if (!p.existing)
      throw conflict(`jobs[${index}]: the job made under this idempotency key is being removed; retry.`);
  });
}

/**
 * The scheduler's validation (submitJob's preview) of each new job. Its refusals depend on
 * the queue, priority class and pod sets only, so one preview per distinct shape: a
 * 1,000-job sweep of one shape costs one.
 */
function validateShapes(ctx: ServiceContext, plan: Planned[]): void {
  const checked = new Set<string>();
  plan.forEach((p, index) => {
    if (p.existing) return;
    const { queue, project } = p.target;
    p.spec = coreSpec(ctx, p.input, queue, project);
    const shape = JSON.stringify([
      queue.id,
      project.id,
      p.input.priorityClass,
      p.input.podSets,
      p.input.expectedDurationMs ?? null,
      p.input.maxRunMs ?? null,
      p.input.checkpoint ?? null,
    ]);
    if (checked.has(shape)) return;
    try {
      ctx.scheduler.preview(p.spec);
    } catch (error) {
      try {
        schedulerInputError(error);
      } catch (mapped) {
        atIndex(index, mapped);
      }
    }
    checked.add(shape);
  });
}

async function write(ctx: ServiceContext, tenantId: string, fresh: Planned[]): Promise<void> {
  const principal = requirePrincipal(ctx);
  const at = ctx.now();
  const rows = fresh.map((p) => jobRow(p, tenantId, principal.userId, at));
  const listed = fresh.map((p) => ({
    id: p.spec!.id,
    name: p.input.name,
    queue: p.target.queue.name,
    projectId: p.target.project.id,
    priorityClass: p.input.priorityClass,
    gpus: totalGpus(p.spec!),
  }));
  await auditedMutation(
    ctx,
    { action: 'job.submitBatch', input: { count: fresh.length, jobs: listed }, tenantHint: tenantId },
    async (em) => {
      await insertRows(em, 'Job', rows);
      const events = fresh.map((p) =>
        jobEventRow(p.spec!.id, tenantId, 'SUBMITTED', at, null, `Submitted to queue ${p.target.queue.name}`),
      );
      await insertRows(em, 'JobEvent', events);
      return { result: null, tenantId, targetType: 'Job', targetId: fresh[0]!.spec!.id };
    },
  );
  fresh.forEach((p, i) => {
    p.job = jobViewOf(rows[i]!);
  });
}

/** A new job's row: submitJob's fields. */
function jobRow(p: Planned, tenantId: string, userId: string, at: Date) {
  return newJobRow(
    pendingJobFields({
      input: p.input,
      spec: p.spec!,
      tenantId,
      projectId: p.target.project.id,
      queueId: p.target.queue.id,
      userId,
      hash: p.hash,
    }),
    at,
  );
}
