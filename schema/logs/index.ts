export * from './job-logs.js';
export * from './job-logs-subscription.js';
export * from './log-line.js';
