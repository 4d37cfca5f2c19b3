// Timer functions a backend schedules with, injectable so tests can drive time.

/** The four timer functions, with opaque handles. Method syntax: Node's and browsers' signatures both fit. */
export interface Timers {
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  setInterval(fn: () => void, ms: number): unknown;
  clearInterval(handle: unknown): void;
}

/**
 * The global timers, looked up at call time (not captured at import), so a backend built
 * before `vi.useFakeTimers()` still follows the fake clock.
 */
export const systemTimers: Timers = {
  setTimeout: (fn, ms) => globalThis.setTimeout(fn, ms),
  clearTimeout: (h) => globalThis.clearTimeout(h as Parameters<typeof globalThis.clearTimeout>[0]),
  setInterval: (fn, ms) => globalThis.setInterval(fn, ms),
  clearInterval: (h) => globalThis.clearInterval(h as Parameters<typeof globalThis.clearInterval>[0]),
};

/** Node (and browsers) fire a timeout longer than this at once, with only a warning. */
export const MAX_TIMEOUT_MS = 2_147_483_647;

/** A one-shot timer that may be longer than MAX_TIMEOUT_MS (chained in chunks). */
export class LongTimeout {
  private handle: unknown;
  private cancelled = false;
  constructor(
    private readonly timers: Timers,
    ms: number,
    private readonly fn: () => void,
  ) {
    this.arm(Math.max(0, ms));
  }
  private arm(remaining: number): void {
    const step = Math.min(remaining, MAX_TIMEOUT_MS);
    this.handle = this.timers.setTimeout(() => {
      if (this.cancelled) return;
      if (remaining > step) this.arm(remaining - step);
      else this.fn();
    }, step);
  }
  clear(): void {
    this.cancelled = true;
    this.timers.clearTimeout(this.handle);
  }
}
