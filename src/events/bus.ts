import type { TypedEventTarget } from '@graphql-yoga/typed-event-target';
import { createPubSub, type PubSub } from 'graphql-yoga';
import type { JobFlag } from '../core/governance/index.js';

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
      /** Declared GPU-hours of the victim's work lost (since its last checkpoint); null when unknown. */
      lostGpuHours?: number | null;
      /** Governance reclaims ('idle', 'not-running'): the flag's sentence and the flag (declared durations)
       * behind it.
       */
      message?: string | null;
      flag?: JobFlag | null;
    }
  | { kind: 'QUOTA_CHANGED'; queueId: string; at: number }
  | { kind: 'WINDOW_CHANGED'; queueId: string; at: number }
  /** Governance: a quota request of the tenant was made or changed status (PENDING, APPROVED, ACTIVE,
   * EXPIRED, REJECTED, CANCELLED).
   */
  | { kind: 'QUOTA_REQUEST'; requestId: string; queueId: string; status: string; at: number }
  /** Governance: a job was flagged IDLE or NOT_RUNNING; `flag` is core/governance's JobFlag with its numbers. */
  | { kind: 'JOB_FLAGGED'; jobId: string; queueId: string; at: number; flag: JobFlag }
  /** Governance: the controller moved the queue's lending/borrowing coefficients (borrow null: unlimited). */
  | {
      kind: 'LIMITS_ADJUSTED';
      queueId: string;
      at: number;
      lend: number;
      borrow: number | null;
      reasons: string[];
    }
  /** Admitted, but the backend has not got its pods running within its limit (a candidate for reclaim). */
  | { kind: 'ADMITTED_NOT_RUNNING'; jobId: string; queueId: string; at: number; message: string }
  /** Stopped by the cluster (eviction, drain, a lost node…) and back to pending with its checkpoint. */
  | { kind: 'DISRUPTED'; jobId: string; queueId: string; at: number; message: string }
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
  | { kind: 'budgets' }
  /** Governance: policies, rules, or the controller's switch changed: the leader reloads them (queue specs
   * follow with 'config').
   */
  | { kind: 'governance' };

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
  /** An inference service changed: its spec, bounds, desired replicas, or its replicas' states. */
  'service-updated': [serviceId: string, payload: { serviceId: string; at: number }];
  /** Governance: a quota request changed (any tenant): platform admins' stream; each subscriber reloads it
   * under its own rights.
   */
  'quota-request': [payload: { requestId: string; tenantId: string; status: string; at: number }];
  /** Input for the scheduling leader. */
  'scheduler-input': [payload: SchedulerInput];
  /** The scheduler committed a cycle (or a job finished): positions may have moved. */
  'scheduler-state': [payload: { at: number }];
  /** What a caller's principal holds changed: identity caches drop it (src/auth/identity-cache.ts). Use
   * announceCredentialsChanged.
   */
  'credentials-changed': [payload: CredentialsChanged];
};

/**
 * A committed change to someone's rights: a token revoked, a membership or project role
 * added, changed or removed, a break-glass grant opened or closed. userId and/or tokenId
 * name whose cached principals are stale; neither (a tenant created) means all of them.
 */
export interface CredentialsChanged {
  userId?: string;
  tokenId?: string;
  tenantId?: string;
  at: number;
}

export type EventBus = PubSub<FairwayTopics>;

/** In memory by default; pass a Redis event target to share events across replicas. */
export function createEventBus(eventTarget?: TypedEventTarget<never>): EventBus {
  return createPubSub<FairwayTopics>(eventTarget ? { eventTarget: eventTarget as never } : undefined);
}

type CredentialsListener = (change: CredentialsChanged) => void;
const localCredentialListeners = new WeakMap<EventBus, Set<CredentialsListener>>();

/**
 * Announces a committed credentials change (call after commit). This process's identity
 * caches hear it synchronously, before the mutation answers: the bus itself delivers later
 * (the in-memory one on a later tick, the Redis one after a round trip), and "a revoked token
 * stops on the next request" must hold on this replica. Other replicas hear it through the bus.
 */
export function announceCredentialsChanged(bus: EventBus, change: CredentialsChanged): void {
  for (const listener of localCredentialListeners.get(bus) ?? []) listener(change);
  bus.publish('credentials-changed', change);
}

/** The synchronous, in-process side of announceCredentialsChanged; returns the unsubscribe. */
export function onCredentialsChangedHere(bus: EventBus, listener: CredentialsListener): () => void {
  let listeners = localCredentialListeners.get(bus);
  if (!listeners) localCredentialListeners.set(bus, (listeners = new Set()));
  listeners.add(listener);
  return () => listeners.delete(listener);
}
