export type * from './create-profiles.js';
export * from './insert-markers.js';
export * from './profile-layout.js';
export * from './profile-ops.js';
export type * from './profile.store.js';
export type * from './erase-queued-jobs.queue.js';
export type * from './user-deletion.queue.js';
export type * from './user-deletion.store.js';
