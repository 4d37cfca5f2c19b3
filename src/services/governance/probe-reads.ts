// Reading a job's runtime probes: its stored samples (job_probe_samples) and the summary
// on the job. Probe figures are job metadata, like Job.gpuUtilization: whoever may read the job
// (jobs:read in its tenant) reads them; they say nothing of its content (container, data, env).

import type { EntityManager } from '@mikro-orm/core';
import DataLoader from 'dataloader';
import type { ProbeSample } from '../../core/governance/index.js';
import { allBound, placeholders, tableOf } from '../../persistence/bound-sql.js';
import type { JobView } from '../../persistence/jobs/index.js';
import { tenantScope } from '../../persistence/raw-reads.js';
import { badInput } from '../../shared/index.js';
import { requireCapability, type ServiceContext } from '../context.js';
import type { Loaders } from '../loaders.js';
import type { ProbeSummary } from './probes.js';

/** Most samples one Job.probes asks for (a day at the default one-minute interval). */
export const MAX_PROBE_SAMPLES = 1440;

const loaders = new WeakMap<Loaders, Map<number, DataLoader<string, ProbeSample[]>>>();

/**
 * The last `last` samples of each job, oldest first: one query for every job of a response (the
 * request's tenant filter applied by hand, as raw-reads.ts does).
 */
function samplesLoader(
  ctx: Pick<ServiceContext, 'em' | 'loaders'>,
  last: number,
): DataLoader<string, ProbeSample[]> {
  let byLast = loaders.get(ctx.loaders);
  if (!byLast) loaders.set(ctx.loaders, (byLast = new Map()));
  let loader = byLast.get(last);
  if (!loader) {
    const em: EntityManager = ctx.em;
    loader = new DataLoader<string, ProbeSample[]>(async (jobIds) => {
      const t = tableOf(em, 'JobProbeSample');
      const scope = tenantScope(em);
      const where = [`${t.column('job')} in ${placeholders(jobIds.length)}`, ...(scope ? [scope.sql] : [])];
      const rows = await allBound<{ job: string; at: number | string; gpu: number; memory: number | null }>(
        em,
        `select job, at, gpu, memory from (select ${t.column('job')} as job, ${t.column('at')} as at, ${t.column('gpuUtilization')} as gpu, ${t.column('memoryUtilization')} as memory, ` +
          `row_number() over (partition by ${t.column('job')} order by ${t.column('at')} desc, ${t.column('id')} desc) as rn from ${t.table} where ${where.join(' and ')}) ranked where rn <= ? order by job, at asc`,
        [...jobIds, ...(scope?.params ?? []), last],
      );
      const byJob = new Map<string, ProbeSample[]>(jobIds.map((id) => [id, []]));
      for (const r of rows)
        byJob.get(String(r.job))?.push({
          at: Number(r.at),
          gpuUtilization: Number(r.gpu),
          memoryUtilization: r.memory == null ? null : Number(r.memory),
        });
      return jobIds.map((id) => byJob.get(id) ?? []);
    });
    byLast.set(last, loader);
  }
  return loader;
}

/** The job's last `last` stored samples, oldest first. */
export async function jobProbes(
  ctx: ServiceContext,
  job: Pick<JobView, 'id' | 'tenant'>,
  last: number,
): Promise<ProbeSample[]> {
  if (!Number.isInteger(last) || last < 1 || last > MAX_PROBE_SAMPLES)
    throw badInput(`last must be a whole number from 1 to ${MAX_PROBE_SAMPLES}.`);
  requireCapability(ctx, job.tenant.id, 'jobs:read', 'Job');
  return samplesLoader(ctx, last).load(job.id);
}

/** The summary of the job's stored samples; null before the first. */
export function jobUtilization(
  ctx: ServiceContext,
  job: Pick<JobView, 'tenant' | 'probeSummary'>,
): ProbeSummary | null {
  requireCapability(ctx, job.tenant.id, 'jobs:read', 'Job');
  return job.probeSummary ?? null;
}
