export * from './create-profiles.js';
export * from './insert-markers.js';
export * from './profile-layout.js';
export * from './profile-ops.js';
export * from './profile.store.js';
export * from './erase-queued-jobs.queue.js';
export * from './user-deletion.queue.js';
export * from './user-deletion.store.js';
