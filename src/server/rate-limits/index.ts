export * from './client-address.js';
export * from './limiter.js';
