import { defineEntity, type InferEntity, p } from '@mikro-orm/core';
import { uuidv7 } from '../ids.js';

/**
 * Transactional outbox: decisions and their side effects (backend calls, published
 * events) are written with the state change; a dispatcher performs and marks them.
 * After a crash, unperformed rows are replayed (backend calls are idempotent).
 */
export const OutboxEntry = defineEntity({
  name: 'OutboxEntry',
  tableName: 'outbox',
  indexes: [{ properties: ['performedAt', 'id'] }],
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => uuidv7()),
    kind: p.string().length(32),
    payload: p.json<Record<string, unknown>>(),
    createdAt: p.datetime().onCreate(() => new Date()),
    performedAt: p.datetime().nullable(),
  },
});
export type OutboxEntry = InferEntity<typeof OutboxEntry>;

/**
 * The scheduler leader's fencing token: one row (id 1), bumped by each replica that takes
 * the leadership. Every write of scheduling decisions checks, in its own transaction, that
 * the stored epoch is still the writer's; a replica that lost the lock is refused.
 */
export const LeaderEpoch = defineEntity({
  name: 'LeaderEpoch',
  tableName: 'fairway_leader_epoch',
  properties: {
    id: p.integer().primary().autoincrement(false),
    epoch: p.bigint('number'),
  },
});
export type LeaderEpoch = InferEntity<typeof LeaderEpoch>;

export const schedulingEntities = [OutboxEntry, LeaderEpoch];
