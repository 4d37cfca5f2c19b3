export * from './autoscaler.js';
export * from './traffic.js';
