export * from './autoscaler-task.js';
export * from './replica-jobs.js';
export * from './service-input.js';
export * from './services.js';
export * from './usage.js';
