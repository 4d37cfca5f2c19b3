export * from './audit-event.js';
