// One backend follow per pod of a run, however many streams follow it: the pod's new lines are
// read, masked and cut once and handed to every stream. A stream that joins behind the others
// reads what it missed first (the backend's read after its cursor), then takes the shared lines
// after its own position, so it never gets a line twice or misses one.
import type { BackendLogLine, BackendLogPod, BackendLogRun, BackendLogs } from '../../backends/port.js';
import { type LogLine, shownLines } from './lines.js';

export interface FanoutSink {
  lines(lines: LogLine[]): void;
  /** The pod's output is over. */
  end(): void;
}

interface Subscriber {
  sink: FanoutSink;
  /** The backend cursor of the last line this subscriber got. */
  position: string | null;
  /** Lines that came while it read what it missed. */
  queued: LogLine[] | null;
}

interface Hub {
  subscribers: Set<Subscriber>;
  stop: () => void;
  ended: boolean;
}

const after = (lines: readonly LogLine[], position: string | null) =>
  position === null ? lines : lines.filter((l) => l.podCursor > position);

export class LogFanout {
  private readonly hubs = new Map<string, Hub>();

  constructor(private readonly logs: BackendLogs) {}

  /** Streams following pods right now (for tests and metrics): hubs and their subscribers. */
  stats(): { hubs: number; subscribers: number } {
    let subscribers = 0;
    for (const h of this.hubs.values()) subscribers += h.subscribers.size;
    return { hubs: this.hubs.size, subscribers };
  }

  /**
   * Follows the pod after `position` (null: from the start) for one stream; `secrets` are the job's
   * (the same for every stream of it). Returns the function that stops this stream's part.
   */
  follow(
    run: BackendLogRun,
    pod: BackendLogPod,
    position: string | null,
    secrets: readonly string[],
    sink: FanoutSink,
  ): () => void {
    const key = `${run.jobId}/${run.run}/${pod.podSet}/${pod.index}`;
    const where = { run: run.run, podSet: pod.podSet, pod: pod.index };
    const subscriber: Subscriber = { sink, position, queued: null };
    const hub = this.hubs.get(key);
    if (!hub) {
      const created: Hub = { subscribers: new Set([subscriber]), stop: () => undefined, ended: false };
      this.hubs.set(key, created);
      created.stop = this.logs.follow(run, pod, position, {
        lines: (raw: BackendLogLine[]) => this.deliver(created, shownLines(raw, where, secrets)),
        end: () => {
          created.ended = true;
          this.hubs.delete(key);
          for (const s of created.subscribers) s.sink.end();
        },
      });
      return () => this.leave(key, created, subscriber);
    }
    // Behind or ahead of the others: catch up from the backend, then take the shared lines.
    subscriber.queued = [];
    hub.subscribers.add(subscriber);
    const joined = hub;
    void this.logs
      .read(run, pod, { after: position })
      .then((raw) => {
        if (!joined.subscribers.has(subscriber)) return;
        const missed = after(shownLines(raw ?? [], where, secrets), subscriber.position);
        const queued = subscriber.queued ?? [];
        subscriber.queued = null;
        this.give(subscriber, missed);
        this.give(subscriber, queued);
        if (joined.ended) sink.end();
      })
      .catch(() => {
        // The read failed: the shared lines from here on still come (the stream's reconcile drains the rest).
        const queued = subscriber.queued ?? [];
        subscriber.queued = null;
        this.give(subscriber, queued);
      });
    return () => this.leave(key, joined, subscriber);
  }

  private deliver(hub: Hub, lines: LogLine[]): void {
    for (const s of hub.subscribers) {
      if (s.queued) s.queued.push(...lines);
      else this.give(s, lines);
    }
  }

  private give(s: Subscriber, lines: readonly LogLine[]): void {
    const fresh = after(lines, s.position);
    if (!fresh.length) return;
    s.position = fresh.at(-1)!.podCursor;
    s.sink.lines(fresh as LogLine[]);
  }

  private leave(key: string, hub: Hub, subscriber: Subscriber): void {
    hub.subscribers.delete(subscriber);
    if (hub.subscribers.size === 0 && this.hubs.get(key) === hub) {
      this.hubs.delete(key);
      hub.stop();
    }
  }
}
