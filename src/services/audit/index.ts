export * from './audit.js';
export * from './audit-events.js';
