export * from './catalog.schemas.js';
export type * from './create-catalog.js';
export type * from './event-schema.store.js';
export type * from './mutual-exclusion-group.store.js';
export * from './surface-provisioning.js';
export type * from './surface.store.js';
export type * from './treatment-type.store.js';
export * from './types.js';
