export * from './jobs.js';
export * from './jobs-batch.js';
export * from './pending-reasons.js';
export * from './position-hub.js';
export * from './position-stream.js';
export * from './submit-input.js';
export * from './submit-policy.js';
export * from './submit-target.js';
