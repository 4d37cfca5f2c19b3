export * from './governance-controller.js';
export * from './isolation-policy.js';
export * from './job-flag.js';
export * from './job-probe.js';
export * from './quota-request.js';
export * from './recommendation.js';
