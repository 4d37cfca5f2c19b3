import { z } from 'zod';
import type { SubmitJobInput } from '../../src/services/jobs/index.js';
import {
  ENFORCED_SECURITY,
  type JobContainer,
  keptSecurityContext,
  submitJob,
} from '../../src/services/jobs/index.js';
import { builder } from '../builder.js';
import { decodeId, WorkloadKindEnum, WorkloadTypeEnum } from '../common.js';
import { JobRef } from '../refs.js';

export const PodSetInput = builder.inputType('PodSetInput', {
  fields: (t) => ({
    name: t.string({
      defaultValue: 'main',
      validate: z
        .string()
        .regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'use lowercase letters, digits and dashes'),
    }),
    count: t.int({
      defaultValue: 1,
      validate: z.number().int().min(1, 'at least one pod').max(10_000, 'at most 10000 pods'),
    }),
    minCount: t.int({
      description: 'Gang minimum (default: count).',
      validate: z.number().int().min(1, 'at least one pod'),
    }),
    gpusPerPod: t.float({
      defaultValue: 0,
      description:
        'Whole GPUs, a fraction of one GPU in 1/1000 steps, or slices/shares on MIG and time-sliced flavors.',
      validate: z
        .number()
        .min(0, 'must not be negative')
        .max(64, 'at most 64 per pod')
        .refine((v) => Math.abs(v * 1000 - Math.round(v * 1000)) < 1e-6, 'use steps of 1/1000'),
    }),
    cpuMillisPerPod: t.int({ defaultValue: 0, validate: z.number().int().min(0, 'must not be negative') }),
    memoryMiBPerPod: t.int({ defaultValue: 0, validate: z.number().int().min(0, 'must not be negative') }),
    flavors: t.stringList({
      description: "Flavor preference, best first (default: the queue's order).",
      validate: z.array(z.string().max(63)).max(16),
    }),
  }),
});

const SimulateInput = builder.inputType('SimulateInput', {
  description: 'For the simulated cluster: force how the run ends.',
  fields: (t) => ({
    fail: t.boolean({ defaultValue: false }),
    failAfterSeconds: t.float({ validate: z.number().min(0) }),
  }),
});

/** Longest checkpoint interval accepted: the longest declared run (90 days). */
export const MAX_CHECKPOINT_INTERVAL_SECONDS = 90 * 86_400;

const CheckpointInput = builder.inputType('CheckpointInput', {
  description:
    'How the job saves its progress. A preemption then loses only the work since its last checkpoint (nothing when resumable), and the scheduler prefers victims that lose least.',
  fields: (t) => ({
    intervalSeconds: t.int({
      description: 'The job writes a checkpoint every this many seconds of running (counted from its start).',
      validate: z
        .number()
        .int()
        .positive('must be positive')
        .max(MAX_CHECKPOINT_INTERVAL_SECONDS, 'at most 90 days'),
    }),
    resumable: t.boolean({
      description:
        'The job can be suspended and resumed without losing progress (it checkpoints when told to stop).',
    }),
  }),
});

export const EnvVarInput = builder.inputType('EnvVarInput', {
  fields: (t) => ({
    name: t.string({
      required: true,
      validate: z
        .string()
        .max(256, 'must be at most 256 characters')
        .regex(
          /^[-._a-zA-Z][-._a-zA-Z0-9]*$/,
          'use letters, digits, ".", "_" and "-", not starting with a digit (as Kubernetes)',
        ),
    }),
    value: t.string({
      required: true,
      description: 'Never written to the audit log.',
      validate: z.string().max(32_768, 'must be at most 32768 characters'),
    }),
    secret: t.boolean({
      description:
        'A secret (a token, a password): its value is replaced by [secret] wherever it appears in the job’s logs, and never shown again (ContainerSpec.env says [secret]). Default false.',
    }),
  }),
});

const DatasetMountInput = builder.inputType('DatasetMountInput', {
  fields: (t) => ({
    location: t.string({
      required: true,
      description:
        'A URI: s3://bucket/path, gs://bucket/path, pvc://claim/path, nfs://server/export, https://host/path.',
      validate: z.string().min(1, 'must not be empty').max(2048, 'must be at most 2048 characters'),
    }),
    mountPath: t.string({
      required: true,
      validate: z
        .string()
        .max(1024, 'must be at most 1024 characters')
        .regex(/^\/[^\u0000-\u001f]*$/, 'must be an absolute path (starting with /)')
        .refine(
          (p) => !p.split('/').some((s) => s === '..' || s === '.'),
          'must not contain . or .. segments',
        ),
    }),
    readOnly: t.boolean({ defaultValue: true }),
  }),
});

const ContainerSecurityInput = builder.inputType('ContainerSecurityInput', {
  description: `${ENFORCED_SECURITY}. A container may choose its user and group; asking for anything weaker than the enforced settings is refused (BAD_USER_INPUT).`,
  fields: (t) => ({
    runAsUser: t.int({ description: 'A non-root user id (1 to 2147483647).' }),
    runAsGroup: t.int({ description: 'A group id (0 to 2147483647).' }),
    privileged: t.boolean({ description: 'Only false is accepted.' }),
    allowPrivilegeEscalation: t.boolean({ description: 'Only false is accepted.' }),
    addCapabilities: t.stringList({
      description: 'Only an empty list is accepted: all capabilities are dropped.',
      validate: z
        .array(z.string().max(64, 'each entry must be at most 64 characters'))
        .max(64, 'at most 64 entries'),
    }),
    runAsNonRoot: t.boolean({ description: 'Only true is accepted.' }),
  }),
});

const argList = (what: string) =>
  z.array(z.string().max(4096, 'each entry must be at most 4096 characters')).max(64, `at most 64 ${what}`);

const ContainerInput = builder.inputType('ContainerInput', {
  description:
    "What the job runs. The image, datasets and artifact store must lie within the tenant's and the project's data boundaries.",
  fields: (t) => ({
    image: t.string({
      required: true,
      description: 'An image reference, e.g. nvcr.io/nvidia/pytorch:24.01-py3 (no registry means docker.io).',
      validate: z.string().min(1, 'must not be empty').max(512, 'must be at most 512 characters'),
    }),
    command: t.stringList({ validate: argList('command entries') }),
    args: t.stringList({ validate: argList('arguments') }),
    env: t.field({
      type: [EnvVarInput],
      validate: z
        .array(z.object({ name: z.string() }).passthrough())
        .max(128, 'at most 128 environment variables')
        .refine(
          (env) => new Set(env.map((e) => e.name)).size === env.length,
          'each environment variable name only once',
        ),
    }),
    datasets: t.field({
      type: [DatasetMountInput],
      validate: z
        .array(z.object({ mountPath: z.string() }).passthrough())
        .max(32, 'at most 32 datasets')
        .refine(
          (ds) => new Set(ds.map((d) => d.mountPath.replace(/\/+$/, ''))).size === ds.length,
          'each mount path only once',
        ),
    }),
    artifactStore: t.string({
      description: 'Where the job writes models (a URI, as dataset locations).',
      validate: z.string().min(1, 'must not be empty').max(2048, 'must be at most 2048 characters'),
    }),
    securityContext: t.field({ type: ContainerSecurityInput }),
  }),
});

/** The job a client describes; previewJob (job-preview.ts) takes the same input. */
export const SubmitJobInputRef = builder.inputType('SubmitJobInput', {
  fields: (t) => ({
    queueId: t.id({ description: "Default: the project's default queue." }),
    projectId: t.id(),
    name: t.string({
      required: true,
      validate: z.string().trim().min(1, 'must not be empty').max(200, 'must be at most 200 characters'),
    }),
    priorityClass: t.string({ defaultValue: 'training', validate: z.string().max(63) }),
    podSets: t.field({
      type: [PodSetInput],
      required: true,
      validate: z.array(z.any()).min(1, 'give at least one pod set').max(8, 'at most 8 pod sets'),
    }),
    expectedDurationSeconds: t.float({
      validate: z
        .number()
        .positive('must be positive')
        .max(90 * 86_400, 'at most 90 days'),
    }),
    maxRunSeconds: t.float({
      validate: z
        .number()
        .positive('must be positive')
        .max(90 * 86_400, 'at most 90 days'),
    }),
    checkpoint: t.field({ type: CheckpointInput }),
    workloadKind: t.field({
      type: WorkloadKindEnum,
      defaultValue: 'BATCH',
      description:
        'Which workload controller runs it on Kubernetes: BATCH (batch/v1 Jobs), JOBSET, PYTORCH_JOB (pod sets master and worker), RAY_JOB (pod sets head and workers; the command is the entrypoint) or RAY_CLUSTER (an open-ended Ray cluster under quota). A kind whose CRD the cluster does not serve is refused with BAD_USER_INPUT. Other backends run every kind as pods.',
    }),
    maxRetries: t.int({
      description:
        "How often the job's own failures (a non-zero exit, OOMKilled) are retried in place before it fails: 0–10, default 0. Disruptions by the cluster (eviction, drain, a lost node) are never failures: the job is requeued with its checkpoint whatever this says.",
      validate: z.number().int().min(0, 'must be at least 0').max(10, 'must be at most 10'),
    }),
    workloadType: t.field({
      type: WorkloadTypeEnum,
      description:
        'What the job is (runtime probes, idle reclaim): training, fine-tuning, batch or online inference. Default: undeclared.',
    }),
    latencySensitive: t.boolean({
      defaultValue: false,
      description: 'The job serves latency-sensitive traffic (runtime probes). Default false.',
    }),
    idempotencyKey: t.string({
      description:
        'Send the same key when retrying: the retry returns the first job instead of making another.',
      validate: z.string().min(1).max(128, 'must be at most 128 characters'),
    }),
    simulate: t.field({ type: SimulateInput }),
    container: t.field({ type: ContainerInput }),
  }),
});

type SubmitArgs = typeof SubmitJobInputRef.$inferInput;

export function toSubmitInput(input: SubmitArgs): SubmitJobInput {
  const podSets = input.podSets.map((ps) => {
    return {
      name: ps.name ?? 'main',
      count: ps.count ?? 1,
      ...(ps.minCount != null ? { minCount: ps.minCount } : {}),
      perPod: { gpu: ps.gpusPerPod ?? 0, cpu: ps.cpuMillisPerPod ?? 0, memory: ps.memoryMiBPerPod ?? 0 },
      ...(ps.flavors ? { flavors: ps.flavors } : {}),
    };
  });
  return {
    queueId: input.queueId ? decodeId(String(input.queueId), 'Queue') : null,
    projectId: input.projectId ? decodeId(String(input.projectId), 'Project') : null,
    name: input.name,
    priorityClass: input.priorityClass ?? 'training',
    podSets,
    expectedDurationMs:
      input.expectedDurationSeconds != null ? Math.round(input.expectedDurationSeconds * 1000) : null,
    maxRunMs: input.maxRunSeconds != null ? Math.round(input.maxRunSeconds * 1000) : null,
    checkpoint: input.checkpoint
      ? {
          ...(input.checkpoint.intervalSeconds != null
            ? { intervalMs: input.checkpoint.intervalSeconds * 1000 }
            : {}),
          ...(input.checkpoint.resumable ? { resumable: true } : {}),
        }
      : null,
    idempotencyKey: input.idempotencyKey ?? null,
    workload: workloadOf(input),
    workloadType: input.workloadType ?? null,
    latencySensitive: input.latencySensitive ?? false,
    maxRetries: input.maxRetries ?? 0,
    workloadKind: input.workloadKind ?? 'BATCH',
  };
}

/** The simulated run's outcome and the container, as stored in Job.workload (and hashed for idempotency). */
function workloadOf(input: SubmitArgs): Record<string, unknown> | null {
  const workload: Record<string, unknown> = {};
  if (input.simulate) {
    workload.simulate = {
      outcome: input.simulate.fail ? 'fail' : 'succeed',
      ...(input.simulate.failAfterSeconds != null
        ? { failAfterMs: input.simulate.failAfterSeconds * 1000 }
        : {}),
    };
  }
  const c = input.container;
  if (c) {
    const container: JobContainer = {
      image: c.image,
      command: c.command ?? [],
      args: c.args ?? [],
      env: (c.env ?? []).map((e) => ({
        name: e.name,
        value: e.value,
        ...(e.secret ? { secret: true } : {}),
      })),
      datasets: (c.datasets ?? []).map((d) => ({
        location: d.location,
        mountPath: d.mountPath,
        readOnly: d.readOnly ?? true,
      })),
      artifactStore: c.artifactStore ?? null,
    };
    // Refused here, before any policy or write, for submitJob and previewJob alike; only the user and group
    // are stored.
    const securityContext = keptSecurityContext(c.securityContext);
    if (securityContext) container.securityContext = securityContext;
    workload.container = container;
  }
  return Object.keys(workload).length ? workload : null;
}

export const validateSubmit = (input: SubmitArgs) =>
  input.podSets.every((ps) => ps.minCount == null || ps.minCount <= (ps.count ?? 1));

builder.mutationFields((t) => ({
  submitJob: t.field({
    type: JobRef,
    description: "Needs jobs:write in the queue's tenant (members and tenant admins).",
    authScopes: { authenticated: true },
    args: {
      input: t.arg({
        type: SubmitJobInputRef,
        required: true,
        validate: z.any().refine(validateSubmit, 'minCount must not exceed count'),
      }),
    },
    resolve: (_r, { input }, ctx) => submitJob(ctx, toSubmitInput(input)),
  }),
}));
