// Inference services' use cases: create, update (a spec change rolls the replicas), scale bounds,
// delete, read, list and preview. Rights are a job's: contributors of the project create, the
// creator and the project's admins change; the replicas pass the same submit policy (grants,
// data boundaries) as a job of their class. Each write plans the replicas in its transaction.
import type { EntityManager } from '@mikro-orm/core';
import { minimumAt, replicaCounts } from '../../core/inference/index.js';
import type { JobSpec, Preview } from '../../core/scheduling/index.js';
import { PriorityClassRow, type Queue } from '../../persistence/cluster/index.js';
import { uuidv7 } from '../../persistence/ids.js';
import { InferenceService, ServiceScalingEvent } from '../../persistence/inference/index.js';
import { badInput, conflict, notFound } from '../../shared/index.js';
import { auditedMutation } from '../audit/index.js';
import { requireCapability, requirePrincipal, type ServiceContext } from '../context.js';
import { schedulerInputError } from '../errors.js';
import { coreSpec, resolveTarget, type SubmitJobInput } from '../jobs/index.js';
import { findPage, type PageQuery } from '../paging.js';
import { requireJobChanger } from '../tenancy/index.js';
import {
  asReplica,
  liveReplicaJobs,
  replicaJobInput,
  shapeOf,
  type WrittenPlan,
  writeReplicaPlan,
} from './replica-jobs.js';
import {
  type CreateServiceInput,
  checkBounds,
  checkCreate,
  checkRest,
  checkScaling,
  checkSpec,
  scalingRules,
  type UpdateServiceInput,
} from './service-input.js';

/** The replicas a new or rescaled service starts from: its minimum now, one at least unless it may sleep. */
function initialDesired(
  s: Pick<InferenceService, 'minReplicas' | 'maxReplicas' | 'minimumWindows' | 'scaling'>,
  at: number,
) {
  const minimum = Math.min(minimumAt(s, at), s.maxReplicas);
  return s.scaling.scaleToZeroAfterMs !== null ? minimum : Math.max(minimum, 1);
}

/** The classes must do what their slots promise: one never preempted, one that yields. */
async function checkClasses(em: EntityManager, guaranteed: string, burst: string): Promise<void> {
  const rows = await em.find(PriorityClassRow, { name: { $in: [guaranteed, burst] } });
  const of = (name: string) => rows.find((r) => r.name === name);
  const g = of(guaranteed);
  const b = of(burst);
  if (!g) throw badInput(`Unknown priority class "${guaranteed}".`, { field: 'guaranteedClass' });
  if (!b) throw badInput(`Unknown priority class "${burst}".`, { field: 'burstClass' });
  if (g.preemptible !== 'no')
    throw badInput(`The guaranteed class must never be preempted; "${guaranteed}" can be.`, {
      field: 'guaranteedClass',
    });
  if (b.preemptible === 'no')
    throw badInput(`The burst class must yield to lenders; "${burst}" is never preempted.`, {
      field: 'burstClass',
    });
}

/** Checks the caller may run replicas of each class the bounds use (the submit policy of jobs). */
async function resolveReplicaTarget(ctx: ServiceContext, input: CreateServiceInput) {
  const shape = {
    id: 'new',
    name: input.name,
    container: input.container,
    port: input.port,
    replica: input.replica,
    revision: 1,
    queueId: input.queueId ?? '',
    projectId: input.projectId ?? '',
  };
  const asJob = (cls: string) => ({
    ...replicaJobInput(shape, 0, cls),
    queueId: input.queueId ?? null,
    projectId: input.projectId ?? null,
  });
  const guaranteedUsed = input.minReplicas > 0 || input.minimumWindows.some((w) => w.minReplicas > 0);
  // Managed entities: the service's rows are created with the queue and project as their relations.
  const target = await resolveTarget(
    ctx,
    ctx.em,
    asJob(guaranteedUsed ? input.guaranteedClass : input.burstClass),
    { managed: true },
  );
  if (guaranteedUsed && input.maxReplicas > input.minReplicas)
    await resolveTarget(ctx, ctx.em, {
      ...asJob(input.burstClass),
      queueId: target.queue.id,
      projectId: target.project.id,
    });
  return target;
}

function announce(ctx: ServiceContext, serviceId: string, written: WrittenPlan | null): void {
  for (const spec of written?.submitted ?? []) ctx.scheduler.submitted(spec);
  for (const jobId of written?.cancelled ?? []) ctx.scheduler.announce({ kind: 'cancelled', jobId });
  ctx.events.publish('service-updated', serviceId, { serviceId, at: ctx.now().getTime() });
}

const auditInput = (input: CreateServiceInput | UpdateServiceInput) => ({
  ...input,
  // Values of environment variables never reach the audit log.
  ...(input.container
    ? { container: { ...input.container, env: input.container.env.map((e) => e.name) } }
    : {}),
});

/** Whether the backend can run such a replica (a replica of several hosts needs a LeaderWorkerSet on Kubernetes). */
async function checkRunnable(ctx: ServiceContext, replica: CreateServiceInput['replica']): Promise<void> {
  const problem = await ctx.scheduler.workloadProblem({ podSets: [replica], service: true });
  if (problem) throw badInput(problem, { field: 'replica.count' });
}

export async function createService(
  ctx: ServiceContext,
  input: CreateServiceInput,
): Promise<InferenceService> {
  const principal = requirePrincipal(ctx);
  checkCreate(input);
  await checkRunnable(ctx, input.replica);
  const { queue, project } = await resolveReplicaTarget(ctx, input);
  await checkClasses(ctx.em, input.guaranteedClass, input.burstClass);
  if (await ctx.em.count(InferenceService, { tenant: queue.tenant.id, name: input.name }))
    throw conflict(`A service named "${input.name}" exists in this tenant.`);
  const now = ctx.now();
  const { service, written } = await auditedMutation(
    ctx,
    { action: 'inferenceService.create', input: auditInput(input) },
    async (em) => {
      // The id now, not at flush: the replicas below point at the service before it is written.
      const service = em.create(InferenceService, {
        id: uuidv7(),
        tenant: queue.tenant,
        project,
        queue,
        createdBy: principal.userId,
        name: input.name,
        container: input.container,
        port: input.port,
        replica: input.replica,
        minReplicas: input.minReplicas,
        maxReplicas: input.maxReplicas,
        minimumWindows: input.minimumWindows,
        scaling: input.scaling,
        latencyObjectiveMs: input.latencyObjectiveMs,
        maxSurge: input.maxSurge,
        guaranteedClass: input.guaranteedClass,
        burstClass: input.burstClass,
        revision: 1,
        desiredReplicas: 0,
        memory: { recent: [], lastRequestAt: null },
        lastDecision: null,
        traffic: input.traffic,
        state: 'ACTIVE',
      });
      service.desiredReplicas = initialDesired(service, now.getTime());
      // A new service has no replicas yet.
      const written = await writeReplicaPlan(
        em,
        service,
        minimumAt(scalingRules(service), now.getTime()),
        { now, metering: ctx.scheduler.metering },
        [],
      );
      return {
        result: { service, written },
        tenantId: queue.tenant.id,
        targetType: 'InferenceService',
        targetId: service.id,
      };
    },
  );
  announce(ctx, service.id, written);
  return service;
}

async function loadForChange(ctx: ServiceContext, em: EntityManager, id: string): Promise<InferenceService> {
  const service = await em.findOne(
    InferenceService,
    { id },
    { populate: ['queue', 'project'], ...ctx.scheduler.metering.jobLock },
  );
  if (!service) throw notFound('InferenceService');
  requireJobChanger(ctx, {
    tenant: service.tenant,
    project: service.project,
    submittedBy: service.createdBy,
  });
  if (service.state !== 'ACTIVE') throw conflict('The service is being deleted.');
  return service;
}

/** Changes a service; a change of what replicas run (container, port, pods) rolls them within quota. */
export async function updateService(
  ctx: ServiceContext,
  id: string,
  patch: UpdateServiceInput,
  action = 'inferenceService.update',
): Promise<InferenceService> {
  const now = ctx.now();
  const { service, written } = await auditedMutation(
    ctx,
    { action, input: { id, ...auditInput(patch) } },
    async (em) => {
      const service = await loadForChange(ctx, em, id);
      if (patch.replica) await checkRunnable(ctx, patch.replica);
      const spec = {
        container: patch.container ?? service.container,
        port: patch.port ?? service.port,
        replica: patch.replica ?? service.replica,
      };
      const scaling = { ...service.scaling, ...patch.scaling };
      const bounds = {
        minReplicas: patch.minReplicas ?? service.minReplicas,
        maxReplicas: patch.maxReplicas ?? service.maxReplicas,
        minimumWindows: patch.minimumWindows ?? service.minimumWindows,
      };
      checkSpec(spec);
      checkScaling(scaling);
      checkBounds(bounds, scaling);
      const rest = {
        latencyObjectiveMs:
          patch.latencyObjectiveMs !== undefined
            ? patch.latencyObjectiveMs
            : (service.latencyObjectiveMs ?? null),
        maxSurge: patch.maxSurge ?? service.maxSurge,
        traffic: patch.traffic !== undefined ? patch.traffic : (service.traffic ?? null),
      };
      checkRest(rest);
      if (patch.replica && JSON.stringify(patch.replica.perPod) !== JSON.stringify(service.replica.perPod)) {
        // A different replica size must pass the scheduler's checks as a job would.
        try {
          ctx.scheduler.preview(
            coreSpec(
              ctx,
              replicaJobInput({ ...shapeOf(service), replica: spec.replica }, 0, service.burstClass),
              service.queue,
              service.project,
            ),
          );
        } catch (error) {
          schedulerInputError(error);
        }
      }
      const rolls =
        JSON.stringify([spec.container, spec.port, spec.replica]) !==
        JSON.stringify([service.container, service.port, service.replica]);
      Object.assign(service, spec, bounds, rest, { scaling });
      if (rolls) service.revision += 1;
      const at = now.getTime();
      // The bounds apply at once; the autoscaler moves within them from its next reading.
      const minimum = Math.min(minimumAt(scalingRules(service), at), service.maxReplicas);
      service.desiredReplicas = Math.max(minimum, Math.min(service.maxReplicas, service.desiredReplicas));
      const written = await writeReplicaPlan(em, service, minimum, { now, metering: ctx.scheduler.metering });
      return {
        result: { service, written },
        tenantId: service.tenant.id,
        targetType: 'InferenceService',
        targetId: id,
      };
    },
  );
  announce(ctx, service.id, written);
  return service;
}

export function scaleService(
  ctx: ServiceContext,
  id: string,
  bounds: { minReplicas?: number | null; maxReplicas?: number | null },
): Promise<InferenceService> {
  return updateService(
    ctx,
    id,
    {
      ...(bounds.minReplicas != null ? { minReplicas: bounds.minReplicas } : {}),
      ...(bounds.maxReplicas != null ? { maxReplicas: bounds.maxReplicas } : {}),
    },
    'inferenceService.scale',
  );
}

/** Deletes a service: its replicas are cancelled (charged to now) and the service goes with them. */
export async function deleteService(ctx: ServiceContext, id: string): Promise<string> {
  const now = ctx.now();
  const written = await auditedMutation(
    ctx,
    { action: 'inferenceService.delete', input: { id } },
    async (em) => {
      const service = await loadForChange(ctx, em, id);
      service.state = 'DELETING';
      const written = await writeReplicaPlan(em, service, 0, { now, metering: ctx.scheduler.metering });
      em.remove(service);
      return { result: written, tenantId: service.tenant.id, targetType: 'InferenceService', targetId: id };
    },
  );
  announce(ctx, id, written);
  return id;
}

export async function getService(ctx: ServiceContext, id: string): Promise<InferenceService> {
  const service = await ctx.em.findOne(InferenceService, { id });
  if (!service) throw notFound('InferenceService');
  requireCapability(ctx, service.tenant.id, 'jobs:read', 'InferenceService');
  return service;
}

export async function listServices(
  ctx: ServiceContext,
  tenantId: string,
  page: PageQuery,
): Promise<InferenceService[]> {
  requireCapability(ctx, tenantId, 'jobs:read', 'Tenant');
  return findPage(ctx.em, InferenceService, { tenant: tenantId }, page);
}

export async function listScalingEvents(
  ctx: ServiceContext,
  serviceId: string,
  page: PageQuery,
): Promise<ServiceScalingEvent[]> {
  const service = await getService(ctx, serviceId);
  return findPage(ctx.em, ServiceScalingEvent, { service: service.id }, page);
}

export interface ServicePreviewPart {
  preview: Preview;
  /** The part as the job previewed (its pods: the part's replicas × pods per replica). */
  submit: SubmitJobInput;
  queue: Queue;
}

export interface ServicePreview {
  replicas: number;
  /** The minimum part (guaranteed class) and the rest (burst class), each as one all-or-nothing ask. */
  guaranteed: ServicePreviewPart | null;
  burst: ServicePreviewPart | null;
}

/**
 * Would `replicas` replicas of this service fit now: the guaranteed part (up to the minimum in force) and
 * the burst part, each previewed as one gang of its replicas' pods beside what runs. Changes nothing.
 */
export async function previewService(
  ctx: ServiceContext,
  input: CreateServiceInput,
  replicas: number,
): Promise<ServicePreview> {
  checkCreate(input);
  if (!Number.isInteger(replicas) || replicas < 1 || replicas > input.maxReplicas)
    throw badInput(`Preview 1 to maxReplicas (${input.maxReplicas}) replicas.`, { field: 'replicas' });
  const { queue, project } = await resolveReplicaTarget(ctx, input);
  await checkClasses(ctx.em, input.guaranteedClass, input.burstClass);
  const minimum = Math.min(minimumAt(input, ctx.now().getTime()), replicas);
  const part = (count: number, cls: string): ServicePreviewPart | null => {
    if (count === 0) return null;
    const job = replicaJobInput(
      {
        id: 'preview',
        name: input.name,
        container: input.container,
        port: input.port,
        replica: input.replica,
        revision: 1,
        queueId: queue.id,
        projectId: project.id,
      },
      0,
      cls,
    );
    const submit = {
      ...job,
      podSets: [{ ...input.replica, name: 'replica', count: input.replica.count * count }],
    };
    const spec: JobSpec = coreSpec(ctx, submit, queue, project);
    try {
      return { preview: ctx.scheduler.preview(spec), submit, queue };
    } catch (error) {
      schedulerInputError(error);
    }
  };
  return {
    replicas,
    guaranteed: part(minimum, input.guaranteedClass),
    burst: part(replicas - minimum, input.burstClass),
  };
}

/** A service's replica counts now and the minimum in force. */
export async function serviceReplicas(ctx: ServiceContext, service: InferenceService) {
  const counts = replicaCounts((await liveReplicaJobs(ctx.em, service.id)).map(asReplica));
  const minimum = Math.min(minimumAt(service, ctx.now().getTime()), service.maxReplicas);
  return { desired: service.desiredReplicas, minimum, ...counts };
}
