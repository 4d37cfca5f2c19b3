export * from './budget.js';
export * from './price-book.js';
export * from './usage.js';
