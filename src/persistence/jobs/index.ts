export * from './entities.js';
export * from './job-rows.js';
export * from './submit-rows.js';
