export * from './allocation.js';
export * from './utilization.js';
