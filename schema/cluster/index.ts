export * from './cluster.js';
export * from './node.js';
export * from './queue.js';
export * from './quota.js';
