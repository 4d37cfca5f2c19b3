// A service file (YAML) for `fairway serve`, checked before anything is sent, as a job file is
// (job-file.ts: syntax and shape errors name file:line). Its fields are CreateInferenceServiceInput's,
// with the queue and project by name (or ID) as in a job file. Rules across fields (bounds, a
// target's range, scale to zero with a minimum) are the server's: it refuses them with
// BAD_USER_INPUT and writes nothing.
import { z } from 'zod';
import { parseYamlFile, TargetFields } from './job-file.js';
import type { CreateServiceInput, UpdateServiceInput } from './operations.js';

const name = z.string().trim().min(1);
const int = z.int();
const seconds = z.number();

const EnvVar = z.strictObject({ name, value: z.string(), secret: z.boolean().optional() });

const Container = z.strictObject({
  image: name,
  command: z.array(z.string()).optional(),
  args: z.array(z.string()).optional(),
  /** A map (MODEL: llama) or the graph's list of {name, value, secret}. */
  env: z
    .union([z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])), z.array(EnvVar)])
    .optional(),
});

/** PodSetInput: one replica's pods. */
const Replica = z.strictObject({
  name: name.optional(),
  count: int.optional(),
  minCount: int.optional(),
  /** Whole GPUs, a fraction of one, or MIG slices / time-sliced shares on such flavors. */
  gpusPerPod: z.number().optional(),
  cpuMillisPerPod: int.optional(),
  memoryMiBPerPod: int.optional(),
  flavors: z.array(name).min(1).optional(),
});

const MinimumWindow = z.strictObject({
  days: z.array(int).min(1),
  start: name,
  end: name,
  timeZone: name,
  minReplicas: int,
});

export const SCALING_SIGNALS = [
  'IN_FLIGHT',
  'REQUESTS_PER_SECOND',
  'P95_LATENCY_MS',
  'GPU_UTILIZATION',
] as const;

const Scaling = z.strictObject({
  signal: z.enum(SCALING_SIGNALS),
  target: z.number(),
  scaleUpStabilizationSeconds: seconds.optional(),
  scaleDownStabilizationSeconds: seconds.optional(),
  maxScaleUpStep: int.optional(),
  maxScaleDownStep: int.optional(),
  tolerance: z.number().optional(),
  scaleToZeroAfterSeconds: seconds.optional(),
});

const SimulatedTraffic = z.strictObject({
  meanRps: z.number(),
  amplitude: z.number().optional(),
  peakHour: z.number().optional(),
  noise: z.number().optional(),
  throughputPerReplica: z.number(),
  serviceP95Ms: z.number(),
  seed: int.optional(),
});

export const ServiceFileSchema = z.strictObject({
  /** Unique in the tenant: serving a file whose service exists updates it. */
  name,
  ...TargetFields,
  container: Container,
  port: int,
  replica: Replica,
  minReplicas: int,
  maxReplicas: int,
  /** A different minimum while a weekly window is open (the day's minimum; the night's is minReplicas). */
  minimumWindows: z.array(MinimumWindow).optional(),
  scaling: Scaling,
  latencyObjectiveMs: z.number().optional(),
  maxSurge: int.optional(),
  guaranteedClass: name.optional(),
  burstClass: name.optional(),
  /** Simulated cluster only: the service's modelled traffic. */
  simulatedTraffic: SimulatedTraffic.optional(),
});

export type ServiceFile = z.infer<typeof ServiceFileSchema>;

/** Parses and validates; throws CliError(USAGE) listing every problem as file:line: path: message. */
export function parseServiceFile(source: string, file: string): ServiceFile {
  return parseYamlFile(source, file, ServiceFileSchema, 'service');
}

function container(c: ServiceFile['container']): CreateServiceInput['container'] {
  const { env, ...rest } = c;
  if (env === undefined) return rest;
  return {
    ...rest,
    env: Array.isArray(env) ? env : Object.entries(env).map(([k, v]) => ({ name: k, value: String(v) })),
  };
}

/** The file as the graph's create input, with the queue and project as IDs. */
export function toCreateInput(
  s: ServiceFile,
  ids: { queueId?: string; projectId?: string },
): CreateServiceInput {
  const input: CreateServiceInput = {
    name: s.name,
    container: container(s.container),
    port: s.port,
    replica: s.replica,
    minReplicas: s.minReplicas,
    maxReplicas: s.maxReplicas,
    scaling: s.scaling,
    ...ids,
  };
  if (s.minimumWindows) input.minimumWindows = s.minimumWindows;
  if (s.latencyObjectiveMs !== undefined) input.latencyObjectiveMs = s.latencyObjectiveMs;
  if (s.maxSurge !== undefined) input.maxSurge = s.maxSurge;
  if (s.guaranteedClass) input.guaranteedClass = s.guaranteedClass;
  if (s.burstClass) input.burstClass = s.burstClass;
  if (s.simulatedTraffic) input.simulatedTraffic = s.simulatedTraffic;
  return input;
}

/**
 * The file as an update of the existing service: what it runs, its bounds and its scaling as the
 * file says (absent windows: none; absent maxSurge: 1, as a new service would have). The update
 * input cannot clear latencyObjectiveMs or simulatedTraffic: left out, they stay as they are.
 */
export function toUpdateInput(s: ServiceFile): UpdateServiceInput {
  const input: UpdateServiceInput = {
    container: container(s.container),
    port: s.port,
    replica: s.replica,
    minReplicas: s.minReplicas,
    maxReplicas: s.maxReplicas,
    minimumWindows: s.minimumWindows ?? [],
    scaling: s.scaling,
    maxSurge: s.maxSurge ?? 1,
  };
  if (s.latencyObjectiveMs !== undefined) input.latencyObjectiveMs = s.latencyObjectiveMs;
  if (s.simulatedTraffic) input.simulatedTraffic = s.simulatedTraffic;
  return input;
}
