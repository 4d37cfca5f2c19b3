export * from './seed.js';
export * from './trickle.js';
