// How a simulated run ends (a forced outcome, a seeded failure, the deadline) and the PRNG behind it.
import type { BackendJob } from '../port.js';

/** What `job.workload.simulate` may say: force an outcome (declared ms, scaled like the duration). */
export interface SimulateDirective {
  outcome?: 'succeed' | 'fail';
  /** Fail this many declared ms after start; implies `outcome: 'fail'` unless the outcome says 'succeed'. */
  failAfterMs?: number;
}

export const SIMULATED_FAILURE = 'simulated failure';
export const MAX_RUN_TIME_EXCEEDED = 'max run time exceeded';

/** mulberry32: tiny seeded PRNG, uniform in [0, 1). */
export function mulberry32(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export type Ending = { at: number; type: 'succeeded' } | { at: number; type: 'failed'; reason: string };

export function finiteNonNegative(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;
}

/** Reads `workload.simulate`; malformed fields are ignored (the workload is user input). */
export function readSimulateDirective(workload: Record<string, unknown> | undefined): SimulateDirective {
  const raw = workload?.simulate;
  if (raw === null || typeof raw !== 'object') return {};
  const r = raw as Record<string, unknown>;
  const out: SimulateDirective = {};
  if (r.outcome === 'succeed' || r.outcome === 'fail') out.outcome = r.outcome;
  const failAfterMs = finiteNonNegative(r.failAfterMs);
  if (failAfterMs !== undefined) out.failAfterMs = failAfterMs;
  return out;
}

/**
 * How a run of the job ends, in declared ms after its start: forced by `workload.simulate`, a
 * seeded failure (`uFail` below the failure rate, at `uPoint` of the way), success at its declared
 * duration less the work kept from before (`offset`), or its max run time; null: runs until stopped.
 */
export function planEnding(
  job: BackendJob,
  failureRate: number,
  uFail: number,
  uPoint: number,
  offset: number,
): Ending | null {
  const sim = readSimulateDirective(job.workload);
  const declared = finiteNonNegative(job.expectedDurationMs);
  const expected = declared === undefined ? undefined : Math.max(0, declared - offset);
  const maxRun = finiteNonNegative(job.maxRunMs);
  const forcedFail = sim.outcome === 'fail' || (sim.outcome === undefined && sim.failAfterMs !== undefined);

  let ending: Ending | null = null;
  if (forcedFail) {
    ending = { at: sim.failAfterMs ?? expected ?? 0, type: 'failed', reason: SIMULATED_FAILURE };
  } else if (sim.outcome !== 'succeed' && expected !== undefined && uFail < failureRate) {
    ending = { at: uPoint * expected, type: 'failed', reason: SIMULATED_FAILURE };
  } else if (expected !== undefined) {
    ending = { at: expected, type: 'succeeded' };
  }
  if (maxRun !== undefined && (ending === null || ending.at > maxRun)) {
    ending = { at: maxRun, type: 'failed', reason: MAX_RUN_TIME_EXCEEDED };
  }
  return ending;
}
