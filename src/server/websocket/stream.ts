/**
 * What one socket has produced and not yet handed to the network: the events its subscriptions
 * queued while a send was still pending, plus ws's own unsent bytes (`bufferedAmount`).
 *
 * graphql-ws awaits each send before pulling a subscription's next event, so `bufferedAmount`
 * alone stays at about one message per subscription while the events behind it pile up in
 * yoga's pub/sub queue, unseen and unbounded. So each subscription's stream is drained eagerly
 * into a queue this budget counts, and the socket is closed once the total passes the cap.
 */
export class OutboundBudget {
  private queuedBytes = 0;
  private overflowed = false;

  constructor(
    private readonly maxBytes: number,
    private readonly bufferedAmount: () => number,
    /** Called once, when the socket holds more than maxBytes unsent. */
    private readonly onOverflow: (bytes: number) => void,
  ) {}

  add(bytes: number): void {
    this.queuedBytes += bytes;
    this.check();
  }

  remove(bytes: number): void {
    this.queuedBytes -= bytes;
  }

  get pendingBytes(): number {
    return this.queuedBytes + this.bufferedAmount();
  }

  /** Also called before each send (graphql-ws onNext). */
  check(): void {
    if (this.overflowed) return;
    const pending = this.pendingBytes;
    if (pending > this.maxBytes) {
      this.overflowed = true;
      this.onOverflow(pending);
    }
  }
}

/** JSON size of an event that has to wait (only then: a reader that keeps up never pays for it). */
function sizeOf(value: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? '');
  } catch {
    return 0;
  }
}

/**
 * The subscription's events, pulled from `source` as soon as they are produced and queued here
 * (counted by `budget`) until graphql-ws asks for them. Ending it (return) ends the source.
 */
export function budgetedStream<T>(
  source: AsyncIterable<T>,
  budget: OutboundBudget,
): AsyncGenerator<T, undefined> {
  const iterator = source[Symbol.asyncIterator]();
  const queue: { value: T; bytes: number }[] = [];
  let waiting: ((result: IteratorResult<T, undefined>) => void) | null = null;
  let failed: ((error: unknown) => void) | null = null;
  let finished = false;
  let failure: { error: unknown } | null = null;

  const settleWaiter = () => {
    const resolve = waiting;
    const reject = failed;
    waiting = failed = null;
    if (!resolve) return;
    if (failure) reject!(failure.error);
    else resolve({ value: undefined, done: true });
  };

  const pump = async () => {
    try {
      while (!finished) {
        const result = await iterator.next();
        if (finished) return;
        if (result.done) {
          finished = true;
          return settleWaiter();
        }
        if (waiting) {
          const resolve = waiting;
          waiting = failed = null;
          resolve({ value: result.value, done: false });
        } else {
          const bytes = sizeOf(result.value);
          queue.push({ value: result.value, bytes });
          budget.add(bytes);
        }
      }
    } catch (error) {
      if (finished) return;
      failure = { error };
      finished = true;
      settleWaiter();
    }
  };
  void pump();

  const drop = () => {
    for (const item of queue.splice(0)) budget.remove(item.bytes);
  };

  const stream: AsyncGenerator<T, undefined> = {
    next() {
      const item = queue.shift();
      if (item) {
        budget.remove(item.bytes);
        return Promise.resolve({ value: item.value, done: false });
      }
      if (failure) {
        const { error } = failure;
        failure = null;
        return Promise.reject(error);
      }
      if (finished) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve, reject) => {
        waiting = resolve;
        failed = reject;
      });
    },
    async return() {
      const wasFinished = finished;
      finished = true;
      drop();
      settleWaiter();
      if (!wasFinished) await iterator.return?.();
      return { value: undefined, done: true };
    },
    async throw(error: unknown) {
      await stream.return(undefined);
      throw error;
    },
    [Symbol.asyncIterator]() {
      return stream;
    },
  };
  return stream;
}
