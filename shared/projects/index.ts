export type * from './api-key.store.js';
export type * from './authenticator.service.js';
export * from './change-entry.js';
export type * from './change-log.store.js';
export type * from './create-projects.js';
export type * from './project.store.js';
export * from './types.js';
