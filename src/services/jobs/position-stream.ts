import type { JobExplanation } from '../../core/scheduling/index.js';
import type { EventBus, JobStateName } from '../../events/index.js';

/** One value of a job's position stream. */
export interface JobPosition {
  jobId: string;
  /** The job's tenant as stored when the stream was opened (null for in-process callers that did not say). */
  tenantId: string | null;
  state: JobStateName;
  /** Pending jobs: the scheduler's explanation at the end of the last cycle (null until one saw the job). */
  explanation: JobExplanation | null;
}

export interface JobPositionSources {
  scheduler: {
    explain(jobId: string): JobExplanation | null;
    /** Called once at the end of each admission cycle and after a rebuild (a finish wakes a cycle). */
    onStateChange(listener: () => void): () => void;
  };
  events: EventBus;
}

export const pendingOnly = (explanation: JobExplanation | null) =>
  explanation?.state === 'pending' ? explanation : null;

/** What a subscriber sees of a value; the core's bookkeeping (admission, expected end) is left out. */
export function keyOf(value: JobPosition): string {
  if (!value.explanation) return JSON.stringify([value.state, null]);
  const {
    jobId: _id,
    queue: _queue,
    state: _state,
    admission: _admission,
    expectedEnd: _end,
    ...visible
  } = value.explanation;
  return JSON.stringify([value.state, visible]);
}

/**
 * An async iterator that holds only the newest value offered. Offers made while the reader
 * is away replace each other; one whose key equals the last value read is dropped. Keys
 * are computed by the offerer, once per value however many streams it is offered to.
 */
export class LatestValueStream<T> implements AsyncIterableIterator<T> {
  private latest: T | undefined = undefined;
  private latestKey: string | null = null;
  private lastReadKey: string | null = null;
  private reader: { resolve: (step: IteratorResult<T>) => void; reject: (error: unknown) => void } | null =
    null;
  private closed = false;

  constructor(private readonly onClose: (stream: LatestValueStream<T>) => void) {}

  offer(value: T, key: string): void {
    if (this.closed) return;
    if (key === this.lastReadKey) {
      // Back to what the reader already has (A→B→A while it was busy): nothing new.
      this.latest = undefined;
      this.latestKey = null;
      return;
    }
    if (!this.reader) {
      this.latest = value;
      this.latestKey = key;
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
    if (this.latestKey !== null) {
      const value = this.latest as T;
      this.lastReadKey = this.latestKey;
      this.latest = undefined;
      this.latestKey = null;
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
    this.latest = undefined;
    this.latestKey = null;
    this.onClose(this);
  }
}
