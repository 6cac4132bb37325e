export * from './eligibility.js';
export * from './rule-text.js';
export * from './rule-values.js';
export * from './substring-search.js';
export * from './types.js';
