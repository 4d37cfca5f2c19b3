// A job's runs as the log readers see them: from its event history (core/logs/runs.ts), each made
// into the run the backend is asked about (port.ts BackendLogRun).
import type { EntityManager } from '@mikro-orm/core';
import type { BackendLogRun } from '../../backends/port.js';
import type { WorkloadType } from '../../core/governance/index.js';
import { type JobRun, runsOf } from '../../core/logs/index.js';
import { JobEvent, type JobView } from '../../persistence/jobs/index.js';
import { containerOf } from '../jobs/index.js';

const commandOf = (workload: Record<string, unknown> | null | undefined): string[] => {
  const c = containerOf(workload);
  return c ? [...c.command, ...c.args] : [];
};

const RUN_EVENTS = [
  'ADMITTED',
  'STARTED',
  'PREEMPTED',
  'DISRUPTED',
  'SUCCEEDED',
  'FAILED',
  'CANCELLED',
] as const;

/** The job's runs, oldest first (one query over its events). */
export async function jobRuns(em: EntityManager, job: JobView): Promise<JobRun[]> {
  const events = await em.find(
    JobEvent,
    { job: job.id, type: { $in: [...RUN_EVENTS] } },
    { orderBy: { id: 'asc' }, fields: ['type', 'at', 'message'] },
  );
  return runsOf(
    events.map((e) => ({ type: e.type, at: e.at.getTime(), message: e.message ?? null })),
    job.admission?.at ?? null,
  );
}

/** The run as the backend is asked about it. */
export function backendRun(job: JobView, run: JobRun): BackendLogRun {
  return {
    jobId: job.id,
    tenant: job.tenant.id,
    name: job.name,
    run: run.run,
    admissionAt: run.admissionAt,
    startedAt: run.startedAt,
    endedAt: run.endedAt,
    outcome: run.outcome,
    reason: run.reason,
    podSets: job.podSets.map((p) => ({ name: p.name, count: p.count, gpusPerPod: p.perPod.gpu ?? 0 })),
    expectedDurationMs: job.expectedDurationMs ?? null,
    checkpointIntervalMs: job.checkpointIntervalMs ?? null,
    workloadType: (job.workloadType as WorkloadType | null) ?? null,
    command: commandOf(job.workload),
  };
}

/** Every pod of the run, in pod-set order. */
export function podsOfRun(run: Pick<BackendLogRun, 'podSets'>): { podSet: string; index: number }[] {
  return run.podSets.flatMap((ps) =>
    Array.from({ length: ps.count }, (_, index) => ({ podSet: ps.name, index })),
  );
}
