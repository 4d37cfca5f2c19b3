// The inference autoscaler's rule (pure): how many replicas a service wants now, from its signal,
// its bounds (a minimum that may differ by time window, so training takes the night), stabilization
// windows and step limits, as Kubernetes' HorizontalPodAutoscaler (v2 behavior) decides it, plus
// scale to zero. The leader asks the scheduler for that many; the scheduler admits what fits, by
// the same fair-share rules as jobs. Each decision comes back as data with its numbers. Beyond the
// HPA's rules, some keep replicas from flapping: replicas asked for that do not serve yet count as
// serving nothing (the HPA's rule for unready pods); the down and up guards (guards.ts: what the
// service has shown it needs at a request rate — no scale-down to a count found too few while the
// down window's peak traffic would put it above the bottom of the tolerance band; no scale-up past
// a count found enough at this traffic); no scale-up while the scheduler has not admitted the
// replicas already asked for (an optional input).
import { windowOpen } from '../scheduling/index.js';
import { type CountAtRate, enoughAt, type Learned, learn, readingRate, refusingDown } from './guards.js';

// The guards are part of this rule: exported with it (the folder's index exports this file).
export * from './guards.js';

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
  /**
   * … and at their highest before scaling down (default 5 minutes, as the HPA's). The guards come
   * with it (guards.ts): no scale-down to a count found too few while this window's peak request
   * rate would put that count above the bottom of the tolerance band, no scale-up past a count found
   * enough at the rate. 0: no window and no guards, the recommendation goes through (steps apart).
   */
  scaleDownStabilizationMs: number;
  /** Most replicas added / removed by one decision. */
  maxScaleUpStep: number;
  maxScaleDownStep: number;
  /** No change while the signal is within this ratio of its target (0.1: ±10%, as the HPA's); the guards' band. */
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
  /** The requests were counted over (sinceMs, at] (default: since the previous decision). */
  sinceMs?: number;
}

/** One raw recommendation, with the request rate (per second) of its reading when known. */
export interface Recommendation {
  at: number;
  replicas: number;
  rps?: number;
}

/** What the autoscaler keeps between decisions (stored as JSON; the optional fields came later). */
export interface AutoscalerMemory {
  /** Raw recommendations within the longest stabilization window, oldest first. */
  recent: Recommendation[];
  /** The last instant a request was seen; null before any. */
  lastRequestAt: number | null;
  /** The last decision's instant: where the next reading's requests start by default. */
  readAt?: number;
  /** The guards' facts (guards.ts): counts of serving replicas found too few / enough at a request rate. */
  tooFew?: CountAtRate[];
  enough?: CountAtRate[];
}

export const EMPTY_MEMORY: AutoscalerMemory = { recent: [], lastRequestAt: null };

/** What the scheduler made of the replicas asked for so far (an optional input of the decision). */
export interface SchedulerView {
  /** Replicas admitted (serving or warming) of the `current` asked for: replicaCounts().admitted. */
  admitted: number;
  /** Why not more, in the scheduler's words (for the reason). */
  whyNotMore?: string | null;
}

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
 * `scheduler`, when given: how many of `current` the scheduler admitted; while it has not admitted
 * them all, the signal asks for no more (they would wait behind the ones it refused).
 */
export function decideReplicas(
  rules: ScalingRules,
  memory: AutoscalerMemory,
  current: number,
  ready: number,
  reading: SignalReading,
  scheduler?: SchedulerView,
): ScalingDecision {
  const at = reading.at;
  const minimum = Math.min(minimumAt(rules, at), rules.maxReplicas);
  const lastRequestAt = reading.requests > 0 ? at : memory.lastRequestAt;
  const horizon = Math.max(rules.scaleUpStabilizationMs, rules.scaleDownStabilizationMs);
  const keep = memory.recent.filter((r) => r.at > at - horizon);
  const rps = readingRate(reading.requests, at, reading.sinceMs ?? memory.readAt);
  const entry = (replicas: number): Recommendation => ({ at, replicas, ...(rps === null ? {} : { rps }) });
  const known: Learned = { tooFew: memory.tooFew ?? [], enough: memory.enough ?? [] };
  const remember = (recent: Recommendation[], facts = known): AutoscalerMemory => ({
    recent,
    lastRequestAt,
    readAt: at,
    tooFew: facts.tooFew,
    enough: facts.enough,
  });
  // The signal alone never takes a running service to 0: only the idle rule below does.
  const floor = Math.min(Math.max(minimum, 1), rules.maxReplicas);
  const bounded = (n: number) => Math.max(floor, Math.min(rules.maxReplicas, n));
  const done = (
    desired: number,
    recommended: number,
    reason: string,
    coldStart = false,
    kept = remember([...keep, entry(recommended)]),
  ): ScalingDecision => ({ at, desired, recommended, minimum, reason, coldStart, memory: kept });

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
    const why =
      desired === current
        ? 'no reading: unchanged'
        : `no reading: within bounds ${minimum}–${rules.maxReplicas}`;
    return done(desired, current, why, false, remember(keep));
  }
  const base = Math.max(ready, 0);
  // Within the tolerance of the target: no change (the HPA's ±10%), so noise does not move replicas.
  const usage = isTotal(rules)
    ? reading.value / (Math.max(base, 1) * rules.target)
    : reading.value / rules.target;
  const signalled =
    base > 0 && Math.abs(usage - 1) <= rules.tolerance
      ? current
      : recommendedReplicas(rules, base, reading.value);
  // Replicas asked for that do not serve yet count as serving nothing (the HPA's rule for unready
  // pods): no scale-up while the demand spread over all `current` is within the tolerance; and an
  // average over no serving replica says nothing about how many are needed.
  const demand = isTotal(rules) ? reading.value / rules.target : (base * reading.value) / rules.target;
  const blind = !isTotal(rules) && base === 0;
  const warming = signalled > current && base < current && demand / current <= 1 + rules.tolerance;
  const raw = blind || warming ? current : signalled;
  const recommendation = bounded(raw);
  // What this reading says of `base` serving replicas at its request rate: too few (above the band) or enough.
  const facts = rps === null ? known : learn(known, base, rps, usage > 1 + rules.tolerance);
  // The guards come with the down window: without one, the recommendation goes straight through.
  const guarded = rules.scaleDownStabilizationMs > 0;
  const window = (ms: number) => [...keep.filter((r) => r.at > at - ms), entry(raw)];
  let desired = current;
  let why: string;
  const measured = `${describe(rules, reading.value)} against a target of ${isTotal(rules) ? `${round(rules.target)} per replica` : describe(rules, rules.target)}`;
  if (recommendation > current) {
    // Up only as far as every recommendation in the up window agrees.
    const floor = Math.min(...window(rules.scaleUpStabilizationMs).map((r) => bounded(r.replicas)));
    const hpa = Math.min(Math.max(current, floor), current + rules.maxScaleUpStep);
    // The up guard: no further than the fewest replicas found enough at this traffic or more.
    const enough = guarded && hpa > current && rps !== null ? enoughAt(facts, rps) : undefined;
    const capped = enough && enough.replicas < hpa ? Math.max(current, enough.replicas) : hpa;
    // Not more while the scheduler has not admitted the replicas already asked for.
    const refused = scheduler !== undefined && scheduler.admitted < current && capped > current;
    desired = refused ? current : capped;
    const asks = `${measured} asks for ${recommendation}`;
    const shown = capped < hpa ? `${enough!.replicas} were enough at ${round(enough!.rps)} req/s` : '';
    why = refused
      ? `${asks}; held at ${current}: the scheduler admitted ${scheduler.admitted} of the ${current} asked for${scheduler.whyNotMore ? ` (${scheduler.whyNotMore})` : ''}`
      : desired === current
        ? `${asks}; held at ${current} ${shown ? `(${shown}; ${current - base} not serving yet)` : `until it has for ${rules.scaleUpStabilizationMs / 1000} s`}`
        : `${measured}: ${current} → ${desired}${desired < recommendation ? ` (asks for ${recommendation}; ${shown || (floor < recommendation ? 'stabilizing' : `at most +${rules.maxScaleUpStep} a step`)})` : ''}`;
  } else if (recommendation < current) {
    // Down only as far as the highest recommendation in the down window allows.
    const down = window(rules.scaleDownStabilizationMs);
    const ceiling = Math.max(...down.map((r) => bounded(r.replicas)));
    desired = Math.max(Math.min(current, ceiling), current - rules.maxScaleDownStep);
    // The down guard: not to a count found too few while, at the window's peak traffic, it would be above the band's bottom.
    const rates = down.flatMap((r) => (r.rps === undefined ? [] : [r.rps]));
    const peak = rates.length > 0 ? Math.max(...rates) : null;
    const refusing =
      guarded && desired < current && peak !== null
        ? refusingDown(facts, desired, peak, rules.tolerance)
        : undefined;
    const held = refusing ? Math.min(current, refusing.replicas + 1) : desired;
    const guard = refusing
      ? `${refusing.replicas} were too few at ${round(refusing.rps)} req/s and the last ${rules.scaleDownStabilizationMs / 1000} s peaked at ${round(peak!)} req/s`
      : '';
    why =
      held === current
        ? `${measured} asks for ${recommendation}; held at ${current}${refusing ? `: ${guard}` : ` for the ${rules.scaleDownStabilizationMs / 1000} s down window`}`
        : `${measured}: ${current} → ${held}${held > recommendation ? ` (asks for ${recommendation}; ${refusing ? guard : ceiling > recommendation ? 'stabilizing' : `at most −${rules.maxScaleDownStep} a step`})` : ''}`;
    desired = held;
  } else
    why = blind
      ? `${measured}, but no replica serves yet: held at ${current}`
      : warming
        ? `${measured} over ${base} serving asks for ${bounded(signalled)}; held at ${current}: over all ${current}, ${current - base} of them not serving yet, it is within the tolerance`
        : `${measured}: ${current} is right`;
  return done(bounded(desired), raw, why, false, remember([...keep, entry(raw)], facts));
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
