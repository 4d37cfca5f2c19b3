import { createPubSub, type PubSub } from 'graphql-yoga';
import type { TypedEventTarget } from '@graphql-yoga/typed-event-target';

export type JobStateName = 'PENDING' | 'ADMITTED' | 'RUNNING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';

/** What happened to a tenant's job or quota, as the tenant may see it. */
export type TenantEventPayload =
  | { kind: 'ADMITTED'; jobId: string; queueId: string; at: number; borrowed: boolean }
  | {
      kind: 'PREEMPTED';
      jobId: string;
      queueId: string;
      at: number;
      reason: string;
      /** Only when the preempting job belongs to the same tenant. */
      preemptorJobId: string | null;
    }
  | { kind: 'QUOTA_CHANGED'; queueId: string; at: number }
  | { kind: 'WINDOW_CHANGED'; queueId: string; at: number }
  /** Admitted, but the backend has not got its pods running within its limit (a candidate for reclaim). */
  | { kind: 'ADMITTED_NOT_RUNNING'; jobId: string; queueId: string; at: number; message: string }
  /**
   * A budget threshold crossed (once per budget, month and threshold). The amounts are money:
   * the tenantEvents subscription blanks them (null) for callers who may not see money.
   */
  | {
      kind: 'BUDGET_ALERT';
      at: number;
      budgetId: string;
      /** Null for the tenant's own budget. */
      projectId: string | null;
      /** Percent of the monthly amount. */
      threshold: number;
      spent: number | null;
      limit: number | null;
      currency: string;
      /** 'YYYY-MM' (UTC). */
      period: string;
    };

/** Changes the scheduling leader must apply to its in-memory state (from any replica). */
export type SchedulerInput =
  | { kind: 'submitted'; jobId: string }
  | { kind: 'cancelled'; jobId: string }
  | { kind: 'config' }
  /** A budget changed: the leader recomputes its admission holds. */
  | { kind: 'budgets' };

/**
 * Typed topics. Payloads carry ids, not rows: each subscriber loads the row under its
 * own authorization, so an event never carries more than its receiver may see.
 */
export type FairwayTopics = {
  /** An audit event was committed in this tenant. */
  'audit-event': [tenantId: string, payload: { auditEventId: string }];
  /** A job's state changed. */
  'job-updated': [jobId: string, payload: { jobId: string; state: JobStateName; at: number }];
  'tenant-event': [tenantId: string, payload: TenantEventPayload];
  'queue-updated': [queueId: string, payload: { queueId: string; at: number }];
  /** Input for the scheduling leader. */
  'scheduler-input': [payload: SchedulerInput];
  /** The scheduler committed a cycle (or a job finished): positions may have moved. */
  'scheduler-state': [payload: { at: number }];
};

export type EventBus = PubSub<FairwayTopics>;

/** In memory by default; pass a Redis event target to share events across replicas. */
export function createEventBus(eventTarget?: TypedEventTarget<never>): EventBus {
  return createPubSub<FairwayTopics>(eventTarget ? { eventTarget: eventTarget as never } : undefined);
}
