// A seeded model of GPU utilization per workload type, for the simulated cluster and the
// trace simulator: each job gets a base level by its type, jitter per sample, and, for some jobs, an
// idle tail (the work is done or stuck but the GPUs are still held: a notebook left open, a hung
// collective, a server with no traffic). Same seed and job key, same series, on every platform.
import type { WorkloadType } from './types.js';

export interface UtilizationProfile {
  /** Mean GPU utilization while busy (0..1). */
  busy: number;
  /** GPU memory share while busy (0..1); the idle tail keeps the memory it held. */
  memory: number;
  /** Run time (ms from start) after which the job idles until it ends; null: busy to the end. */
  idleAfterMs: number | null;
  /** GPU utilization throughout the idle tail (0..0.03, fixed per job, no jitter). */
  idle: number;
}

interface TypeModel {
  busy: number;
  busySpread: number;
  memory: number;
  memorySpread: number;
  tailShare: number;
  tailFrom: number;
  tailTo: number;
}

const MODELS: Record<WorkloadType, TypeModel> = {
  TRAINING: {
    busy: 0.8,
    busySpread: 0.1,
    memory: 0.75,
    memorySpread: 0.15,
    tailShare: 0.08,
    tailFrom: 0.2,
    tailTo: 0.6,
  },
  FINE_TUNING: {
    busy: 0.65,
    busySpread: 0.15,
    memory: 0.6,
    memorySpread: 0.2,
    tailShare: 0.12,
    tailFrom: 0.2,
    tailTo: 0.6,
  },
  BATCH_INFERENCE: {
    busy: 0.55,
    busySpread: 0.15,
    memory: 0.5,
    memorySpread: 0.2,
    tailShare: 0.06,
    tailFrom: 0.2,
    tailTo: 0.5,
  },
  ONLINE_INFERENCE: {
    busy: 0.3,
    busySpread: 0.15,
    memory: 0.4,
    memorySpread: 0.2,
    tailShare: 0.15,
    tailFrom: 0.3,
    tailTo: 0.7,
  },
};

/** Highest idle-tail level: under every built-in policy's idle threshold (0.05). */
const IDLE_MAX = 0.03;
/** Per-sample jitter around the busy level (uniform ±), and around the memory share. */
const GPU_JITTER = 0.05;
const MEMORY_JITTER = 0.02;

/**
 * 32-bit hash of (seed, key, salt): FNV-1a over the key's UTF-16 code units, seeded by the seed,
 * then the salt, then murmur3's finalizer. Integer arithmetic only, so the same on every platform.
 */
function hash32(seed: number, key: string, salt: number): number {
  let h = (0x811c9dc5 ^ Math.imul(Math.trunc(seed) >>> 0, 0x9e3779b1)) >>> 0;
  for (let i = 0; i < key.length; i++) {
    h ^= key.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= salt >>> 0;
  h = Math.imul(h, 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** mulberry32 (as src/simulator/prng.ts; the core may not import the simulator): uniform draws in [0, 1). */
function mulberry32(state: number): () => number {
  let s = state >>> 0;
  return () => {
    let t = (s = (s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const PROFILE_SALT = 0x70726f66; // 'prof'
const clamp01 = (x: number): number => Math.min(1, Math.max(0, x));
/** Uniform in [mean − spread, mean + spread] from a draw u in [0, 1). */
const around = (mean: number, spread: number, u: number): number => mean - spread + 2 * spread * u;

/**
 * Per type (busy mean ± spread; share of jobs with an idle tail; the tail's share of the run):
 * TRAINING 0.80 ± 0.10, 8 %, 20–60 %; FINE_TUNING 0.65 ± 0.15, 12 %, 20–60 %;
 * BATCH_INFERENCE 0.55 ± 0.15, 6 %, 20–50 %; ONLINE_INFERENCE 0.30 ± 0.15, 15 %, 30–70 %.
 * All uniform. Memory share: TRAINING 0.75 ± 0.15, FINE_TUNING 0.60 ± 0.20, BATCH_INFERENCE
 * 0.50 ± 0.20, ONLINE_INFERENCE 0.40 ± 0.20. Idle level: 0.00–0.03.
 * idleAfterMs = round(durationMs × (1 − tail share)). Drawn from a PRNG seeded by (seed, jobKey) —
 * independent of draw order (seed: integer part, modulo 2³²).
 */
export function utilizationProfile(
  seed: number,
  jobKey: string,
  type: WorkloadType,
  durationMs: number,
): UtilizationProfile {
  const m = MODELS[type];
  const next = mulberry32(hash32(seed, jobKey, PROFILE_SALT));
  // Every draw is taken whatever the branch, so each field depends only on (seed, jobKey).
  const busy = around(m.busy, m.busySpread, next());
  const memory = around(m.memory, m.memorySpread, next());
  const hasTail = next() < m.tailShare;
  const tail = m.tailFrom + (m.tailTo - m.tailFrom) * next();
  const idle = IDLE_MAX * next();
  const idleAfterMs = hasTail ? Math.round(Math.max(0, durationMs) * (1 - tail)) : null;
  return { busy, memory, idleAfterMs, idle };
}

/**
 * The reading at `runMs` into the run: in the idle tail (runMs ≥ idleAfterMs) exactly the idle level
 * with the memory held; before it the busy level ± 0.05 (uniform) and memory ± 0.02, the jitter drawn
 * from (seed, jobKey, sampleIndex) — so a sample can be recomputed alone. Clamped to 0..1.
 */
export function utilizationAt(
  seed: number,
  jobKey: string,
  profile: UtilizationProfile,
  runMs: number,
  sampleIndex: number,
): { gpu: number; memory: number } {
  if (profile.idleAfterMs !== null && runMs >= profile.idleAfterMs)
    return { gpu: profile.idle, memory: profile.memory };
  const next = mulberry32(hash32(seed, jobKey, sampleIndex + 1));
  return {
    gpu: clamp01(around(profile.busy, GPU_JITTER, next())),
    memory: clamp01(around(profile.memory, MEMORY_JITTER, next())),
  };
}

/**
 * Mean GPU utilization of a run segment [fromMs, toMs) of the profile (exact, without jitter): for
 * the simulator's utilization figure. The busy part weighs `busy`, the part in the tail `idle`; an
 * empty segment (toMs ≤ fromMs) gives the level at fromMs.
 */
export function meanUtilization(profile: UtilizationProfile, fromMs: number, toMs: number): number {
  const idleAfter = profile.idleAfterMs ?? Infinity;
  if (!(toMs > fromMs)) return fromMs >= idleAfter ? profile.idle : profile.busy;
  const busyPart = Math.max(0, Math.min(toMs, idleAfter) - fromMs);
  const tailPart = toMs - fromMs - busyPart;
  return (profile.busy * busyPart + profile.idle * tailPart) / (toMs - fromMs);
}
