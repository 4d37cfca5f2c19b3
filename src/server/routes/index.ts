export * from './console-oidc.js';
export * from './metrics.js';
export * from './readiness.js';
export * from './route-errors.js';
export * from './route-table.js';
export * from './usage-export.js';
