export * from './entities.js';
export * from './policy-library.js';
