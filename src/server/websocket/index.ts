export * from './limits.js';
export * from './stream.js';
export * from './websocket.js';
