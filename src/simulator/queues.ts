// The simulator's queues file: its types (queues-types.ts), schema (queues-schema.ts), reading and
// validation (queues-parse.ts) and the quotas of a validated queue (queues-quotas.ts). This file re-exports
// what callers import from it.
export { checkQueuesAgainstCluster, parseQueues, readQueues } from './queues-parse.js';
export { coreTimeWindows, nominalGpus, queueAt } from './queues-quotas.js';
export type {
  Resource,
  ResourceQuota,
  SimCohort,
  SimPreemption,
  SimQueue,
  SimQueues,
  SimQuotas,
  SimTimeWindow,
} from './queues-types.js';
export { RESOURCES } from './queues-types.js';
