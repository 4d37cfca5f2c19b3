export * from './entities.js';
export * from './price-book.js';
