export * from './types.js';
export { SchedulerInputError, type SchedulerInputErrorCode } from './errors.js';
export { Scheduler, DEFAULT_PRIORITY_CLASSES } from './scheduler.js';
