// A service's replicas as jobs: read the live ones, plan (core planReplicas) and write the plan in
// the caller's transaction — new replica jobs pending like any submission, cancelled ones charged
// and stopped like a cancel. The caller hands the result to the scheduler after its commit.
import type { EntityManager } from '@mikro-orm/core';
import { planReplicas, type ReplicaJob, type ReplicaPlan } from '../../core/inference/index.js';
import type { JobSpec } from '../../core/scheduling/index.js';
import type { InferenceService } from '../../persistence/inference/index.js';
import { Job, JobEvent } from '../../persistence/jobs/index.js';
import { cancelJobRow, coreSpec, pendingJobFields, requestHash, type SubmitJobInput } from '../jobs/index.js';
import type { Metering } from '../metering/index.js';

const LIVE = ['PENDING', 'ADMITTED', 'RUNNING'] as const;

/** The replica jobs of a service that have not ended, oldest first. */
export async function liveReplicaJobs(em: EntityManager, serviceId: string): Promise<Job[]> {
  // Without an id the filter would match every job of every tenant.
  if (!serviceId) throw new Error('liveReplicaJobs: a service id is required');
  return em.find(
    Job,
    { service: serviceId, state: { $in: [...LIVE] } },
    { orderBy: { submitTime: 'asc', id: 'asc' }, filters: false },
  );
}

export const asReplica = (j: Job): ReplicaJob => ({
  jobId: j.id,
  slot: j.replicaSlot ?? 0,
  state: j.state as ReplicaJob['state'],
  priorityClass: j.priorityClass,
  revision: j.serviceRevision ?? 0,
  submitTime: j.submitTime,
});

/** What a replica job is made of: the service's spec, where it runs and its revision. */
export interface ReplicaShape {
  id: string;
  name: string;
  container: InferenceService['container'];
  port: number;
  replica: InferenceService['replica'];
  revision: number;
  queueId: string;
  projectId: string;
}

export const shapeOf = (s: InferenceService): ReplicaShape => ({
  id: s.id,
  name: s.name,
  container: s.container,
  port: s.port,
  replica: s.replica,
  revision: s.revision,
  queueId: s.queue.id,
  projectId: s.project.id,
});

/** The job a replica of this slot is: the service's pods and container, no end of its own. */
export function replicaJobInput(shape: ReplicaShape, slot: number, priorityClass: string): SubmitJobInput {
  const { container } = shape;
  return {
    queueId: shape.queueId,
    projectId: shape.projectId,
    name: `${shape.name}-${slot}`,
    priorityClass,
    podSets: [{ ...shape.replica, name: 'replica' }],
    workloadType: 'ONLINE_INFERENCE',
    latencySensitive: true,
    workload: {
      container: { ...container, datasets: [], artifactStore: null },
      service: { id: shape.id, name: shape.name, port: shape.port, slot, revision: shape.revision },
    },
  };
}

export interface WrittenPlan {
  plan: ReplicaPlan;
  /** Specs of the replica jobs written, for the core after the commit. */
  submitted: JobSpec[];
  /** Jobs cancelled, to announce after the commit. */
  cancelled: string[];
}

export interface PlanDeps {
  now: Date;
  metering: Pick<Metering, 'charge'>;
}

/** Plans the service's replicas (its queue loaded) against its desired count and writes the plan (not flushed). */
export async function writeReplicaPlan(
  em: EntityManager,
  service: InferenceService,
  minimum: number,
  deps: PlanDeps,
  live?: Job[],
): Promise<WrittenPlan> {
  const jobs = live ?? (await liveReplicaJobs(em, service.id));
  const plan = planReplicas({
    desired: service.state === 'ACTIVE' ? service.desiredReplicas : 0,
    minimum,
    revision: service.revision,
    classes: { guaranteed: service.guaranteedClass, burst: service.burstClass },
    maxSurge: service.maxSurge,
    replicas: jobs.map(asReplica),
  });
  const submitted: JobSpec[] = [];
  for (const s of plan.submit) {
    const input = replicaJobInput(shapeOf(service), s.slot, s.priorityClass);
    // The service's queue is loaded with it (loadService), so its name is the core's queue.
    const spec = coreSpec({ now: () => deps.now }, input, service.queue, service.project);
    const job = em.create(Job, {
      ...pendingJobFields({
        input,
        spec,
        tenantId: service.tenant.id,
        projectId: service.project.id,
        queueId: service.queue.id,
        userId: service.createdBy?.id ?? null,
        hash: requestHash(input, service.queue.id),
        replica: { serviceId: service.id, slot: s.slot, revision: service.revision },
      }),
      // The entity, not its id: a service created in this transaction is inserted before its replicas.
      service,
    });
    em.create(JobEvent, {
      job,
      tenant: job.tenant,
      type: 'SUBMITTED',
      reason: 'replica',
      message: `Replica ${s.slot} of service ${service.name} (${s.priorityClass}${s.replaces ? ', replacing an older replica' : ''})`,
      data: { serviceId: service.id, slot: s.slot, revision: service.revision },
      at: deps.now,
    });
    submitted.push(spec);
  }
  const byId = new Map(jobs.map((j) => [j.id, j]));
  const cancelled: string[] = [];
  for (const c of plan.cancel) {
    const job = byId.get(c.jobId);
    if (!job) continue;
    const why =
      c.reason === 'scale-down'
        ? 'scaled down'
        : c.reason === 'replaced'
          ? 'replaced by a replica of the current revision and class'
          : 'a second replica of the same slot';
    await cancelJobRow(em, deps.metering, job, deps.now, {
      message: `Replica ${c.slot} of service ${service.name}: ${why}`,
      exitReason: `inference service: ${why}`,
    });
    cancelled.push(job.id);
  }
  return { plan, submitted, cancelled };
}
