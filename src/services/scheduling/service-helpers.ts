import type { QueueStatus } from '../../core/scheduling/index.js';
import type { EventBus } from '../../events/index.js';

/**
 * Calls `handler` for each message on a bus topic until the returned function is called.
 * A handler's failure is logged, never thrown into the loop.
 */
export function listenTo<K extends 'scheduler-input' | 'scheduler-state'>(
  events: EventBus,
  topic: K,
  handler: (payload: never) => void,
  logError: (error: unknown) => void,
): () => void {
  const iterator = events.subscribe(topic as never)[Symbol.asyncIterator]();
  let active = true;
  void (async () => {
    while (active) {
      const next = await iterator.next();
      if (next.done) return;
      try {
        handler(next.value as never);
      } catch (error) {
        logError(error);
      }
    }
  })().catch(logError);
  return () => {
    active = false;
    void iterator.return?.();
  };
}

/**
 * Time windows open and close with the clock, not with events: after each cycle and resync
 * the leader tells the queue's tenant when a queue's active window changed.
 */
export class WindowAnnouncer {
  /** Queue name → index of its open time window (null: base quotas), as last announced. */
  private readonly announced = new Map<string, number | null>();

  constructor(
    private readonly events: EventBus,
    private readonly now: () => number,
  ) {}

  announce(queueIds: Map<string, string>, statusOf: (queueName: string) => QueueStatus | null): void {
    const at = this.now();
    for (const [name, queueId] of queueIds) {
      const status = statusOf(name);
      if (!status) continue;
      const before = this.announced.get(name);
      this.announced.set(name, status.activeWindow);
      if (before === undefined || before === status.activeWindow) continue;
      this.events.publish('tenant-event', status.tenant, { kind: 'WINDOW_CHANGED', queueId, at });
      this.events.publish('queue-updated', queueId, { queueId, at });
    }
  }
}
