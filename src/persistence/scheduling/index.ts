export * from './entities.js';
export * from './outbox-rows.js';
