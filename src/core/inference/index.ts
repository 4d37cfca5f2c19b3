export * from './autoscaler.js';
export * from './replicas.js';
export * from './traffic.js';
