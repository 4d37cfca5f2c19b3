export * from './client-errors.js';
export * from './group-window.js';
