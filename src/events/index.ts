export * from './bus.js';
export * from './redis.js';
