// An inference service as a client describes it, its checks (BAD_USER_INPUT naming the field, before
// anything is written) and the defaults the autoscaler starts from.
import type { MinimumWindow, ScalingRules } from '../../core/inference/index.js';
import type { PodSetSpec } from '../../core/scheduling/index.js';
import { parseClock } from '../../core/scheduling/index.js';
import type {
  InferenceService,
  ServiceContainer,
  StoredScaling,
  StoredTraffic,
} from '../../persistence/inference/index.js';
import { badInput } from '../../shared/index.js';

export interface ServiceSpecInput {
  container: ServiceContainer;
  port: number;
  /** One replica's pods: `count` > 1 spans several hosts. */
  replica: PodSetSpec;
}

export interface ServiceBoundsInput {
  minReplicas: number;
  maxReplicas: number;
  minimumWindows: MinimumWindow[];
}

export interface CreateServiceInput extends ServiceSpecInput, ServiceBoundsInput {
  queueId?: string | null;
  projectId?: string | null;
  name: string;
  scaling: StoredScaling;
  latencyObjectiveMs: number | null;
  maxSurge: number;
  guaranteedClass: string;
  burstClass: string;
  traffic: StoredTraffic | null;
}

/** What an update may change; absent fields stay. A change of the spec rolls the replicas. */
export interface UpdateServiceInput extends Partial<ServiceSpecInput>, Partial<ServiceBoundsInput> {
  scaling?: Partial<StoredScaling>;
  latencyObjectiveMs?: number | null;
  maxSurge?: number;
  traffic?: StoredTraffic | null;
}

/** The HorizontalPodAutoscaler's defaults where it has them (tolerance, the 5-minute down window). */
export const DEFAULT_SCALING: Omit<StoredScaling, 'signal' | 'target'> = {
  scaleUpStabilizationMs: 0,
  scaleDownStabilizationMs: 300_000,
  maxScaleUpStep: 4,
  maxScaleDownStep: 2,
  tolerance: 0.1,
  scaleToZeroAfterMs: null,
};

export const MAX_REPLICAS = 256;
const HOUR = 3_600_000;
const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

const refuse = (field: string, message: string) => badInput(message, { field });

export function checkName(name: string): void {
  if (!NAME.test(name))
    throw refuse('name', 'Use lowercase letters, digits and dashes (at most 63), as a Kubernetes name.');
}

export function checkSpec(spec: ServiceSpecInput): void {
  if (!Number.isInteger(spec.port) || spec.port < 1 || spec.port > 65_535)
    throw refuse('port', `The port must be 1–65535 (got ${spec.port}).`);
  if (!spec.container.image.trim()) throw refuse('container.image', 'Name the image the replicas run.');
  const gpu = spec.replica.perPod.gpu ?? 0;
  if (!(gpu > 0))
    throw refuse('replica.gpusPerPod', 'An inference replica needs GPUs: gpusPerPod must be above 0.');
  if (spec.replica.count < 1 || spec.replica.count > 64)
    throw refuse('replica.count', 'A replica has 1 to 64 pods (more than one: it spans several hosts).');
}

export function checkBounds(
  bounds: ServiceBoundsInput,
  scaling: Pick<StoredScaling, 'scaleToZeroAfterMs'>,
): void {
  const { minReplicas: min, maxReplicas: max } = bounds;
  if (!Number.isInteger(min) || min < 0) throw refuse('minReplicas', 'minReplicas must be 0 or more.');
  if (!Number.isInteger(max) || max < 1 || max > MAX_REPLICAS)
    throw refuse('maxReplicas', `maxReplicas must be 1 to ${MAX_REPLICAS}.`);
  if (min > max) throw refuse('minReplicas', `minReplicas (${min}) must not exceed maxReplicas (${max}).`);
  bounds.minimumWindows.forEach((w, i) => {
    const field = `minimumWindows[${i}]`;
    if (!Number.isInteger(w.minReplicas) || w.minReplicas < 0 || w.minReplicas > max)
      throw refuse(`${field}.minReplicas`, `A window's minimum must be 0 to maxReplicas (${max}).`);
    if (!w.days.length || w.days.some((d) => !Number.isInteger(d) || d < 0 || d > 6))
      throw refuse(`${field}.days`, 'Days are 0 (Sunday) to 6 (Saturday), at least one.');
    try {
      parseClock(w.start);
      parseClock(w.end);
    } catch {
      throw refuse(`${field}.start`, 'Times are HH:MM (24-hour).');
    }
    try {
      new Intl.DateTimeFormat('en-US', { timeZone: w.timeZone });
    } catch {
      throw refuse(`${field}.timeZone`, `Unknown time zone "${w.timeZone}".`);
    }
  });
  if (scaling.scaleToZeroAfterMs !== null) {
    const floors = [min, ...bounds.minimumWindows.map((w) => w.minReplicas)];
    if (floors.some((m) => m > 0))
      throw refuse(
        'scaling.scaleToZeroAfterSeconds',
        'Scale to zero needs a minimum of 0 (minReplicas and every window): a minimum keeps replicas up.',
      );
  }
}

export function checkScaling(s: StoredScaling): void {
  if (!(s.target > 0) || !Number.isFinite(s.target))
    throw refuse('scaling.target', `The target must be a positive number (got ${s.target}).`);
  if (s.signal === 'GPU_UTILIZATION' && s.target > 1)
    throw refuse('scaling.target', 'A GPU utilization target is a share from 0 to 1 (0.7: 70%).');
  for (const [field, ms] of [
    ['scaleUpStabilizationSeconds', s.scaleUpStabilizationMs],
    ['scaleDownStabilizationSeconds', s.scaleDownStabilizationMs],
  ] as const)
    if (!(ms >= 0) || ms > HOUR)
      throw refuse(`scaling.${field}`, 'A stabilization window is 0 to 3600 seconds.');
  for (const [field, n] of [
    ['maxScaleUpStep', s.maxScaleUpStep],
    ['maxScaleDownStep', s.maxScaleDownStep],
  ] as const)
    if (!Number.isInteger(n) || n < 1 || n > MAX_REPLICAS)
      throw refuse(`scaling.${field}`, `A step is 1 to ${MAX_REPLICAS} replicas.`);
  if (!(s.tolerance >= 0) || s.tolerance >= 1)
    throw refuse('scaling.tolerance', 'The tolerance is from 0 to below 1.');
  if (
    s.scaleToZeroAfterMs !== null &&
    !(s.scaleToZeroAfterMs >= 60_000 && s.scaleToZeroAfterMs <= 7 * 24 * HOUR)
  )
    throw refuse(
      'scaling.scaleToZeroAfterSeconds',
      'Scale to zero after 60 seconds to 7 days without a request.',
    );
}

export function checkRest(
  input: Pick<CreateServiceInput, 'latencyObjectiveMs' | 'maxSurge' | 'traffic'>,
): void {
  if (
    input.latencyObjectiveMs !== null &&
    !(input.latencyObjectiveMs > 0 && input.latencyObjectiveMs <= 600_000)
  )
    throw refuse('latencyObjectiveMs', 'The latency objective is a p95 in ms, above 0 and at most 600000.');
  if (!Number.isInteger(input.maxSurge) || input.maxSurge < 1 || input.maxSurge > MAX_REPLICAS)
    throw refuse('maxSurge', `maxSurge is 1 to ${MAX_REPLICAS} replicas.`);
  const t = input.traffic;
  if (t) {
    if (!(t.traffic.meanRps >= 0) || !(t.traffic.amplitude >= 0 && t.traffic.amplitude <= 1))
      throw refuse('simulatedTraffic', 'meanRps must be 0 or more and amplitude 0 to 1.');
    if (!(t.latency.throughputPerReplica > 0) || !(t.latency.serviceP95Ms > 0))
      throw refuse('simulatedTraffic', 'throughputPerReplica and serviceP95Ms must be above 0.');
  }
}

/** Every check of a new service. */
export function checkCreate(input: CreateServiceInput): void {
  checkName(input.name);
  checkSpec(input);
  checkScaling(input.scaling);
  checkBounds(input, input.scaling);
  checkRest(input);
}

/** The core's rules for a stored service. */
export function scalingRules(s: InferenceService): ScalingRules {
  return {
    ...s.scaling,
    minReplicas: s.minReplicas,
    maxReplicas: s.maxReplicas,
    minimumWindows: s.minimumWindows,
  };
}

/** The modelled traffic of a service without one (the simulated cluster): seeded from its id. */
export function defaultTraffic(serviceId: string): StoredTraffic {
  let seed = 0;
  for (const ch of serviceId) seed = (Math.imul(seed, 31) + ch.charCodeAt(0)) >>> 0;
  return {
    traffic: { seed, meanRps: 20, amplitude: 0.6, peakHour: 14, noise: 0.1 },
    latency: { throughputPerReplica: 10, serviceP95Ms: 60, overloadP95Ms: 5_000 },
  };
}
