import { createHash } from 'node:crypto';
import { type EntityManager, UniqueConstraintViolationException } from '@mikro-orm/core';
import type { CheckpointSpec, JobSpec, PodSetSpec, Preview } from '../../core/scheduling/index.js';

// The scheduler's shapes this service's answers carry (a job's pod sets, a preview): the schema takes them
// from here, never from the core.
export type { PodSetSpec, Preview };

import type { WorkloadType } from '../../core/governance/index.js';
import { PriorityClassRow, type Queue } from '../../persistence/cluster/index.js';
import { uuidv7 } from '../../persistence/ids.js';
import {
  Job,
  JobEvent,
  type JobRow,
  type JobState,
  type JobView,
  jobsByIdempotencyKey,
  readJobRows,
  TERMINAL_JOB_STATES,
} from '../../persistence/jobs/index.js';
import { jobEventRow, OutboxEntry } from '../../persistence/scheduling/index.js';
import type { Project } from '../../persistence/tenancy/index.js';
import { badInput, conflict, notFound } from '../../shared/index.js';
import { auditedMutation, groupedAuditedMutation } from '../audit/index.js';
import { requireCapability, requirePrincipal, type ServiceContext } from '../context.js';
import { schedulerInputError } from '../errors.js';
import type { Metering } from '../metering/index.js';
import { findPage, type PageQuery } from '../paging.js';
import { checkpointSpec, totalGpus } from '../scheduling/index.js';
import { requireJobChanger } from '../tenancy/index.js';
import { jobViewOf, newJobRow } from './new-job-rows.js';
import type { SubmitJobInput } from './submit-input.js';
import { submitAuditInput } from './submit-policy.js';
import { resolveTarget } from './submit-target.js';

export interface JobFilter {
  tenantId: string;
  states?: JobState[] | null;
  projectId?: string | null;
  queueId?: string | null;
  priorityClass?: string | null;
  submittedAfter?: Date | null;
  submittedBefore?: Date | null;
  /** Only the caller's own submissions. */
  mine?: boolean;
}

/** The scheduler core's view of a submission, with a fresh id and submit time. */
export function coreSpec(
  ctx: Pick<ServiceContext, 'now'>,
  input: SubmitJobInput,
  queue: Queue,
  project: Project,
): JobSpec {
  return {
    id: uuidv7(),
    tenant: queue.tenant.id,
    project: project.id,
    queue: queue.name,
    priorityClass: input.priorityClass,
    submitTime: ctx.now().getTime(),
    podSets: input.podSets,
    expectedDurationMs: input.expectedDurationMs ?? undefined,
    maxRunMs: input.maxRunMs ?? undefined,
    ...checkpointOf(input),
  };
}

/** The declared checkpointing as the core's field, none when the job declares none (the same normalisation
 * as a stored row's, checkpointSpec).
 */
export function checkpointOf(input: Pick<SubmitJobInput, 'checkpoint'>): { checkpoint?: CheckpointSpec } {
  return checkpointSpec({
    checkpointIntervalMs: input.checkpoint?.intervalMs ?? null,
    checkpointResumable: input.checkpoint?.resumable ?? false,
  });
}

/**
 * A new pending job's stored fields, relations as ids: what submitJob and submitJobs
 * (jobs-batch.ts) write for a submission, so the two never store a job differently.
 */
export function pendingJobFields(p: {
  input: SubmitJobInput;
  spec: JobSpec;
  tenantId: string;
  projectId: string;
  queueId: string;
  userId: string | null;
  hash: string;
  /** A replica of an inference service: the service, the replica's slot and the revision it runs. */
  replica?: { serviceId: string; slot: number; revision: number };
}) {
  const { input, spec } = p;
  return {
    id: spec.id,
    tenant: p.tenantId,
    project: p.projectId,
    queue: p.queueId,
    submittedBy: p.userId,
    name: input.name,
    priorityClass: input.priorityClass,
    podSets: input.podSets,
    expectedDurationMs: input.expectedDurationMs ?? null,
    maxRunMs: input.maxRunMs ?? null,
    checkpointIntervalMs: input.checkpoint?.intervalMs ?? null,
    checkpointResumable: input.checkpoint?.resumable ?? false,
    workload: input.workload ?? null,
    workloadType: input.workloadType ?? null,
    latencySensitive: input.latencySensitive ?? false,
    maxRetries: input.maxRetries ?? 0,
    disruptionCount: 0,
    workloadKind: input.workloadKind ?? 'BATCH',
    state: 'PENDING' as const,
    admission: null,
    idempotencyKey: input.idempotencyKey ?? null,
    requestHash: p.hash,
    submitTime: spec.submitTime,
    gpusRequested: totalGpus(spec),
    preemptionCount: 0,
    exitReason: null,
    admittedAt: null,
    startedAt: null,
    finishedAt: null,
    service: p.replica?.serviceId ?? null,
    replicaSlot: p.replica?.slot ?? null,
    serviceRevision: p.replica?.revision ?? null,
  };
}

/** What identifies a submission for idempotency: everything the caller chose. */
export function requestHash(input: SubmitJobInput, queueId: string): string {
  const canonical = JSON.stringify({
    queueId,
    projectId: input.projectId ?? null,
    name: input.name,
    priorityClass: input.priorityClass,
    podSets: input.podSets,
    expectedDurationMs: input.expectedDurationMs ?? null,
    maxRunMs: input.maxRunMs ?? null,
    workload: input.workload ?? null,
    // Only when declared: the hash of a job without checkpointing stays what it was before the field existed.
    ...checkpointOf(input),
    // Only when declared, as the checkpoint: hashes of jobs without the probe signals stay what they were.
    ...probeSignalsOf(input),
    ...(input.maxRetries ? { maxRetries: input.maxRetries } : {}),
    ...(input.workloadKind && input.workloadKind !== 'BATCH' ? { workloadKind: input.workloadKind } : {}),
  });
  return createHash('sha256').update(canonical).digest('hex');
}

/** The declared probe signals as hashed fields: none when undeclared (no type, not latency-sensitive). */
export function probeSignalsOf(input: Pick<SubmitJobInput, 'workloadType' | 'latencySensitive'>): {
  workloadType?: WorkloadType;
  latencySensitive?: true;
} {
  return {
    ...(input.workloadType ? { workloadType: input.workloadType } : {}),
    ...(input.latencySensitive ? { latencySensitive: true as const } : {}),
  };
}

/**
 * Submits a job. With an idempotency key, a retry of the same submission returns the job
 * the first attempt created; the same key with a different payload is a CONFLICT.
 */
export async function submitJob(ctx: ServiceContext, input: SubmitJobInput): Promise<JobView> {
  const principal = requirePrincipal(ctx);
  const target = await resolveTarget(ctx, ctx.em, input);
  const { queue, project } = target;
  const hash = requestHash(input, queue.id);
  if (input.idempotencyKey) {
    // Read with the target when it was (readSubmitRows), else on its own.
    const existing =
      target.existing === undefined
        ? await findByKey(ctx.em, queue.tenant.id, input.idempotencyKey)
        : target.existing && keyed(ctx.em, target.existing);
    if (existing) return sameOrConflict(existing, hash);
  }
  const spec = coreSpec(ctx, input, queue, project);
  const { id } = spec;
  try {
    ctx.scheduler.preview(spec);
  } catch (error) {
    schedulerInputError(error);
  }
  let job: JobView;
  try {
    // Group commit: submits that arrive while one is being written are written together (a multi-row INSERT
    // per table), each answered after the commit.
    job = await groupedAuditedMutation(
      ctx,
      { action: 'job.submit', input: submitAuditInput(input), tenantHint: queue.tenant.id },
      () => {
        const tenantId = queue.tenant.id;
        const at = ctx.now();
        const row = newJobRow(
          pendingJobFields({
            input,
            spec,
            tenantId,
            projectId: project.id,
            queueId: queue.id,
            userId: principal.userId,
            hash,
          }),
          at,
        );
        const event = jobEventRow(id, tenantId, 'SUBMITTED', at, null, `Submitted to queue ${queue.name}`);
        return {
          result: jobViewOf(row),
          tenantId,
          targetType: 'Job',
          targetId: id,
          rows: [
            ['Job', row],
            ['JobEvent', event],
          ],
        };
      },
    );
  } catch (error) {
    // Two retries raced with the same key: the loser answers with the winner's job.
    if (
      input.idempotencyKey &&
      (error instanceof UniqueConstraintViolationException ||
        (error as { code?: string }).code === 'CONFLICT')
    ) {
      const existing = await findByKey(ctx.em.fork(), queue.tenant.id, input.idempotencyKey);
      if (existing) return sameOrConflict(existing, hash);
    }
    throw error;
  }
  // On the leader the spec goes straight into the core; a follower tells the leader.
  ctx.scheduler.submitted(spec);
  // Its pending count changed: live views of the queue (queueUpdated) see the new job at once.
  ctx.events.publish('queue-updated', queue.id, { queueId: queue.id, at: ctx.now().getTime() });
  return job;
}

/** The job an earlier submit made under this key; only a job found is loaded as an entity. */
async function findByKey(
  em: EntityManager,
  tenantId: string,
  key: string,
): Promise<{ requestHash: string; job: () => Promise<Job | null> } | null> {
  const [found] = await jobsByIdempotencyKey(em, tenantId, [key]);
  return found ? keyed(em, found) : null;
}

function keyed(
  em: EntityManager,
  found: { id: string; requestHash: string },
): { requestHash: string; job: () => Promise<Job | null> } {
  return { requestHash: found.requestHash, job: () => em.findOne(Job, { id: found.id }) };
}

async function sameOrConflict(
  existing: { requestHash: string; job: () => Promise<Job | null> },
  hash: string,
): Promise<Job> {
  if (existing.requestHash !== hash) {
    throw conflict('This idempotency key was already used for a different job; use a new key for a new job.');
  }
  const job = await existing.job();
  if (!job) throw conflict('The job made under this idempotency key is being removed; retry.');
  return job;
}

/** Where would this job land now, would it borrow, whom would it preempt. Changes nothing. */
export async function previewJob(ctx: ServiceContext, input: SubmitJobInput): Promise<Preview> {
  const { queue, project } = await resolveTarget(ctx, ctx.em, input);
  try {
    return ctx.scheduler.preview(coreSpec(ctx, input, queue, project));
  } catch (error) {
    schedulerInputError(error);
  }
}

export async function cancelJob(ctx: ServiceContext, id: string): Promise<Job> {
  const job = await auditedMutation(ctx, { action: 'job.cancel', input: { id } }, async (em) => {
    // Locked (PostgreSQL): the leader's checkpoint must not charge the same open interval meanwhile.
    const found = await em.findOne(Job, { id }, { populate: ['queue'], ...ctx.scheduler.metering.jobLock });
    if (!found) throw notFound('Job');
    requireJobChanger(ctx, found);
    if (TERMINAL_JOB_STATES.has(found.state))
      throw conflict(`The job has already ${found.state.toLowerCase()}.`);
    await cancelJobRow(em, ctx.scheduler.metering, found, ctx.now(), {
      message: 'Cancelled',
      exitReason: 'cancelled by user',
    });
    await em.flush();
    return { result: found, tenantId: found.tenant.id, targetType: 'Job', targetId: found.id };
  });
  ctx.scheduler.announce({ kind: 'cancelled', jobId: job.id });
  ctx.events.publish('queue-updated', job.queue.id, { queueId: job.queue.id, at: ctx.now().getTime() });
  return job;
}

/**
 * Cancels a job that has not ended, in the caller's transaction (not flushed): charged up to now,
 * CANCELLED with its event, and an outbox entry that stops its run. Announce `cancelled` after the
 * commit so the leader's core forgets it.
 */
export async function cancelJobRow(
  em: EntityManager,
  metering: Pick<Metering, 'charge'>,
  job: Job,
  now: Date,
  why: { message: string; exitReason: string },
): Promise<void> {
  // A running job is charged up to its cancel, with the cancel.
  await metering.charge(em, [job], now.getTime(), 'cancelled');
  job.state = 'CANCELLED';
  job.finishedAt = now;
  job.exitReason = why.exitReason;
  em.create(JobEvent, {
    job,
    tenant: job.tenant,
    type: 'CANCELLED',
    reason: null,
    message: why.message,
    data: null,
    at: now,
  });
  em.create(OutboxEntry, {
    kind: 'job.cancelled',
    payload: { jobId: job.id, queueId: job.queue.id, at: now.getTime() },
    performedAt: null,
  });
}

export async function getJob(ctx: ServiceContext, id: string): Promise<Job> {
  const job = await ctx.em.findOne(Job, { id });
  if (!job) throw notFound('Job');
  requireCapability(ctx, job.tenant.id, 'jobs:read', 'Job');
  return job;
}

/** A page of a tenant's jobs, as rows for display (job-rows.ts: no entity hydration). */
export async function listJobs(ctx: ServiceContext, filter: JobFilter, page: PageQuery): Promise<JobRow[]> {
  requireCapability(ctx, filter.tenantId, 'jobs:read', 'Tenant');
  if (filter.submittedAfter && filter.submittedBefore && filter.submittedAfter > filter.submittedBefore) {
    throw badInput('submittedAfter must be before submittedBefore.');
  }
  const { mine, ...rows } = filter;
  return readJobRows(ctx.em, mine ? { ...rows, submittedById: requirePrincipal(ctx).userId } : rows, page);
}

export async function listJobEvents(
  ctx: ServiceContext,
  jobId: string,
  page: PageQuery,
): Promise<JobEvent[]> {
  const job = await getJob(ctx, jobId);
  return findPage(ctx.em, JobEvent, { job: job.id }, page);
}

export async function listPriorityClasses(ctx: ServiceContext): Promise<PriorityClassRow[]> {
  requirePrincipal(ctx);
  return ctx.em.find(PriorityClassRow, {}, { orderBy: { value: 'desc' } });
}
