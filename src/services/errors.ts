import { SchedulerInputError } from '../core/scheduling/index.js';
import { badInput } from '../shared/index.js';

/** Scheduler refusals are the caller's input problems; their messages say what is wrong. */
export function schedulerInputError(error: unknown): never {
  // The core names the job by its internal id, which means nothing to the caller yet.
  if (error instanceof SchedulerInputError)
    throw badInput(error.message.replace(/^job [0-9a-f-]{36}\/?/, 'pod set ').replace(/^pod set : /, ''), {
      reason: error.code,
    });
  throw error;
}
