import { z } from 'zod';
import { atIndex, MAX_BATCH_JOBS, requireBatchSize, submitJobs } from '../../src/services/jobs/index.js';
import { builder } from '../builder.js';
import { JobRef } from '../refs.js';
import { SubmitJobInputRef, toSubmitInput, validateSubmit } from './job-submit.js';

builder.mutationFields((t) => ({
  submitJobs: t.field({
    type: [JobRef],
    description:
      `Submits 1 to ${MAX_BATCH_JOBS} jobs at once (a sweep, a pipeline's stages), all or nothing: any refused job refuses the call, naming its index, and nothing is written. ` +
      'Each job may carry its own idempotencyKey (distinct within the call): a retried call returns the jobs the first one made. Answers in input order. ' +
      "Needs jobs:write in the queues' tenant (one tenant per call) and to be a contributor of each job's project.",
    authScopes: { authenticated: true },
    args: {
      jobs: t.arg({
        type: [SubmitJobInputRef],
        required: true,
        // The count is checked by the service (its message names the limit); here each job's own cross-field
        // rule.
        validate: z.array(z.any().refine(validateSubmit, 'minCount must not exceed count')),
      }),
    },
    resolve: (_r, { jobs }, ctx) => {
      // A 1,001-job call is refused before any of it is converted.
      requireBatchSize(jobs.length);
      const inputs = jobs.map((job, index) => {
        try {
          return toSubmitInput(job);
        } catch (error) {
          atIndex(index, error);
        }
      });
      return submitJobs(ctx, inputs);
    },
  }),
}));
