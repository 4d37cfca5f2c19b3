import type { EntityManager } from '@mikro-orm/core';
import DataLoader from 'dataloader';
import { Job, type JobState, TERMINAL_JOB_STATES } from '../../persistence/jobs/index.js';
import { UsageRecord } from '../../persistence/metering/index.js';
import { Membership } from '../../persistence/tenancy/index.js';
import { badInput, notFound } from '../../shared/index.js';
import { requireCapability, type ServiceContext } from '../context.js';
import type { Loaders } from '../loaders.js';
import { usageScopeIfAllowed } from './access.js';
import { requireInTenant } from './usage.js';

/**
 * A job's charged time (its ledger rows) and the sacct-style history of finished jobs.
 * Ledger rows of every job in a response are read with one query (a DataLoader per request).
 */

const recordLoaders = new WeakMap<Loaders, DataLoader<string, UsageRecord[]>>();

/** The ledger rows of each job, oldest first; one loader per request (keyed by the request's loaders). */
export function usageRecordsLoader(
  ctx: Pick<ServiceContext, 'em' | 'loaders'>,
): DataLoader<string, UsageRecord[]> {
  let loader = recordLoaders.get(ctx.loaders);
  if (!loader) {
    const em: EntityManager = ctx.em;
    loader = new DataLoader<string, UsageRecord[]>(async (jobIds) => {
      const rows = await em.find(
        UsageRecord,
        { job: { $in: [...jobIds] } },
        { orderBy: { startedAt: 'asc', flavor: 'asc' } },
      );
      const byJob = new Map<string, UsageRecord[]>(jobIds.map((id) => [id, []]));
      for (const row of rows) byJob.get(row.job.id)?.push(row);
      return jobIds.map((id) => byJob.get(id) ?? []);
    });
    recordLoaders.set(ctx.loaders, loader);
  }
  return loader;
}

/** What the caller may see of one job's usage: null (nothing), or whether money too. */
export function jobUsageVisibility(
  ctx: ServiceContext,
  job: { tenant: { id: string }; submittedBy?: { id: string } | null },
): { money: boolean } | null {
  const scope = usageScopeIfAllowed(ctx, job.tenant.id);
  if (!scope) return null;
  // MEMBER and VIEWER: their own jobs only.
  if (scope.userId && job.submittedBy?.id !== scope.userId) return null;
  return { money: scope.money };
}

export interface JobUsageSummary {
  gpuHours: number;
  cost: number;
  efficiency: number | null;
}

export function summarize(records: readonly UsageRecord[]): JobUsageSummary {
  let gpu = 0;
  let cost = 0;
  let used = 0;
  let measured = 0;
  for (const r of records) {
    gpu += r.gpuSeconds;
    cost += r.cost;
    if (r.usedGpuSeconds != null) {
      used += r.usedGpuSeconds;
      measured += r.gpuSeconds;
    }
  }
  return { gpuHours: gpu / 3600, cost, efficiency: measured > 0 ? used / measured : null };
}

export interface JobHistoryFilter {
  tenantId: string;
  states?: JobState[] | null;
  finishedAfter?: Date | null;
  finishedBefore?: Date | null;
  projectId?: string | null;
  queueId?: string | null;
  /** A Member id of the tenant: that person's jobs. */
  memberId?: string | null;
  priorityClass?: string | null;
}

/** A keyset position in newest-finished-first order. */
export interface HistoryCursor {
  finishedAt: number;
  id: string;
}

export interface HistoryPage {
  after?: HistoryCursor;
  before?: HistoryCursor;
  limit: number;
  inverted: boolean;
}

/**
 * Finished jobs, newest finished first (ties by id), keyset-paged on (finishedAt, id).
 * Needs jobs:read in the tenant; the usage fields of each job follow the usage rules.
 */
export async function listJobHistory(
  ctx: ServiceContext,
  filter: JobHistoryFilter,
  page: HistoryPage,
): Promise<Job[]> {
  requireCapability(ctx, filter.tenantId, 'jobs:read', 'Tenant');
  const states = filter.states?.length ? filter.states : [...TERMINAL_JOB_STATES];
  const notTerminal = states.filter((s) => !TERMINAL_JOB_STATES.has(s));
  if (notTerminal.length)
    throw badInput(`History holds finished jobs only: ${notTerminal.join(', ')} is not a terminal state.`);
  if (filter.finishedAfter && filter.finishedBefore && filter.finishedAfter >= filter.finishedBefore)
    throw badInput('finishedAfter must be before finishedBefore.');
  const where: Record<string, unknown>[] = [
    { tenant: filter.tenantId },
    { state: { $in: states } },
    { finishedAt: { $ne: null } },
  ];
  // A project or queue of another tenant answers like one that does not exist.
  await requireInTenant(ctx.em, filter.tenantId, { projectId: filter.projectId, queueId: filter.queueId });
  if (filter.projectId) where.push({ project: filter.projectId });
  if (filter.queueId) where.push({ queue: filter.queueId });
  if (filter.priorityClass) where.push({ priorityClass: filter.priorityClass });
  if (filter.memberId) {
    const member = await ctx.em.findOne(Membership, { id: filter.memberId });
    if (!member || member.tenant.id !== filter.tenantId) throw notFound('Member');
    where.push({ submittedBy: member.user.id });
  }
  if (filter.finishedAfter) where.push({ finishedAt: { $gte: filter.finishedAfter } });
  if (filter.finishedBefore) where.push({ finishedAt: { $lt: filter.finishedBefore } });
  // Newest first: "after" a cursor is older; "before" it is newer.
  const older = (c: HistoryCursor) => ({
    $or: [
      { finishedAt: { $lt: new Date(c.finishedAt) } },
      { finishedAt: new Date(c.finishedAt), id: { $lt: c.id } },
    ],
  });
  const newer = (c: HistoryCursor) => ({
    $or: [
      { finishedAt: { $gt: new Date(c.finishedAt) } },
      { finishedAt: new Date(c.finishedAt), id: { $gt: c.id } },
    ],
  });
  if (page.after) where.push(older(page.after));
  if (page.before) where.push(newer(page.before));
  const direction = page.inverted ? 'asc' : 'desc';
  return ctx.em.find(Job, { $and: where } as never, {
    orderBy: [{ finishedAt: direction }, { id: direction }] as never,
    limit: page.limit,
  });
}
