import { z } from 'zod';
import type { ProbeSample, ProbeSummary } from '../../src/services/governance/index.js';
import { jobProbes, jobUtilization, MAX_PROBE_SAMPLES } from '../../src/services/governance/index.js';
import { builder } from '../builder.js';
import { WorkloadTypeEnum } from '../common.js';
import { JobRef } from '../refs.js';

// Runtime probes of a job: the signals declared at submit and the time series the backend
// reports while it runs. Metadata, like Job.gpuUtilization: whoever may read the job reads them
// (platform admins too — they run the GPUs these figures are about); the job's content is elsewhere.

const ProbeSampleRef = builder.objectRef<ProbeSample>('ProbeSample').implement({
  description:
    'One stored probe reading: the mean of the reports over one probe interval (FAIRWAY_PROBE_INTERVAL_MS).',
  fields: (t) => ({
    at: t.field({ type: 'DateTime', resolve: (s) => new Date(s.at) }),
    gpuUtilization: t.exposeFloat('gpuUtilization', { description: "Mean over the job's GPUs, 0..1." }),
    memoryUtilization: t.float({
      nullable: true,
      description: 'GPU memory in use over GPU memory, 0..1; null when the source does not say.',
      resolve: (s) => s.memoryUtilization,
    }),
  }),
});

const JobUtilizationRef = builder.objectRef<ProbeSummary>('JobUtilization').implement({
  description: "Summary of the job's stored probe samples.",
  fields: (t) => ({
    samples: t.exposeInt('samples', { description: 'Stored samples so far (retention does not lower it).' }),
    meanGpu: t.exposeFloat('meanGpu', { description: 'Mean GPU utilization over its stored samples, 0..1.' }),
    lastGpu: t.exposeFloat('lastGpu'),
    lastMemory: t.float({ nullable: true, resolve: (s) => s.lastMemory }),
    lastAt: t.field({ type: 'DateTime', resolve: (s) => new Date(s.lastAt) }),
  }),
});

builder.objectFields(JobRef, (t) => ({
  workloadType: t.field({
    type: WorkloadTypeEnum,
    nullable: true,
    description: 'What the job declared it is at submit; null: undeclared.',
    resolve: (j) => (j.workloadType ?? null) as never,
  }),
  latencySensitive: t.boolean({
    description: 'Declared at submit as serving latency-sensitive traffic.',
    resolve: (j) => Boolean(j.latencySensitive),
  }),
  probes: t.field({
    type: [ProbeSampleRef],
    description: 'Its last stored probe samples, oldest first (kept FAIRWAY_PROBE_RETENTION_HOURS).',
    args: {
      last: t.arg.int({
        defaultValue: 60,
        validate: z
          .number()
          .int()
          .min(1, 'must be at least 1')
          .max(MAX_PROBE_SAMPLES, `must be at most ${MAX_PROBE_SAMPLES}`),
      }),
    },
    resolve: (j, { last }, ctx) => jobProbes(ctx, j, last ?? 60),
  }),
  utilization: t.field({
    type: JobUtilizationRef,
    nullable: true,
    description: 'Null before its first stored sample.',
    resolve: (j, _a, ctx) => jobUtilization(ctx, j),
  }),
}));
