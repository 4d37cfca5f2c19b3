export * from './observability.js';
export * from './tracing.js';
