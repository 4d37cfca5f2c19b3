// The rows a transaction writes for what happens after it: job events and outbox entries (performed
// by the scheduling leader's OutboxDispatcher once the transaction commits).
import type { EntityManager } from '@mikro-orm/core';
import { uuidv7 } from '../ids.js';
import { type Job, JobEvent, type JobEventType } from '../jobs/index.js';
import { OutboxEntry } from './entities.js';

export type OutboxKind =
  | 'job.admitted'
  | 'job.preempted'
  | 'job.requeued'
  | 'job.cancelled'
  | 'job.started'
  | 'job.finished'
  | 'job.not-running'
  /** Stopped by the cluster (eviction, drain, a lost node) and back to pending; the backend has stopped it. */
  | 'job.disrupted'
  /** A budget threshold crossed (src/services/metering/budget-holds.ts): a tenant event and its audit entry,
   * after commit.
   */
  | 'tenant.budget-alert';

/** Writes a job event in the caller's transaction. */
export function recordJobEvent(
  em: EntityManager,
  job: Job,
  type: JobEventType,
  at: Date,
  reason: string | null,
  message: string,
  data: Record<string, unknown> | null = null,
): void {
  em.create(JobEvent, { job, tenant: job.tenant, type, reason, message, data, at });
}

/** Writes a side effect to perform after the caller's transaction commits. */
export function recordOutbox(em: EntityManager, kind: OutboxKind, payload: Record<string, unknown>): void {
  em.create(OutboxEntry, { kind, payload, performedAt: null });
}

/** recordJobEvent's row for a bulk insert (bound-sql.ts insertRows), where no entity is loaded. */
export function jobEventRow(
  jobId: string,
  tenantId: string,
  type: JobEventType,
  at: Date,
  reason: string | null,
  message: string,
  data: Record<string, unknown> | null = null,
): Record<string, unknown> {
  return { id: uuidv7(), job: jobId, tenant: tenantId, type, reason, message, data, at };
}

/** recordOutbox's row for a bulk insert (bound-sql.ts insertRows). */
export function outboxRow(kind: OutboxKind, payload: Record<string, unknown>): Record<string, unknown> {
  return { id: uuidv7(), kind, payload, createdAt: new Date(), performedAt: null };
}
