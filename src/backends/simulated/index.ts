export * from './simulated.js';
export * from './timers.js';
