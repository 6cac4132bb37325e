export type * from './backfill-status.queue.js';
export type * from './create-aggregation.js';
export * from './data-field-ops.js';
export * from './data-field-params.js';
export * from './data-field-values.js';
export type * from './data-field.store.js';
export * from './jobs.js';
export * from './types.js';
