// Seeded inference services for the inference comparison (docs/simulator-inference.md): each a
// diurnal traffic curve, a queueing latency model, an SLA target, and the sizes every strategy
// derives from the same curve (the static reservation, the coordinated minimums), so the three
// strategies serve exactly the same demand.
import {
  type LatencyModel,
  type MinimumWindow,
  replicasFor,
  type ScalingRules,
  type TrafficModel,
} from '../../core/inference/index.js';
import { Prng } from '../prng.js';

/** The day window (UTC, every day): higher minimums and the static day reservation. */
export const DAY_WINDOW = { start: '08:00', end: '20:00', timeZone: 'UTC' } as const;
const DAY_START_H = 8;
const DAY_END_H = 20;
const ALL_DAYS = [0, 1, 2, 3, 4, 5, 6];

/** Replica use at which the SLA's p95 is reached (p95 = service p95 / (1 − ρ)). */
export const SLA_UTILIZATION = 0.75;
/** Replica use the autoscalers aim at: below the SLA's, so they scale before it is breached. */
export const TARGET_UTILIZATION = 0.6;

export interface ServiceSpec {
  name: string;
  /** Its own tenant and queue. */
  tenant: string;
  queue: string;
  gpusPerReplica: number;
  traffic: TrafficModel;
  latency: LatencyModel;
  /** A service-minute meets the SLA when its p95 is at or below this. */
  targetP95Ms: number;
  signal: 'IN_FLIGHT' | 'P95_LATENCY_MS';
  /** The autoscalers' target for the signal (per replica for IN_FLIGHT), at TARGET_UTILIZATION. */
  signalTarget: number;
  /** From admission until the replica serves (image pull, model load). */
  warmupMs: number;
  /** Static: replicas for the day window's peak (noise included) at the SLA target. */
  dayReplicas: number;
  /** Static: the same for the night. */
  nightReplicas: number;
  /** Coordinated minimums: replicas the window's lowest traffic (noise-free curve) needs. */
  dayMinimum: number;
  nightMinimum: number;
  maxReplicas: number;
}

/** What a service is made of; the sizes are derived from it (`serviceFrom`). */
export interface ServiceParams {
  name: string;
  gpusPerReplica: number;
  traffic: TrafficModel;
  latency: LatencyModel;
  signal: ServiceSpec['signal'];
  warmupMs: number;
}

const curveAt = (t: TrafficModel, hour: number): number =>
  t.meanRps * (1 + t.amplitude * Math.cos((2 * Math.PI * (hour - t.peakHour)) / 24));

/** Lowest and highest noise-free rate over [fromH, toH) (hours, may pass midnight), sampled each minute. */
export function curveRange(t: TrafficModel, fromH: number, toH: number): { min: number; max: number } {
  const span = (((toH - fromH) % 24) + 24) % 24 || 24;
  let min = Number.POSITIVE_INFINITY;
  let max = 0;
  for (let m = 0; m < span * 60; m++) {
    const r = curveAt(t, (fromH + m / 60) % 24);
    if (r < min) min = r;
    if (r > max) max = r;
  }
  return { min, max };
}

export function serviceFrom(p: ServiceParams): ServiceSpec {
  const targetP95Ms = p.latency.serviceP95Ms / (1 - SLA_UTILIZATION);
  const day = curveRange(p.traffic, DAY_START_H, DAY_END_H);
  const night = curveRange(p.traffic, DAY_END_H, DAY_START_H);
  const peak = (rps: number) => Math.max(1, replicasFor(p.latency, rps * (1 + p.traffic.noise), targetP95Ms));
  const floor = (rps: number) => Math.max(1, replicasFor(p.latency, rps, targetP95Ms));
  const dayReplicas = peak(day.max);
  const targetP95 = p.latency.serviceP95Ms / (1 - TARGET_UTILIZATION);
  const signalTarget =
    p.signal === 'P95_LATENCY_MS'
      ? targetP95
      : (p.latency.throughputPerReplica * TARGET_UTILIZATION * targetP95) / 1000;
  return {
    name: p.name,
    tenant: `svc-${p.name}`,
    queue: `svc-${p.name}`,
    gpusPerReplica: p.gpusPerReplica,
    traffic: p.traffic,
    latency: p.latency,
    targetP95Ms,
    signal: p.signal,
    signalTarget,
    warmupMs: p.warmupMs,
    dayReplicas,
    nightReplicas: peak(night.max),
    dayMinimum: floor(day.min),
    nightMinimum: floor(night.min),
    // Room above the static peak for the autoscalers' overshoot (the HPA's maxReplicas).
    maxReplicas: 2 * dayReplicas,
  };
}

const GPU_CHOICES = [1, 2, 4] as const;
const NAMES = ['chat', 'search', 'embed', 'vision', 'speech', 'rerank', 'code', 'translate'];

/**
 * `count` services drawn from `seed` (mulberry32): replica sizes of 1, 2 or 4 GPUs, 6–14 replicas
 * at the day peak, peaks between 11:00 and 17:00 UTC, so services contend at different hours.
 */
export type SignalChoice = 'mixed' | ServiceSpec['signal'];

export function generateServices(seed: number, count = 4, signal: SignalChoice = 'mixed'): ServiceSpec[] {
  const rng = new Prng(seed * 7919 + 17);
  const u = (lo: number, hi: number) => lo + (hi - lo) * rng.next();
  const out: ServiceSpec[] = [];
  for (let i = 0; i < count; i++) {
    const gpusPerReplica = GPU_CHOICES[rng.int(GPU_CHOICES.length)]!;
    const serviceP95Ms = Math.round(u(50, 200));
    const throughputPerReplica = Math.round(u(4, 32));
    const amplitude = Math.round(u(0.35, 0.65) * 100) / 100;
    const noise = Math.round(u(0.03, 0.1) * 100) / 100;
    const peakReplicas = 6 + rng.int(9);
    // The day peak lands at about `peakReplicas` replicas at the SLA's use.
    const meanRps =
      Math.round(
        ((peakReplicas * throughputPerReplica * SLA_UTILIZATION) / ((1 + amplitude) * (1 + noise))) * 10,
      ) / 10;
    out.push(
      serviceFrom({
        name: `${NAMES[i % NAMES.length]}${i >= NAMES.length ? i : ''}`,
        gpusPerReplica,
        traffic: {
          seed: (seed * 1000 + i) >>> 0,
          meanRps,
          amplitude,
          peakHour: Math.round(u(11, 17) * 4) / 4,
          noise,
        },
        latency: { throughputPerReplica, serviceP95Ms, overloadP95Ms: 30_000 },
        signal: signal !== 'mixed' ? signal : i % 2 === 0 ? 'IN_FLIGHT' : 'P95_LATENCY_MS',
        warmupMs: Math.round(u(60, 180)) * 1000,
      }),
    );
  }
  return out;
}

/** GPUs the static day reservation holds: what the inference nodes added to the cluster must carry. */
export const reservedGpus = (services: readonly ServiceSpec[]): number =>
  services.reduce((s, x) => s + x.dayReplicas * x.gpusPerReplica, 0);

/** Coordinated's step limits per decision (the HPA's scale-up and scale-down policies), and its up window. */
export const DEFAULT_STEPS = { up: 4, down: 1, upWindowMs: 0 } as const;
export type Steps = { up: number; down: number; upWindowMs: number };

/** Coordinated: HPA-like rules (±10% tolerance, 5 min down window, steps), day and night minimums. */
export function coordinatedRules(s: ServiceSpec, steps: Steps = DEFAULT_STEPS): ScalingRules {
  const dayMinimum: MinimumWindow = { days: ALL_DAYS, ...DAY_WINDOW, minReplicas: s.dayMinimum };
  return {
    signal: s.signal,
    target: s.signalTarget,
    minReplicas: s.nightMinimum,
    maxReplicas: s.maxReplicas,
    minimumWindows: [dayMinimum],
    scaleUpStabilizationMs: steps.upWindowMs,
    scaleDownStabilizationMs: 300_000,
    maxScaleUpStep: steps.up,
    maxScaleDownStep: steps.down,
    tolerance: 0.1,
    scaleToZeroAfterMs: null,
  };
}

/** Independent: the recommendation straight from the signal each interval (no tolerance, window or step). */
export function independentRules(s: ServiceSpec): ScalingRules {
  return {
    signal: s.signal,
    target: s.signalTarget,
    minReplicas: s.nightMinimum,
    maxReplicas: s.maxReplicas,
    scaleUpStabilizationMs: 0,
    scaleDownStabilizationMs: 0,
    maxScaleUpStep: s.maxReplicas,
    maxScaleDownStep: s.maxReplicas,
    tolerance: 0,
    scaleToZeroAfterMs: null,
  };
}

/** Is `at` inside the day window? */
export function isDay(at: number): boolean {
  const h = (((at % 86_400_000) + 86_400_000) % 86_400_000) / 3_600_000;
  return h >= DAY_START_H && h < DAY_END_H;
}
