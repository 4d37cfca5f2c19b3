export * from './http-security.js';
