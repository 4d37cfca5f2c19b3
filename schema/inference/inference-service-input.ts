import { z } from 'zod';
import type { CreateServiceInput, UpdateServiceInput } from '../../src/services/inference/index.js';
import { DEFAULT_SCALING } from '../../src/services/inference/index.js';
import { builder } from '../builder.js';
import { decodeId } from '../common.js';
import { EnvVarInput, PodSetInput } from '../jobs/index.js';
import { ScalingSignalEnum } from './scaling-signal.js';

const argList = z
  .array(z.string().max(4096, 'each entry must be at most 4096 characters'))
  .max(64, 'at most 64 entries');

const ServiceContainerInput = builder.inputType('ServiceContainerInput', {
  description:
    "What each replica runs. The image must lie within the tenant's and the project's data boundaries.",
  fields: (t) => ({
    image: t.string({ required: true, validate: z.string().min(1, 'must not be empty').max(512) }),
    command: t.stringList({ validate: argList }),
    args: t.stringList({ validate: argList }),
    env: t.field({
      type: [EnvVarInput],
      validate: z.array(z.any()).max(128, 'at most 128 environment variables'),
    }),
  }),
});

const MinimumWindowInput = builder.inputType('MinimumWindowInput', {
  description:
    'A different minimum while a weekly window is open (e.g. weekdays 08:00–20:00: 4; otherwise minReplicas).',
  fields: (t) => ({
    days: t.intList({ required: true, description: '0 (Sunday) to 6.' }),
    start: t.string({ required: true, description: 'HH:MM' }),
    end: t.string({ required: true, description: 'HH:MM' }),
    timeZone: t.string({ required: true, description: 'An IANA zone, e.g. Europe/Berlin.' }),
    minReplicas: t.int({ required: true }),
  }),
});

const ScalingInput = builder.inputType('ScalingInput', {
  fields: (t) => ({
    signal: t.field({ type: ScalingSignalEnum, required: true }),
    target: t.float({
      required: true,
      description:
        'Per replica for IN_FLIGHT and REQUESTS_PER_SECOND; the wanted value for P95_LATENCY_MS (ms) and GPU_UTILIZATION (0..1).',
    }),
    scaleUpStabilizationSeconds: t.float({ description: 'Default 0: up at once.' }),
    scaleDownStabilizationSeconds: t.float({ description: 'Default 300 (the HorizontalPodAutoscaler’s).' }),
    maxScaleUpStep: t.int({ description: 'Replicas added by one decision at most (default 4).' }),
    maxScaleDownStep: t.int({ description: 'Replicas removed by one decision at most (default 2).' }),
    tolerance: t.float({
      description: 'No change while the signal is within this ratio of the target (default 0.1).',
    }),
    scaleToZeroAfterSeconds: t.float({
      description:
        'With a minimum of 0: no replica after this long without a request (the next request cold-starts one). Default: never.',
    }),
  }),
});

const SimulatedTrafficInput = builder.inputType('SimulatedTrafficInput', {
  description: "The simulated cluster's model of this service's traffic (default: seeded from the service).",
  fields: (t) => ({
    meanRps: t.float({ required: true }),
    amplitude: t.float({ defaultValue: 0.6, description: 'Daily swing around the mean, 0..1.' }),
    peakHour: t.float({ defaultValue: 14, description: 'UTC hour of the daily peak.' }),
    noise: t.float({ defaultValue: 0.1 }),
    throughputPerReplica: t.float({ required: true, description: 'Requests per second one replica serves.' }),
    serviceP95Ms: t.float({ required: true, description: 'p95 of a request on an idle replica.' }),
    seed: t.int({ defaultValue: 1 }),
  }),
});

export const CreateInferenceServiceInput = builder.inputType('CreateInferenceServiceInput', {
  fields: (t) => ({
    queueId: t.id({ description: "Default: the project's default queue." }),
    projectId: t.id(),
    name: t.string({ required: true, description: 'Unique in the tenant; a Kubernetes name.' }),
    container: t.field({ type: ServiceContainerInput, required: true }),
    port: t.int({ required: true }),
    replica: t.field({
      type: PodSetInput,
      required: true,
      description: 'One replica: its pods (count > 1 spans hosts) and their GPUs.',
    }),
    minReplicas: t.int({
      required: true,
      description: 'Guaranteed: run within the queue’s nominal in the guaranteed class, never preempted.',
    }),
    maxReplicas: t.int({
      required: true,
      description: 'Replicas above the minimum borrow idle capacity and are reclaimed by lenders.',
    }),
    minimumWindows: t.field({ type: [MinimumWindowInput] }),
    scaling: t.field({ type: ScalingInput, required: true }),
    latencyObjectiveMs: t.float({
      description: 'The p95 (ms) the SLA counts against; default: the target when scaling on P95_LATENCY_MS.',
    }),
    maxSurge: t.int({
      defaultValue: 1,
      description: 'Replicas replaced at once in a rolling update (the new one first, within quota).',
    }),
    guaranteedClass: t.string({ defaultValue: 'inference-critical' }),
    burstClass: t.string({ defaultValue: 'production' }),
    simulatedTraffic: t.field({ type: SimulatedTrafficInput }),
  }),
});

export const UpdateInferenceServiceInput = builder.inputType('UpdateInferenceServiceInput', {
  description:
    'Absent fields stay. A change of container, port or replica rolls the replicas (maxSurge at a time).',
  fields: (t) => ({
    container: t.field({ type: ServiceContainerInput }),
    port: t.int(),
    replica: t.field({ type: PodSetInput }),
    minReplicas: t.int(),
    maxReplicas: t.int(),
    minimumWindows: t.field({ type: [MinimumWindowInput] }),
    scaling: t.field({ type: ScalingInput }),
    latencyObjectiveMs: t.float(),
    maxSurge: t.int(),
    simulatedTraffic: t.field({ type: SimulatedTrafficInput }),
  }),
});

type CreateArgs = typeof CreateInferenceServiceInput.$inferInput;
type UpdateArgs = typeof UpdateInferenceServiceInput.$inferInput;
type ContainerArgs = NonNullable<CreateArgs['container']>;
type PodSetArgs = NonNullable<CreateArgs['replica']>;
type ScalingArgs = NonNullable<CreateArgs['scaling']>;
type TrafficArgs = NonNullable<CreateArgs['simulatedTraffic']>;

const toContainer = (c: ContainerArgs) => ({
  image: c.image,
  command: c.command ?? [],
  args: c.args ?? [],
  env: (c.env ?? []).map((e) => ({ name: e.name, value: e.value, ...(e.secret ? { secret: true } : {}) })),
});

const toReplica = (ps: PodSetArgs) => ({
  name: 'replica',
  count: ps.count ?? 1,
  perPod: { gpu: ps.gpusPerPod ?? 0, cpu: ps.cpuMillisPerPod ?? 0, memory: ps.memoryMiBPerPod ?? 0 },
  ...(ps.flavors ? { flavors: ps.flavors } : {}),
});

const ms = (s: number | null | undefined) => (s == null ? undefined : s * 1000);

function toScaling(s: ScalingArgs) {
  const given = {
    scaleUpStabilizationMs: ms(s.scaleUpStabilizationSeconds),
    scaleDownStabilizationMs: ms(s.scaleDownStabilizationSeconds),
    maxScaleUpStep: s.maxScaleUpStep ?? undefined,
    maxScaleDownStep: s.maxScaleDownStep ?? undefined,
    tolerance: s.tolerance ?? undefined,
  };
  const defined = Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined));
  return {
    ...DEFAULT_SCALING,
    ...defined,
    signal: s.signal,
    target: s.target,
    scaleToZeroAfterMs: ms(s.scaleToZeroAfterSeconds) ?? null,
  };
}

const toTraffic = (t: TrafficArgs) => ({
  traffic: {
    seed: t.seed ?? 1,
    meanRps: t.meanRps,
    amplitude: t.amplitude ?? 0.6,
    peakHour: t.peakHour ?? 14,
    noise: t.noise ?? 0.1,
  },
  latency: {
    throughputPerReplica: t.throughputPerReplica,
    serviceP95Ms: t.serviceP95Ms,
    overloadP95Ms: Math.max(5_000, t.serviceP95Ms * 20),
  },
});

const toWindows = (ws: NonNullable<CreateArgs['minimumWindows']>) =>
  ws.map((w) => ({
    days: w.days,
    start: w.start,
    end: w.end,
    timeZone: w.timeZone,
    minReplicas: w.minReplicas,
  }));

export function toCreateInput(input: CreateArgs): CreateServiceInput {
  const scaling = toScaling(input.scaling);
  return {
    queueId: input.queueId ? decodeId(String(input.queueId), 'Queue') : null,
    projectId: input.projectId ? decodeId(String(input.projectId), 'Project') : null,
    name: input.name,
    container: toContainer(input.container),
    port: input.port,
    replica: toReplica(input.replica),
    minReplicas: input.minReplicas,
    maxReplicas: input.maxReplicas,
    minimumWindows: toWindows(input.minimumWindows ?? []),
    scaling,
    latencyObjectiveMs:
      input.latencyObjectiveMs ?? (scaling.signal === 'P95_LATENCY_MS' ? scaling.target : null),
    maxSurge: input.maxSurge ?? 1,
    guaranteedClass: input.guaranteedClass ?? 'inference-critical',
    burstClass: input.burstClass ?? 'production',
    traffic: input.simulatedTraffic ? toTraffic(input.simulatedTraffic) : null,
  };
}

export function toUpdateInput(input: UpdateArgs): UpdateServiceInput {
  return {
    ...(input.container ? { container: toContainer(input.container) } : {}),
    ...(input.port != null ? { port: input.port } : {}),
    ...(input.replica ? { replica: toReplica(input.replica) } : {}),
    ...(input.minReplicas != null ? { minReplicas: input.minReplicas } : {}),
    ...(input.maxReplicas != null ? { maxReplicas: input.maxReplicas } : {}),
    ...(input.minimumWindows ? { minimumWindows: toWindows(input.minimumWindows) } : {}),
    ...(input.scaling ? { scaling: toScaling(input.scaling) } : {}),
    ...(input.latencyObjectiveMs != null ? { latencyObjectiveMs: input.latencyObjectiveMs } : {}),
    ...(input.maxSurge != null ? { maxSurge: input.maxSurge } : {}),
    ...(input.simulatedTraffic ? { traffic: toTraffic(input.simulatedTraffic) } : {}),
  };
}
