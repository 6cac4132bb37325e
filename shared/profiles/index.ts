export * from './create-profiles.js';
export * from './profile.store.js';
export * from './user-deletion.queue.js';
export * from './user-deletion.store.js';
