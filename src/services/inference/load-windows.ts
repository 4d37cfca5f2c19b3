// A service's readings tallied per hour (ServiceLoadWindow): its SLA is the share of readings whose
// p95 was within the objective; an interval without requests counts as within.
import type { EntityManager } from '@mikro-orm/core';
import type { ServiceLoadReading } from '../../backends/port.js';
import { type InferenceService, ServiceLoadWindow } from '../../persistence/inference/index.js';

const HOUR = 3_600_000;

export async function recordLoad(
  em: EntityManager,
  service: InferenceService,
  reading: ServiceLoadReading,
  ready: number,
  at: number,
): Promise<void> {
  const windowStart = new Date(Math.floor(at / HOUR) * HOUR);
  let row = await em.findOne(ServiceLoadWindow, { service: service.id, windowStart }, { filters: false });
  row ??= em.create(ServiceLoadWindow, {
    service,
    tenant: service.tenant,
    windowStart,
    readings: 0,
    withinObjective: 0,
    requests: 0,
    maxP95Ms: 0,
    sumP95Ms: 0,
    replicaReadings: 0,
  });
  const p95 = reading.p95Ms ?? 0;
  const objective = service.latencyObjectiveMs ?? null;
  row.readings += 1;
  if (objective === null || reading.requests === 0 || p95 <= objective) row.withinObjective += 1;
  row.requests += reading.requests;
  row.maxP95Ms = Math.max(row.maxP95Ms, p95);
  row.sumP95Ms += p95;
  row.replicaReadings += ready;
}
