/**
 * Events, as the cluster's components record them (client-go's EventRecorder: a core v1 Event named
 * `<object>.<hex timestamp>` in the object's namespace, `default` for cluster-scoped objects; a repeat
 * of the same reason and message about the same object bumps `count` and `lastTimestamp`), and their
 * events.k8s.io/v1 view (regarding/note/eventTime/deprecated*), converted both ways.
 */
import type { Store } from './store.js';
import { kubeTime } from './store.js';

export interface EventSource {
  component: string;
  host?: string;
}

/** A MicroTime: RFC 3339 with microseconds. */
export function microTime(ms = Date.now()): string {
  return new Date(ms).toISOString().replace(/Z$/, '000Z');
}

export class EventRecorder {
  /** `${uid}|${type}|${reason}|${message}|${component}` → the Event's name. */
  private readonly seen = new Map<string, { namespace: string; name: string }>();
  private sequence = 0;

  constructor(private readonly store: Store) {}

  /** Records an event about `obj` (a stored object); never throws (a refused event is dropped, as on a real cluster). */
  record(obj: any, type: 'Normal' | 'Warning', reason: string, message: string, source: EventSource): void {
    try {
      this.write(obj, type, reason, message, source);
    } catch {
      // e.g. the namespace is being terminated: real recorders drop the event too
    }
  }

  private write(obj: any, type: string, reason: string, message: string, source: EventSource): void {
    const meta = obj.metadata ?? {};
    const key = `${meta.uid}|${type}|${reason}|${message}|${source.component}`;
    const now = Date.now();
    const previous = this.seen.get(key);
    const existing = previous && this.store.get('Event', previous.namespace, previous.name);
    if (existing) {
      this.store.replace(
        { ...existing, count: (existing.count ?? 1) + 1, lastTimestamp: kubeTime(now) },
        'system',
      );
      return;
    }
    const namespace: string = meta.namespace ?? 'default';
    const stamp = (BigInt(now) * 1_000_000n + BigInt(this.sequence++ % 1_000_000)).toString(16);
    const event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: `${meta.name}.${stamp}`, namespace },
      involvedObject: {
        apiVersion: obj.apiVersion,
        kind: obj.kind,
        name: meta.name,
        ...(meta.namespace ? { namespace: meta.namespace } : {}),
        uid: meta.uid,
        resourceVersion: meta.resourceVersion,
      },
      reason,
      message,
      source: { component: source.component, ...(source.host ? { host: source.host } : {}) },
      firstTimestamp: kubeTime(now),
      lastTimestamp: kubeTime(now),
      count: 1,
      type,
      reportingComponent: source.component,
      reportingInstance: source.host ?? '',
    };
    const created = this.store.create(event, 'system');
    this.seen.set(key, { namespace, name: created.metadata.name });
  }
}

/** A stored (core v1) Event as events.k8s.io/v1 serves it. */
export function toEventsV1(e: any): any {
  const out: any = {
    apiVersion: 'events.k8s.io/v1',
    kind: 'Event',
    metadata: e.metadata,
    eventTime:
      e.eventTime ?? microTime(Date.parse(e.firstTimestamp ?? e.metadata?.creationTimestamp ?? '') || 0),
    reportingController: e.reportingComponent || e.source?.component,
    reportingInstance: e.reportingInstance || e.source?.host,
    action: e.action,
    reason: e.reason,
    regarding: e.involvedObject,
    related: e.related,
    note: e.message,
    type: e.type,
    series: e.series,
    deprecatedSource: e.source,
    deprecatedFirstTimestamp: e.firstTimestamp,
    deprecatedLastTimestamp: e.lastTimestamp,
    deprecatedCount: e.count,
  };
  for (const k of Object.keys(out)) if (out[k] === undefined || out[k] === '') delete out[k];
  return out;
}

/** An events.k8s.io/v1 Event written by a client, in the core v1 shape the store keeps. */
export function fromEventsV1(e: any): any {
  const out: any = {
    apiVersion: 'v1',
    kind: 'Event',
    metadata: e.metadata,
    eventTime: e.eventTime,
    reportingComponent: e.reportingController,
    reportingInstance: e.reportingInstance,
    action: e.action,
    reason: e.reason,
    involvedObject: e.regarding ?? {},
    related: e.related,
    message: e.note,
    type: e.type,
    series: e.series,
    source: e.deprecatedSource,
    firstTimestamp: e.deprecatedFirstTimestamp,
    lastTimestamp: e.deprecatedLastTimestamp,
    count: e.deprecatedCount,
  };
  for (const k of Object.keys(out)) if (out[k] === undefined) delete out[k];
  return out;
}
