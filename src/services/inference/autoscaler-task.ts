// The leader's autoscaler: every interval it reads each service's signal, decides its replicas
// (core decideReplicas) and writes the replica plan in one fenced transaction per service; the
// scheduler admits the replica jobs by the same fair-share rules as any job. A decision that moves
// something, or that gets fewer replicas than it asked for, is a scaling event with its numbers.
import type { ExecutionBackend, ServiceLoadReading } from '../../backends/port.js';
import { decideReplicas, replicaCounts, type ScalingDecision } from '../../core/inference/index.js';
import { InferenceService, ServiceScalingEvent } from '../../persistence/inference/index.js';
import type { LeaderTask, LeaderTaskContext, SchedulerService } from '../scheduling/index.js';
import { recordLoad } from './load-windows.js';
import { asReplica, liveReplicaJobs, type WrittenPlan, writeReplicaPlan } from './replica-jobs.js';
import { defaultTraffic, scalingRules } from './service-input.js';

export interface AutoscalerTaskOptions {
  intervalMs: number;
  backend: Pick<ExecutionBackend, 'serviceLoad'>;
  /** The scheduler the task's writes are announced to (created after the task list). */
  scheduler: () => Pick<SchedulerService, 'metering' | 'submitted' | 'announce'>;
}

/** Services read per page: a run decides every service, a page of ids at a time. */
const PAGE = 500;

export function inferenceAutoscalerTask(options: AutoscalerTaskOptions, pageSize = PAGE): LeaderTask {
  return {
    name: 'inference-autoscaler',
    everyMs: () => options.intervalMs,
    run: async (ctx) => {
      let after: string | null = null;
      for (;;) {
        const page: { id: string }[] = await ctx
          .em()
          .find(InferenceService, after === null ? {} : { id: { $gt: after } }, {
            fields: ['id'],
            orderBy: { id: 'asc' },
            limit: pageSize,
            filters: false,
          });
        for (const { id } of page) {
          if (ctx.ended()) return;
          await autoscaleService(ctx, options, id);
        }
        if (page.length < pageSize) return;
        after = page.at(-1)!.id;
      }
    },
  };
}

/** The signal's value in a reading (null: none this interval). */
function signalValue(service: InferenceService, reading: ServiceLoadReading | null): number | null {
  if (!reading) return null;
  switch (service.scaling.signal) {
    case 'IN_FLIGHT':
      return reading.inFlight;
    case 'REQUESTS_PER_SECOND':
      return reading.rps;
    case 'P95_LATENCY_MS':
      return reading.p95Ms;
    case 'GPU_UTILIZATION':
      return reading.gpuUtilization;
  }
}

/** One service's decision and its plan, fenced; announced after the commit. */
export async function autoscaleService(
  ctx: LeaderTaskContext,
  options: AutoscalerTaskOptions,
  id: string,
): Promise<void> {
  const scheduler = options.scheduler();
  const at = ctx.now;
  const before = await ctx.em().findOne(InferenceService, { id }, { filters: false });
  if (!before) return;
  const liveBefore = await liveReplicaJobs(ctx.em(), id);
  const interval = options.intervalMs;
  const reading =
    before.state === 'ACTIVE' && options.backend.serviceLoad
      ? await options.backend.serviceLoad({
          serviceId: id,
          tenant: before.tenant.id,
          name: before.name,
          replicaJobIds: liveBefore.map((j) => j.id),
          sinceMs: at - interval,
          at,
          model: before.traffic ?? defaultTraffic(id),
        })
      : null;
  if (ctx.ended()) return;
  let written: WrittenPlan | null = null;
  let changed = false;
  await ctx.write(async (em) => {
    const service = await em.findOne(
      InferenceService,
      { id },
      { populate: ['queue', 'project'], refresh: true, filters: false, ...scheduler.metering.jobLock },
    );
    if (!service) return;
    const live = await liveReplicaJobs(em, id);
    const counts = replicaCounts(live.map(asReplica));
    const ready = reading?.ready ?? counts.ready;
    const from = service.desiredReplicas;
    const value = signalValue(service, reading);
    let decision: ScalingDecision | null = null;
    if (service.state === 'ACTIVE') {
      // The scheduler's view too: no scale-up while fewer replicas are admitted than were asked for.
      decision = decideReplicas(
        scalingRules(service),
        service.memory,
        from,
        ready,
        { at, value, requests: reading?.requests ?? 0, sinceMs: at - interval },
        { admitted: counts.admitted, whyNotMore: service.lastDecision?.whyNotMore ?? null },
      );
      service.desiredReplicas = decision.desired;
      service.memory = decision.memory;
    }
    const minimum = decision?.minimum ?? 0;
    written = await writeReplicaPlan(
      em,
      service,
      minimum,
      { now: new Date(at), metering: scheduler.metering },
      live,
    );
    if (service.state === 'DELETING') {
      // Its last replicas are cancelled in this transaction: the service goes with them.
      em.remove(service);
      changed = true;
      return;
    }
    if (!decision) return;
    const whyNotMore = pendingReason(ctx, live, counts.admitted, decision.desired);
    const last = service.lastDecision;
    changed =
      from !== decision.desired ||
      decision.coldStart ||
      written.submitted.length > 0 ||
      written.cancelled.length > 0 ||
      last?.admitted !== counts.admitted ||
      last?.ready !== ready ||
      (last?.whyNotMore ?? null) !== whyNotMore;
    service.lastDecision = {
      at,
      signalValue: value,
      desired: decision.desired,
      recommended: decision.recommended,
      minimum: decision.minimum,
      reason: decision.reason,
      coldStart: decision.coldStart,
      admitted: counts.admitted,
      ready,
      whyNotMore,
    };
    if (reading) await recordLoad(em, service, reading, ready, at);
    if (changed)
      em.create(ServiceScalingEvent, {
        service,
        tenant: service.tenant,
        at: new Date(at),
        signal: service.scaling.signal,
        signalValue: value,
        target: service.scaling.target,
        recommended: decision.recommended,
        minimum: decision.minimum,
        fromReplicas: from,
        desired: decision.desired,
        admitted: counts.admitted,
        ready,
        reason: decision.reason.slice(0, 500),
        whyNotMore: whyNotMore?.slice(0, 500) ?? null,
        coldStart: decision.coldStart,
      });
  });
  if (ctx.ended()) return;
  const plan = written as WrittenPlan | null;
  for (const spec of plan?.submitted ?? []) scheduler.submitted(spec);
  for (const jobId of plan?.cancelled ?? []) scheduler.announce({ kind: 'cancelled', jobId });
  if (changed) ctx.events.publish('service-updated', id, { serviceId: id, at });
}

/** Why fewer replicas are admitted than desired: the first pending replica's reason, in the core's words. */
function pendingReason(
  ctx: Pick<LeaderTaskContext, 'core'>,
  live: readonly { id: string; state: string }[],
  admitted: number,
  desired: number,
): string | null {
  if (admitted >= desired) return null;
  for (const job of live) {
    if (job.state !== 'PENDING') continue;
    try {
      const why = ctx.core.explain(job.id);
      if (why.message) return why.message;
    } catch {
      // Not in the core yet (submitted this run): the next run explains it.
    }
  }
  return null;
}
