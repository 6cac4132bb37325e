export type * from './create-impact.js';
export type * from './decision-log.queue.js';
export * from './decisions.js';
export * from './impact.schemas.js';
export * from './report-stats.js';
