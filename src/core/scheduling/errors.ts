/** Why an input was refused. Stable strings: callers map them to API errors. */
export type SchedulerInputErrorCode =
  | 'UNKNOWN_QUEUE'
  | 'UNKNOWN_FLAVOR'
  | 'UNKNOWN_PRIORITY_CLASS'
  | 'UNKNOWN_COHORT'
  | 'UNKNOWN_JOB'
  /** Scheduler.reclaim of a job that is not running (pending, or held). */
  | 'NOT_ADMITTED'
  | 'UNKNOWN_NODE'
  | 'NEGATIVE_QUANTITY'
  | 'INVALID_QUANTITY'
  | 'REQUEST_TOO_LARGE'
  | 'DUPLICATE_JOB'
  | 'TENANT_MISMATCH'
  | 'NODE_IN_USE'
  | 'FLAVOR_IN_USE'
  | 'COHORT_CYCLE'
  | 'INVALID_SPEC';

export class SchedulerInputError extends Error {
  readonly code: SchedulerInputErrorCode;
  constructor(code: SchedulerInputErrorCode, message: string) {
    super(message);
    this.name = 'SchedulerInputError';
    this.code = code;
  }
}
