export * from './client-errors.js';
