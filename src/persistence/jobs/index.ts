export * from './entities.js';
export * from './job-rows.js';
