import { createPubSub, type PubSub } from 'graphql-yoga';
import type { TypedEventTarget } from '@graphql-yoga/typed-event-target';

/**
 * Typed topics. Payloads carry ids, not rows: each subscriber loads the row under its
 * own authorization, so an event never carries more than its receiver may see.
 */
export type FairwayTopics = {
  /** An audit event was committed in this tenant. */
  'audit-event': [tenantId: string, payload: { auditEventId: string }];
};

export type EventBus = PubSub<FairwayTopics>;

/** In memory by default; pass a Redis event target to share events across replicas. */
export function createEventBus(eventTarget?: TypedEventTarget<never>): EventBus {
  return createPubSub<FairwayTopics>(eventTarget ? { eventTarget: eventTarget as never } : undefined);
}
