import type { Redis } from 'ioredis';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { ProfileStore } from './profile.store.js';
import { UserDeletionStore } from './user-deletion.store.js';
import { enqueueUserDeletion, inFlightJobsOf, type InFlightJob, type UserDeletionJob } from './user-deletion.queue.js';

export interface ProfilesDeps {
  redis: Redis;
  keys: RedisKeys;
  /** RETENTION_DAYS: the lifetime of a profile. */
  retentionDays: number;
  /** REDIS_PREFIX: the BullMQ prefix of the deletion and ingestion queues. */
  redisPrefix: string;
}

/** The producing side of user deletions, on the factory's connection (its queues are made on first use). */
export interface UserDeletionQueue {
  /** The ingestion jobs of any of these users being processed right now (active). */
  inFlightJobsOf(projectId: string, userIds: readonly string[]): Promise<InFlightJob[]>;
  enqueue(job: UserDeletionJob): Promise<void>;
}

export interface Profiles {
  profiles: ProfileStore;
  userDeletions: UserDeletionStore;
  userDeletionQueue: UserDeletionQueue;
}

export function createProfiles(deps: ProfilesDeps): Profiles {
  const { redis, keys, redisPrefix } = deps;
  const userDeletionQueue: UserDeletionQueue = {
    inFlightJobsOf: (projectId, userIds) => inFlightJobsOf(redis, redisPrefix, projectId, userIds),
    enqueue: (job) => enqueueUserDeletion(redis, redisPrefix, job),
  };
  const profiles = new ProfileStore(redis, keys, { retentionDays: deps.retentionDays });
  return { profiles, userDeletions: new UserDeletionStore(redis, keys), userDeletionQueue };
}

// A user's rows in the warehouse, for the workers that merge and delete users.
export * from './user-data.warehouse.js';
