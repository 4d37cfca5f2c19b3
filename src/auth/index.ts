export * from './api-token-secret.js';
export * from './capabilities.js';
export * from './identity.js';
export * from './identity-cache.js';
export * from './oidc.js';
export * from './principal.js';
export * from './project-access.js';
