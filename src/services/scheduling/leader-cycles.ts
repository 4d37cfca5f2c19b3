// The admission cycles of a leader session (leader-session.ts): one cycle, or one slice of it, per
// serial turn of the leader, its decisions written (fenced) before the next slice is computed.
import type { CycleResult } from '../../core/scheduling/index.js';
import { type FencedWriter, persistCycle } from './cycle-writer.js';
import type { LeaderHost } from './leader-host.js';

/** Default length of one slice of an admission cycle (FAIRWAY_CYCLE_SLICE_MS). */
export const DEFAULT_CYCLE_SLICE_MS = 20;

/**
 * Heads the core evaluates per call within a slice: the clock is read between calls, so a slice
 * overruns its length by at most one call (8 heads cost at most ~17 ms CPU at a 10,000-job burst).
 */
const CYCLE_CHUNK_HEADS = 8;

/** What the cycles use of the session that runs them. */
export interface CycleSession {
  readonly host: LeaderHost;
  /** The term is over: nothing queued by it does anything more. */
  ended(): boolean;
  /** The core may hold decisions the database does not: no cycles until a rebuild succeeds. */
  paused(): boolean;
  writer(): FencedWriter;
  /** Whether the core knows the job. */
  knows(jobId: string): boolean;
  /** Leader work without a waiting caller, as the session's next serial turn. */
  run(work: () => Promise<void>): void;
  /** Performs the outbox outside the leader's serial work. */
  dispatchSoon(): void;
  announceWindows(): void;
  /** Asks for an admission cycle soon. */
  wake(): void;
}

export class LeaderCycles {
  /** Whether the next slice of a sliced cycle is scheduled and has not begun. */
  private continuing = false;

  constructor(private readonly session: CycleSession) {}

  private get host(): LeaderHost {
    return this.session.host;
  }

  /**
   * One admission cycle, or one slice of it (`cycleSliceMs`): its decisions are written (fenced)
   * before the next slice is computed, so a slice is acknowledged exactly as a whole cycle was, and
   * the rest of the cycle is the leader's next turn after the event loop has had its own
   * (`continueCycle`). Reports and submits that arrive meanwhile reach the core between slices.
   */
  async runCycle(): Promise<void> {
    const session = this.session;
    if (session.ended() || session.paused()) return;
    const { core } = this.host;
    const started = performance.now();
    const sliceMs = this.host.options.cycleSliceMs ?? DEFAULT_CYCLE_SLICE_MS;
    const result = sliceMs > 0 ? this.cycleSlice(started, sliceMs) : core.cycle();
    if (!result.more) session.announceWindows();
    if (result.admitted.length === 0 && result.preempted.length === 0) {
      this.observeCycle(started, result);
      if (result.more) return this.continueCycle();
      return this.host.stateChanged();
    }
    // On failure the core is ahead of the database: failed() pauses until a rebuild (or demotes).
    const skipped = await persistCycle(session.writer(), core, result);
    this.observeCycle(started, result);
    if (session.ended()) return;
    // Jobs cancelled while the cycle ran: give back what the core reserved for them.
    for (const jobId of skipped) if (session.knows(jobId)) core.cancel(jobId);
    this.host.options.events.publish('scheduler-state', { at: result.at });
    session.dispatchSoon();
    // The rest of a sliced cycle; else admissions may free a StrictFIFO queue or leave room for the next
    // head.
    // Local state-change listeners (positions) are told once, when the cycle ends, not after every slice.
    if (result.more) return this.continueCycle();
    this.host.stateChanged();
    session.wake();
  }

  /**
   * Calls the core with a few heads at a time until the cycle ends or the slice's time is up, and
   * answers their decisions together (the core's sliced calls, concatenated, decide as one cycle).
   */
  private cycleSlice(started: number, sliceMs: number): CycleResult {
    const { core } = this.host;
    const result = core.cycle({ maxHeads: CYCLE_CHUNK_HEADS });
    while (result.more && performance.now() - started < sliceMs) {
      const next = core.cycle({ maxHeads: CYCLE_CHUNK_HEADS });
      result.admitted.push(...next.admitted);
      result.preempted.push(...next.preempted);
      result.pending.push(...next.pending);
      result.more = next.more;
    }
    return result;
  }

  /**
   * The next slice of a sliced cycle, after the event loop has answered what waits (setImmediate
   * runs after pending I/O callbacks), as the leader's next serial turn: work queued meanwhile
   * (reports, submits) goes first. A wake-up in between simply runs the same continuation.
   */
  private continueCycle(): void {
    if (this.session.ended() || this.session.paused() || this.continuing) return;
    this.continuing = true;
    setImmediate(() => {
      this.continuing = false;
      this.session.run(() => this.runCycle());
    });
  }

  /** Metrics only: an observer that throws must not fail the cycle. */
  private observeCycle(started: number, result: CycleResult): void {
    try {
      this.host.options.observeCycle?.(
        (performance.now() - started) / 1000,
        result.admitted,
        result.preempted,
      );
    } catch (error) {
      this.host.options.logError(error);
    }
  }
}
