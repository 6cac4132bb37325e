import type { Redis } from 'ioredis';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { ProfileStore } from './profile.store.js';
import { UserDeletionStore } from './user-deletion.store.js';

export interface ProfilesDeps {
  redis: Redis;
  keys: RedisKeys;
  /** RETENTION_DAYS: the lifetime of a profile. */
  retentionDays: number;
}

export interface Profiles {
  profiles: ProfileStore;
  userDeletions: UserDeletionStore;
}

export function createProfiles(deps: ProfilesDeps): Profiles {
  return { profiles: new ProfileStore(deps.redis, deps.keys, { retentionDays: deps.retentionDays }), userDeletions: new UserDeletionStore(deps.redis, deps.keys) };
}

// A user's rows in the warehouse, for the workers that merge and delete users.
export * from './user-data.warehouse.js';
