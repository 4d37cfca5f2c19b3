// The inference autoscaler's rule (pure): how many replicas a service wants now, from its signal,
// its bounds (a minimum that may differ by time window, so training takes the night), stabilization
// windows and step limits, as Kubernetes' HorizontalPodAutoscaler (v2 behavior) decides it, plus
// scale to zero. The leader asks the scheduler for that many; the scheduler admits what fits, by
// the same fair-share rules as jobs. Each decision comes back as data with its numbers.
import { windowOpen } from '../scheduling/index.js';

/**
 * What a service scales on. Totals for the service: requests in flight, requests per second
 * (targets are per replica); an average over its replicas: p95 latency (ms), GPU utilization (0..1).
 */
export type ScalingSignal = 'IN_FLIGHT' | 'REQUESTS_PER_SECOND' | 'P95_LATENCY_MS' | 'GPU_UTILIZATION';

/** A minimum that applies while a weekly window is open (the first open one wins). */
export interface MinimumWindow {
  days: number[];
  start: string;
  end: string;
  timeZone: string;
  minReplicas: number;
}

export interface ScalingRules {
  signal: ScalingSignal;
  /** Per replica for IN_FLIGHT and REQUESTS_PER_SECOND; the wanted average for the others. */
  target: number;
  minReplicas: number;
  maxReplicas: number;
  minimumWindows?: readonly MinimumWindow[];
  /** Recommendations over this window are taken at their lowest before scaling up (0: at once). */
  scaleUpStabilizationMs: number;
  /** … and at their highest before scaling down (default 5 minutes, as the HPA's). */
  scaleDownStabilizationMs: number;
  /** Most replicas added / removed by one decision. */
  maxScaleUpStep: number;
  maxScaleDownStep: number;
  /** No change while the signal is within this ratio of its target (0.1: ±10%, as the HPA's). */
  tolerance: number;
  /** With a minimum of 0: after this long without a request, 0 replicas; null: never to zero. */
  scaleToZeroAfterMs: number | null;
}

/** One reading of the service's signal (null: no reading this interval). */
export interface SignalReading {
  at: number;
  value: number | null;
  /** Requests received since the last reading (what wakes a service at zero, and keeps it from it). */
  requests: number;
}

/** What the autoscaler keeps between decisions. */
export interface AutoscalerMemory {
  /** Raw recommendations within the longest stabilization window, oldest first. */
  recent: { at: number; replicas: number }[];
  /** The last instant a request was seen; null before any. */
  lastRequestAt: number | null;
}

export const EMPTY_MEMORY: AutoscalerMemory = { recent: [], lastRequestAt: null };

export interface ScalingDecision {
  at: number;
  /** Replicas asked of the scheduler from now on. */
  desired: number;
  /** What the signal alone asks for (before bounds, stabilization and steps). */
  recommended: number;
  /** The minimum in force now (its window's, or the base one). */
  minimum: number;
  /** Why `desired` is what it is, with the numbers. */
  reason: string;
  /** The service was at zero and a request woke it (its first replica will cold-start). */
  coldStart: boolean;
  memory: AutoscalerMemory;
}

/** The minimum in force at `at`: the first open window's, else the base one. */
export function minimumAt(rules: Pick<ScalingRules, 'minReplicas' | 'minimumWindows'>, at: number): number {
  for (const w of rules.minimumWindows ?? [])
    if (windowOpen({ days: w.days, start: w.start, end: w.end, timeZone: w.timeZone, quotas: {} }, at))
      return w.minReplicas;
  return rules.minReplicas;
}

/** Replicas the signal asks for, from `current` ready replicas. */
export function recommendedReplicas(rules: ScalingRules, current: number, value: number): number {
  if (rules.signal === 'IN_FLIGHT' || rules.signal === 'REQUESTS_PER_SECOND')
    return Math.ceil(value / rules.target);
  // Averages over the replicas scale with them (the HPA's ratio); from none, one to start with.
  if (current === 0) return value > 0 ? 1 : 0;
  return Math.ceil((current * value) / rules.target);
}

/**
 * The decision for this interval. `current` is what the service has asked for so far (its desired
 * replicas), `ready` how many serve; the reading may be missing (then nothing moves but the bounds).
 */
export function decideReplicas(
  rules: ScalingRules,
  memory: AutoscalerMemory,
  current: number,
  ready: number,
  reading: SignalReading,
): ScalingDecision {
  const at = reading.at;
  const minimum = Math.min(minimumAt(rules, at), rules.maxReplicas);
  const lastRequestAt = reading.requests > 0 ? at : memory.lastRequestAt;
  const horizon = Math.max(rules.scaleUpStabilizationMs, rules.scaleDownStabilizationMs);
  const keep = memory.recent.filter((r) => r.at > at - horizon);
  // The signal alone never takes a running service to 0: only the idle rule below does.
  const floor = Math.min(Math.max(minimum, 1), rules.maxReplicas);
  const bounded = (n: number) => Math.max(floor, Math.min(rules.maxReplicas, n));
  const done = (
    desired: number,
    recommended: number,
    reason: string,
    coldStart = false,
  ): ScalingDecision => ({
    at,
    desired,
    recommended,
    minimum,
    reason,
    coldStart,
    memory: { recent: [...keep, { at, replicas: recommended }], lastRequestAt },
  });

  // At zero: a request wakes it (one replica, cold), nothing else does.
  if (current === 0 && minimum === 0) {
    if (reading.requests > 0)
      return done(bounded(1), 1, `a request came while at 0 replicas: 1 starts cold`, true);
    return done(0, 0, 'at 0 replicas and no request');
  }
  // Idle long enough with a minimum of 0: to zero.
  if (
    minimum === 0 &&
    rules.scaleToZeroAfterMs !== null &&
    lastRequestAt !== null &&
    at - lastRequestAt >= rules.scaleToZeroAfterMs &&
    reading.requests === 0
  )
    return done(0, 0, `no request for ${Math.round((at - lastRequestAt) / 1000)} s: scaled to 0`);

  if (reading.value === null || !Number.isFinite(reading.value)) {
    const desired = bounded(current);
    return {
      ...done(
        desired,
        current,
        desired === current
          ? 'no reading: unchanged'
          : `no reading: within bounds ${minimum}–${rules.maxReplicas}`,
      ),
      memory: { recent: keep, lastRequestAt },
    };
  }
  const base = Math.max(ready, 0);
  // Within the tolerance of the target: no change (the HPA's ±10%), so noise does not move replicas.
  const usage = isTotal(rules)
    ? reading.value / (Math.max(base, 1) * rules.target)
    : reading.value / rules.target;
  const raw =
    base > 0 && Math.abs(usage - 1) <= rules.tolerance
      ? current
      : recommendedReplicas(rules, base, reading.value);
  const recommendation = bounded(raw);
  const window = (ms: number) => [...keep.filter((r) => r.at > at - ms), { at, replicas: recommendation }];
  let desired = current;
  let why: string;
  const measured = `${describe(rules, reading.value)} against a target of ${isTotal(rules) ? `${round(rules.target)} per replica` : describe(rules, rules.target)}`;
  if (recommendation > current) {
    // Up only as far as every recommendation in the up window agrees.
    const floor = Math.min(...window(rules.scaleUpStabilizationMs).map((r) => bounded(r.replicas)));
    desired = Math.min(Math.max(current, floor), current + rules.maxScaleUpStep);
    why =
      desired === current
        ? `${measured} asks for ${recommendation}; held at ${current} until it has for ${rules.scaleUpStabilizationMs / 1000} s`
        : `${measured}: ${current} → ${desired}${desired < recommendation ? ` (asks for ${recommendation}; ${floor < recommendation ? 'stabilizing' : `at most +${rules.maxScaleUpStep} a step`})` : ''}`;
  } else if (recommendation < current) {
    // Down only as far as the highest recommendation in the down window allows.
    const ceiling = Math.max(...window(rules.scaleDownStabilizationMs).map((r) => bounded(r.replicas)));
    desired = Math.max(Math.min(current, ceiling), current - rules.maxScaleDownStep);
    why =
      desired === current
        ? `${measured} asks for ${recommendation}; held at ${current} for the ${rules.scaleDownStabilizationMs / 1000} s down window`
        : `${measured}: ${current} → ${desired}${desired > recommendation ? ` (asks for ${recommendation}; ${ceiling > recommendation ? 'stabilizing' : `at most −${rules.maxScaleDownStep} a step`})` : ''}`;
  } else why = `${measured}: ${current} is right`;
  desired = bounded(desired);
  return {
    ...done(desired, raw, why),
    memory: { recent: [...keep, { at, replicas: recommendation }], lastRequestAt },
  };
}

const isTotal = (rules: Pick<ScalingRules, 'signal'>) =>
  rules.signal === 'IN_FLIGHT' || rules.signal === 'REQUESTS_PER_SECOND';

function describe(rules: Pick<ScalingRules, 'signal'>, v: number): string {
  switch (rules.signal) {
    case 'IN_FLIGHT':
      return `${round(v)} in flight`;
    case 'REQUESTS_PER_SECOND':
      return `${round(v)} req/s`;
    case 'P95_LATENCY_MS':
      return `p95 ${round(v)} ms`;
    case 'GPU_UTILIZATION':
      return `GPU ${Math.round(v * 100)}%`;
  }
}

const round = (v: number) => (Math.abs(v) >= 100 ? Math.round(v) : Math.round(v * 10) / 10);
