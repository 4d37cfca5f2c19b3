import type { InferenceService } from '../../persistence/inference/index.js';
import { ServiceLoadWindow } from '../../persistence/inference/index.js';
import { UsageRecord } from '../../persistence/metering/index.js';
import type { ServiceContext } from '../context.js';

/** What a service's replicas were charged: replica-GPU-hours and cost from the ledger (each hold once). */
export async function serviceUsage(
  ctx: ServiceContext,
  service: InferenceService,
): Promise<{ gpuHours: number; cost: number; currency: string }> {
  const rows = await ctx.em.find(
    UsageRecord,
    { tenant: service.tenant.id, job: { service: service.id } },
    { fields: ['gpuSeconds', 'cost'] },
  );
  const row = {
    gpu: rows.reduce((n, r) => n + r.gpuSeconds, 0),
    cost: rows.reduce((n, r) => n + r.cost, 0),
  };
  return {
    gpuHours: Number(row?.gpu ?? 0) / 3600,
    cost: Number(row?.cost ?? 0),
    currency: ctx.currency ?? 'USD',
  };
}

/** The service's hourly load windows since `since`, oldest first. */
export async function serviceLoadWindows(
  ctx: ServiceContext,
  service: InferenceService,
  since: Date,
): Promise<ServiceLoadWindow[]> {
  return ctx.em.find(
    ServiceLoadWindow,
    { service: service.id, windowStart: { $gte: since } },
    { orderBy: { windowStart: 'asc' }, limit: 24 * 31 },
  );
}
