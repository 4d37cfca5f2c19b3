export * from './service-context.js';
