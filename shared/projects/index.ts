export * from './api-key.store.js';
export * from './authenticator.js';
export * from './change-log.js';
export * from './create-projects.js';
export * from './project.store.js';
export * from './types.js';
