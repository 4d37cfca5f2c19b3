// A seeded model of GPU utilization per workload type (issue 16), for the simulated cluster and the
// trace simulator: each job gets a base level by its type, jitter per sample, and, for some jobs, an
// idle tail (the work is done or stuck but the GPUs are still held: a notebook left open, a hung
// collective, a server with no traffic). Same seed and job key, same series, on every platform.
import type { WorkloadType } from './types.js';

export interface UtilizationProfile {
  /** Mean GPU utilization while busy (0..1). */
  busy: number;
  /** GPU memory share while busy (0..1). */
  memory: number;
  /** Run time (ms from start) after which the job idles until it ends; null: busy to the end. */
  idleAfterMs: number | null;
}

/**
 * Per type (busy mean ± spread; share of jobs with an idle tail; the tail's share of the run):
 * TRAINING 0.80 ± 0.10, 8 %, 20–60 %; FINE_TUNING 0.65 ± 0.15, 12 %, 20–60 %;
 * BATCH_INFERENCE 0.55 ± 0.15, 6 %, 20–50 %; ONLINE_INFERENCE 0.30 ± 0.15, 15 %, 30–70 %.
 * Idle level: 0.00–0.03. Drawn from a PRNG seeded by (seed, jobKey) — independent of draw order.
 */
export function utilizationProfile(seed: number, jobKey: string, type: WorkloadType, durationMs: number): UtilizationProfile {
  void seed; void jobKey; void type; void durationMs;
  throw new Error('utilizationProfile: not implemented yet');
}

/** The reading at `runMs` into the run: busy level ± jitter (seeded by seed, jobKey and the sample index), or the idle level in the tail. */
export function utilizationAt(seed: number, jobKey: string, profile: UtilizationProfile, runMs: number, sampleIndex: number): { gpu: number; memory: number } {
  void seed; void jobKey; void profile; void runMs; void sampleIndex;
  throw new Error('utilizationAt: not implemented yet');
}

/** Mean GPU utilization of a run segment [fromMs, toMs) of the profile (exact, without jitter): for the simulator's utilization figure. */
export function meanUtilization(profile: UtilizationProfile, fromMs: number, toMs: number): number {
  void profile; void fromMs; void toMs;
  throw new Error('meanUtilization: not implemented yet');
}
