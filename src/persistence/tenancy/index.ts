export * from './access-entities.js';
export * from './entities.js';
