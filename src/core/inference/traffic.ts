// A service's traffic and latency, modelled (pure, seeded): a diurnal request curve with noise,
// and the latency its replicas give at that load (queueing: latency grows as they fill up). The
// simulated cluster reads a service's signals from it, and the simulator measures SLA with it.

export interface TrafficModel {
  /** Seed of the noise (per service). */
  seed: number;
  /** Requests per second at the daily mean. */
  meanRps: number;
  /** 0..1: the curve's swing around the mean (0.6: from 40% to 160% of it). */
  amplitude: number;
  /** Hour of the day (0..24, in the model's zone: UTC) at which traffic peaks. */
  peakHour: number;
  /** 0..1: relative noise per minute. */
  noise: number;
}

export interface LatencyModel {
  /** Requests per second one replica serves at full use. */
  throughputPerReplica: number;
  /** p95 of one request on an idle replica, ms. */
  serviceP95Ms: number;
  /** The p95 reported when replicas are overloaded (requests time out): ms. */
  overloadP95Ms: number;
}

export interface ServiceLoad {
  rps: number;
  p95Ms: number;
  /** Requests in flight (Little's law: rate × time in the system). */
  inFlight: number;
  /** 0..1 and more: load over what the replicas can serve. */
  utilization: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** A number in [0, 1) from the seed and an integer (murmur3's finalizer). */
function hashUnit(seed: number, n: number): number {
  let h = (seed ^ Math.imul(n, 0x9e3779b1)) >>> 0;
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return ((h ^ (h >>> 16)) >>> 0) / 4294967296;
}

/** Requests per second at `at` (ms epoch): the diurnal curve with its per-minute noise, never below 0. */
export function requestRate(model: TrafficModel, at: number): number {
  const hourOfDay = (((at % DAY) + DAY) % DAY) / HOUR;
  const curve = 1 + model.amplitude * Math.cos((2 * Math.PI * (hourOfDay - model.peakHour)) / 24);
  const jitter = 1 + model.noise * (2 * hashUnit(model.seed, Math.floor(at / 60_000)) - 1);
  return Math.max(0, model.meanRps * curve * jitter);
}

/**
 * What `replicas` ready replicas give at `rps`: the p95 grows with their use as a queue's does
 * (×1/(1−ρ)), up to the overload figure when they cannot keep up.
 */
export function serviceLoad(latency: LatencyModel, replicas: number, rps: number): ServiceLoad {
  const capacity = replicas * latency.throughputPerReplica;
  const utilization = capacity > 0 ? rps / capacity : rps > 0 ? Number.POSITIVE_INFINITY : 0;
  const p95Ms =
    rps === 0
      ? 0
      : utilization >= 0.98
        ? latency.overloadP95Ms
        : Math.min(latency.overloadP95Ms, latency.serviceP95Ms / (1 - utilization));
  return { rps, p95Ms, inFlight: (rps * p95Ms) / 1000, utilization };
}

/** Replicas needed to keep the p95 within `targetMs` at `rps` (the least that does). */
export function replicasFor(latency: LatencyModel, rps: number, targetMs: number): number {
  if (rps <= 0) return 0;
  // p95 = service / (1 − ρ) ≤ target  ⇔  ρ ≤ 1 − service/target.
  const maxUse = Math.max(0.01, Math.min(0.98, 1 - latency.serviceP95Ms / targetMs));
  // Less a hair: rps / (μ·ρ) that is a whole number in exact arithmetic must not round up.
  return Math.ceil(rps / (latency.throughputPerReplica * maxUse) - 1e-9);
}
