export * from './tenant-event.js';
