export * from './cluster.js';
export * from './cluster-updates.js';
export * from './node.js';
export * from './priority-class.js';
export * from './queue.js';
export * from './queue-mutations.js';
export * from './quota.js';
