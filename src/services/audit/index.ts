export * from './audit.js';
export * from './audit-events.js';
export * from './group-commit.js';
