import type { JobExplanation } from '../../core/scheduling/index.js';
import type { JobStateName } from '../../events/index.js';
import {
  type JobPosition,
  type JobPositionSources,
  keyOf,
  LatestValueStream,
  pendingOnly,
} from './position-stream.js';

/** One watched job: what its subscribers were last offered, and who they are. */
interface Watched {
  readonly jobId: string;
  readonly tenantId: string | null;
  state: JobStateName;
  /** The explanation sampled at the end of the last cycle (null: admitted or unknown to the core then). */
  pending: JobExplanation | null;
  /** The value last offered to the readers (a joiner starts from it) and its key. */
  value: JobPosition;
  key: string;
  readonly readers: Set<LatestValueStream<JobPosition>>;
  /** Ends the job's one `job-updated` subscription. */
  stop: () => void;
}

/**
 * The server's position streams, fanned out from one place (semantics: job-position-stream.ts).
 *
 * One listener on the scheduler's state changes, held while any job is watched: at the end of
 * each cycle it samples each watched job once (the core's explain is a lookup in a view
 * cached per state version, so a queue's order is computed once per cycle), compares with
 * the value last offered for that job, and offers a changed value to that job's readers only.
 * One `job-updated` subscription per watched job, shared by its readers. A reader costs one
 * LatestValueStream and a set entry; a tick that changes nothing for a job costs it nothing.
 */
export class JobPositionHub {
  private readonly jobs = new Map<string, Watched>();
  private offState: (() => void) | null = null;

  constructor(private readonly sources: JobPositionSources) {}

  /** Jobs watched and readers watching them (metrics and tests). */
  get size(): { jobs: number; readers: number } {
    let readers = 0;
    for (const entry of this.jobs.values()) readers += entry.readers.size;
    return { jobs: this.jobs.size, readers };
  }

  /**
   * A stream of the job's positions: the current value first. `job` is the row as the caller
   * read it under their rights (its state starts the job's entry if nobody watches it yet).
   */
  watch(job: {
    id: string;
    state: JobStateName;
    tenantId: string | null;
  }): AsyncIterableIterator<JobPosition> {
    const entry = this.jobs.get(job.id) ?? this.open(job);
    const stream = new LatestValueStream<JobPosition>((closed) => this.leave(entry, closed));
    entry.readers.add(stream);
    // A joiner starts from what the others were last offered: its next value is the same as theirs.
    stream.offer(entry.value, entry.key);
    return stream;
  }

  private open(job: { id: string; state: JobStateName; tenantId: string | null }): Watched {
    const pending = pendingOnly(this.sources.scheduler.explain(job.id));
    const value = positionValue(job.id, job.tenantId, job.state, pending);
    const updates = this.sources.events.subscribe('job-updated', job.id)[Symbol.asyncIterator]();
    const entry: Watched = {
      jobId: job.id,
      tenantId: job.tenantId,
      state: job.state,
      pending,
      value,
      key: keyOf(value),
      readers: new Set(),
      stop: () => void updates.return?.(),
    };
    this.jobs.set(job.id, entry);
    this.offState ??= this.sources.scheduler.onStateChange(this.tick);
    void (async () => {
      // These events lag the ticks (the outbox publishes after the cycle, and a burst queues
      // here): a job admitted and preempted at once has its new explanation already sampled
      // when the PENDING event arrives, so the explanation is never reset from this side.
      for (;;) {
        const next = await updates.next();
        if (next.done) return;
        entry.state = next.value.state;
        this.offerCurrent(entry);
      }
    })().catch((error) => {
      for (const reader of [...entry.readers]) reader.fail(error);
    });
    return entry;
  }

  /** End of a cycle: each watched job sampled once, synchronously (see job-position-stream.ts). */
  private readonly tick = (): void => {
    for (const entry of this.jobs.values()) {
      entry.pending = pendingOnly(this.sources.scheduler.explain(entry.jobId));
      // Admitted or finished in the core: its job-updated event brings the new state; until
      // then the last value stands (a pending state without its explanation would be a value
      // no cycle produced).
      if (entry.pending) this.offerCurrent(entry);
    }
  };

  private offerCurrent(entry: Watched): void {
    const value = positionValue(entry.jobId, entry.tenantId, entry.state, entry.pending);
    const key = keyOf(value);
    // Every reader holds this key already (read, or waiting to be read): nothing to send.
    if (key === entry.key) return;
    entry.value = value;
    entry.key = key;
    for (const reader of entry.readers) reader.offer(value, key);
  }

  private leave(entry: Watched, stream: LatestValueStream<JobPosition>): void {
    entry.readers.delete(stream);
    if (entry.readers.size > 0 || this.jobs.get(entry.jobId) !== entry) return;
    this.jobs.delete(entry.jobId);
    entry.stop();
    if (this.jobs.size === 0 && this.offState) {
      this.offState();
      this.offState = null;
    }
  }
}

function positionValue(
  jobId: string,
  tenantId: string | null,
  state: JobStateName,
  pending: JobExplanation | null,
): JobPosition {
  return { jobId, tenantId, state, explanation: state === 'PENDING' ? pending : null };
}

const hubs = new WeakMap<object, JobPositionHub>();

/** The one hub of a server (keyed by its scheduler, which is one per server). */
export function jobPositionHub(sources: JobPositionSources): JobPositionHub {
  let hub = hubs.get(sources.scheduler);
  if (!hub) {
    hub = new JobPositionHub({ scheduler: sources.scheduler, events: sources.events });
    hubs.set(sources.scheduler, hub);
  }
  return hub;
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
 *
 * The server shares one JobPositionHub (below) among all its subscribers: each
 * job is sampled once per cycle however many watch it. This function opens a stream on a hub
 * of its own (in-process callers and tests).
 */
export function jobPositionStream(
  sources: JobPositionSources,
  job: { id: string; state: JobStateName; tenantId?: string },
): AsyncIterableIterator<JobPosition> {
  return new JobPositionHub(sources).watch({ tenantId: null, ...job });
}
