export * from './lines.js';
export * from './runs.js';
export * from './scrub.js';
export * from './simulated-log.js';
