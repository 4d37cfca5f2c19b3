import type { IsolationPolicy, LimitSetting } from '../../core/governance/index.js';
import { applyPolicy } from '../../core/governance/index.js';
import type {
  CheckpointSpec,
  CohortSpec,
  FlavorSpec,
  IsolationLevel,
  JobSpec,
  NodeSpec,
  PreemptionSpec,
  PriorityClass,
  QueueSpec,
} from '../../core/scheduling/index.js';
import type {
  ClusterNode,
  Cohort,
  Flavor,
  PriorityClassRow,
  Queue,
} from '../../persistence/cluster/index.js';
import type { Job } from '../../persistence/jobs/index.js';

/** Rows → the scheduler core's specs. Names are the core's keys; rows keep ids for the graph. */
export const flavorSpec = (f: Flavor): FlavorSpec => ({
  name: f.name,
  kind: f.kind,
  gpuModel: f.gpuModel ?? undefined,
  slicesPerGpu: f.slicesPerGpu ?? undefined,
  pricePerUnitHour: f.pricePerUnitHour,
});

export const nodeSpec = (
  n: ClusterNode,
  poolName: string,
  flavorName: string,
  dedicatedTenantId: string | null,
): NodeSpec => ({
  name: n.name,
  pool: poolName,
  flavor: flavorName,
  gpus: n.gpus,
  cpu: n.cpu,
  memory: n.memory,
  dedicatedTenant: dedicatedTenantId ?? undefined,
  unschedulable: n.unschedulable || undefined,
});

export const cohortSpec = (c: Cohort, parentName: string | null): CohortSpec => ({
  name: c.name,
  parent: parentName ?? undefined,
  quotas: c.quotas,
});

/**
 * `timeScale`: the minimum run before reclaim is declared time, the core's clock is the backend's (see `jobSpec`).
 * `governance`: a governed queue's policy and the coefficients in force (src/core/governance/library.ts governanceInForce);
 * its limits, isolation level and preemption come from them (applyPolicy), in declared time before scaling.
 * Without it (a queue outside governance) the spec is the queue as configured.
 */
export function queueSpec(
  q: Queue,
  cohortName: string | null,
  timeScale = 1,
  governance?: { policy: IsolationPolicy; setting: LimitSetting } | null,
): QueueSpec {
  const configured: QueueSpec = {
    name: q.name,
    tenant: q.tenant.id,
    cohort: cohortName ?? undefined,
    quotas: q.quotas,
    weight: q.weight,
    queueingStrategy: q.queueingStrategy,
    preemption: q.preemption,
    isolation: (q.isolationLevel as IsolationLevel | null) ?? undefined,
    timeWindows: q.timeWindows.length ? q.timeWindows : undefined,
    dedicatedPool: q.dedicatedPool ?? undefined,
  };
  const spec = governance ? applyPolicy(configured, governance.policy, governance.setting) : configured;
  return { ...spec, preemption: inBackendPreemption(spec.preemption as PreemptionSpec, timeScale) };
}

/** The preemption policy's durations (declared time) in the backend's clock. */
function inBackendPreemption(p: PreemptionSpec, timeScale: number): PreemptionSpec {
  if (
    timeScale === 1 ||
    !p ||
    (p.minRunBeforeReclaimMs === undefined && p.fairShareMaxLostRunMs === undefined)
  )
    return p;
  const out = { ...p };
  if (p.minRunBeforeReclaimMs !== undefined)
    out.minRunBeforeReclaimMs = Math.round(p.minRunBeforeReclaimMs / timeScale);
  if (p.fairShareMaxLostRunMs !== undefined)
    out.fairShareMaxLostRunMs = Math.round(p.fairShareMaxLostRunMs / timeScale);
  return out;
}

export const priorityClass = (p: PriorityClassRow): PriorityClass => ({
  name: p.name,
  value: p.value,
  preemptible: p.preemptible,
});

/** What a job's spec is made of: a stored entity, or a plain row (live-jobs.ts). */
export type JobSource = Pick<
  Job,
  | 'id'
  | 'priorityClass'
  | 'submitTime'
  | 'podSets'
  | 'expectedDurationMs'
  | 'maxRunMs'
  | 'checkpointIntervalMs'
  | 'checkpointResumable'
> & { tenant: { id: string }; project?: { id: string } | null };

/**
 * A job row → the core's spec. Durations are declared in the job's own time; the core reasons in
 * the backend's clock (expected ends, ETAs), so they are divided by the backend's `timeScale`
 * (a declared hour is one minute on the simulated cluster at 60). Pass `backend.timeScale`.
 */
export const jobSpec = (j: JobSource, queueName: string, timeScale = 1): JobSpec =>
  inBackendTime(
    {
      id: j.id,
      tenant: j.tenant.id,
      project: j.project?.id,
      queue: queueName,
      priorityClass: j.priorityClass,
      submitTime: j.submitTime,
      podSets: j.podSets,
      expectedDurationMs: j.expectedDurationMs ?? undefined,
      maxRunMs: j.maxRunMs ?? undefined,
      ...checkpointSpec(j),
    },
    timeScale,
  );

/** A job row's declared checkpointing as the core's field (none declared: no field at all). */
export function checkpointSpec(j: Pick<Job, 'checkpointIntervalMs' | 'checkpointResumable'>): {
  checkpoint?: CheckpointSpec;
} {
  const intervalMs = j.checkpointIntervalMs ?? undefined;
  const resumable = Boolean(j.checkpointResumable);
  if (intervalMs === undefined && !resumable) return {};
  return {
    checkpoint: {
      ...(intervalMs !== undefined ? { intervalMs } : {}),
      ...(resumable ? { resumable: true } : {}),
    },
  };
}

/** A spec with durations in declared time → the same spec with durations in the backend's clock. */
export function inBackendTime(spec: JobSpec, timeScale: number): JobSpec {
  if (timeScale === 1) return spec;
  const scaledSpec: JobSpec = {
    ...spec,
    expectedDurationMs: scaled(spec.expectedDurationMs, timeScale),
    maxRunMs: scaled(spec.maxRunMs, timeScale),
  };
  // The checkpoint interval is a duration too (the core measures work lost in the backend's clock).
  if (spec.checkpoint?.intervalMs !== undefined)
    scaledSpec.checkpoint = {
      ...spec.checkpoint,
      intervalMs: Math.max(1, Math.round(spec.checkpoint.intervalMs / timeScale)),
    };
  return scaledSpec;
}

function scaled(ms: number | null | undefined, timeScale: number): number | undefined {
  if (ms === null || ms === undefined) return undefined;
  return timeScale === 1 ? ms : Math.round(ms / timeScale);
}

export function totalGpus(spec: Pick<JobSpec, 'podSets'>): number {
  return spec.podSets.reduce((sum, ps) => sum + ps.count * (ps.perPod.gpu ?? 0), 0);
}
