export * from './probes.js';
