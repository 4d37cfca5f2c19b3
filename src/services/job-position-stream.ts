import type { JobExplanation } from '../core/types.js';
import type { EventBus, JobStateName } from '../events/bus.js';

/** One value of a job's position stream. */
export interface JobPosition {
  jobId: string;
  state: JobStateName;
  /** Pending jobs: the scheduler's explanation at the end of the last cycle (null until one saw the job). */
  explanation: JobExplanation | null;
}

export interface JobPositionSources {
  scheduler: {
    explain(jobId: string): JobExplanation | null;
    /** Called once at the end of each admission cycle, after a rebuild and after a finish. */
    onStateChange(listener: () => void): () => void;
  };
  events: EventBus;
}

/**
 * Where a job stands, as a stream: the current value first, then a new value only when
 * its position, ETA, pending reason or state changed.
 *
 * Positions are sampled only when the scheduler says a cycle ended, synchronously in that
 * callback: between two cycles the core holds inputs not yet scheduled (a job just
 * submitted ranks ahead until the cycle admits it), and sampling then would show positions
 * that no cycle produced — the 1→2→1 flip-flop. The state comes from the job's own
 * `job-updated` events, which follow the database.
 *
 * Values the reader is too busy to take fold into the newest one, and a value equal to the
 * last one read is not read again: a slow subscriber costs one value per read, never a backlog.
 */
export function jobPositionStream(sources: JobPositionSources, job: { id: string; state: JobStateName }): AsyncIterableIterator<JobPosition> {
  let state = job.state;
  let lastPending = pendingOnly(sources.scheduler.explain(job.id));
  const current = (): JobPosition => ({ jobId: job.id, state, explanation: state === 'PENDING' ? lastPending : null });

  const updates = sources.events.subscribe('job-updated', job.id)[Symbol.asyncIterator]();
  let offState = () => {};
  const stream = new LatestValueStream<JobPosition>(keyOf, () => {
    offState();
    void updates.return?.();
  });
  offState = sources.scheduler.onStateChange(() => {
    lastPending = pendingOnly(sources.scheduler.explain(job.id));
    // Admitted or finished in the core: its job-updated event brings the new state; until
    // then the last value stands (a pending state without its explanation would be a value
    // no cycle produced).
    if (lastPending) stream.offer(current());
  });
  void (async () => {
    // These events lag the ticks (the outbox publishes after the cycle, and a burst queues
    // here): a job admitted and preempted at once has its new explanation already sampled
    // when the PENDING event arrives, so the explanation is never reset from this side.
    for (;;) {
      const next = await updates.next();
      if (next.done) return;
      state = next.value.state;
      stream.offer(current());
    }
  })().catch((error) => stream.fail(error));
  stream.offer(current());
  return stream;
}

const pendingOnly = (explanation: JobExplanation | null) => (explanation?.state === 'pending' ? explanation : null);

/** What a subscriber sees of a value; the core's bookkeeping (admission, expected end) is left out. */
function keyOf(value: JobPosition): string {
  if (!value.explanation) return JSON.stringify([value.state, null]);
  const { jobId: _id, queue: _queue, state: _state, admission: _admission, expectedEnd: _end, ...visible } = value.explanation;
  return JSON.stringify([value.state, visible]);
}

/**
 * An async iterator that holds only the newest value offered. Offers made while the reader
 * is away replace each other; one whose key equals the last value read is dropped.
 */
class LatestValueStream<T> implements AsyncIterableIterator<T> {
  private latest: { value: T; key: string } | null = null;
  private lastReadKey: string | null = null;
  private reader: { resolve: (step: IteratorResult<T>) => void; reject: (error: unknown) => void } | null = null;
  private closed = false;

  constructor(
    private readonly key: (value: T) => string,
    private readonly onClose: () => void,
  ) {}

  offer(value: T): void {
    if (this.closed) return;
    const key = this.key(value);
    if (key === this.lastReadKey) {
      // Back to what the reader already has (A→B→A while it was busy): nothing new.
      this.latest = null;
      return;
    }
    if (!this.reader) {
      this.latest = { value, key };
      return;
    }
    const reader = this.reader;
    this.reader = null;
    this.lastReadKey = key;
    reader.resolve({ value, done: false });
  }

  fail(error: unknown): void {
    const reader = this.reader;
    this.close();
    reader?.reject(error);
  }

  next(): Promise<IteratorResult<T>> {
    if (this.closed) return Promise.resolve({ value: undefined, done: true });
    if (this.latest) {
      const { value, key } = this.latest;
      this.latest = null;
      this.lastReadKey = key;
      return Promise.resolve({ value, done: false });
    }
    return new Promise((resolve, reject) => (this.reader = { resolve, reject }));
  }

  return(): Promise<IteratorResult<T>> {
    const reader = this.reader;
    this.close();
    reader?.resolve({ value: undefined, done: true });
    return Promise.resolve({ value: undefined, done: true });
  }

  throw(error: unknown): Promise<IteratorResult<T>> {
    this.return();
    return Promise.reject(error);
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }

  private close(): void {
    if (this.closed) return;
    this.closed = true;
    this.reader = null;
    this.latest = null;
    this.onClose();
  }
}
