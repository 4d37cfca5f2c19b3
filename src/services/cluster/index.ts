export * from './cluster.js';
export * from './cluster-updates.js';
export * from './priority-classes.js';
