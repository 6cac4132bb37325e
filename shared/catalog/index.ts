export * from './catalog.schemas.js';
export * from './create-catalog.js';
export * from './event-schema.store.js';
export * from './mutual-exclusion-group.store.js';
export * from './surface-provisioning.js';
export * from './surface.store.js';
export * from './treatment-type.store.js';
export * from './types.js';
