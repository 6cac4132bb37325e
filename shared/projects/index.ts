export * from './api-key.store.js';
export * from './authenticator.service.js';
export * from './change-log.store.js';
export * from './create-projects.js';
export * from './project.store.js';
export * from './types.js';
