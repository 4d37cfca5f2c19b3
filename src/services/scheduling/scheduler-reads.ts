// The scheduler service's reads that go past the core: the figures /metrics reads from the database at
// scrape time, and the backend's word on whether it can run a workload kind as asked.
import type { MikroORM } from '@mikro-orm/core';
import type { ExecutionBackend, WorkloadKind, WorkloadRequest } from '../../backends/port.js';
import type { QueueStatus } from '../../core/scheduling/index.js';
import { Queue } from '../../persistence/cluster/index.js';
import { OutboxEntry } from '../../persistence/scheduling/index.js';
import { systemEntityManager } from '../../persistence/tenant-filter.js';
import type { SchedulerStats } from './scheduler-options.js';

/** A workload as the API describes it, for the backend's check (port.ts workloadProblem). */
export interface WorkloadCheck {
  workloadKind?: WorkloadKind | null;
  podSets: WorkloadRequest['podSets'];
  workload?: Record<string, unknown> | null;
  service?: boolean;
}

/** Why the backend cannot run this workload kind as asked (port.ts workloadProblem), or null. */
export async function workloadProblemOn(
  backend: ExecutionBackend,
  input: WorkloadCheck,
): Promise<string | null> {
  const kind = input.workloadKind ?? 'BATCH';
  if ((kind === 'BATCH' && !input.service) || !backend.workloadProblem) return null;
  const c = input.workload?.container as { command?: string[]; args?: string[] } | undefined;
  const container = c ? { command: c.command ?? [], args: c.args ?? [] } : null;
  return backend.workloadProblem({
    workloadKind: kind,
    podSets: input.podSets,
    container,
    service: input.service,
  });
}

/** The /metrics figures: each one read when it is scraped. */
export function schedulerStats(
  orm: MikroORM,
  isLeader: () => boolean,
  queueStatus: (name: string) => QueueStatus | null,
): SchedulerStats {
  const em = () => systemEntityManager(orm);
  return {
    isLeader,
    queueStatuses: async () =>
      (await em().find(Queue, {}, { fields: ['name'], orderBy: { name: 'asc' } }))
        .map(({ name }) => queueStatus(name))
        .filter((s): s is QueueStatus => s !== null),
    // Counted through the (performedAt, id) index.
    unperformedOutbox: () => em().count(OutboxEntry, { performedAt: null }),
    oldestUnperformedOutboxAt: async () => {
      // The oldest by id (uuidv7, time-ordered) through the (performedAt, id) index.
      const [oldest] = await em().find(
        OutboxEntry,
        { performedAt: null },
        { fields: ['createdAt'], orderBy: { id: 'asc' }, limit: 1 },
      );
      return oldest ? new Date(oldest.createdAt) : null;
    },
  };
}
