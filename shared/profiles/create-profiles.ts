import type { Redis } from 'ioredis';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { ProfileStore } from './profile.store.js';
import { UserDeletionStore } from './user-deletion.store.js';
import { enqueueUserDeletion, inFlightJobsOf, waitUntilInactive, type InFlightJob, type UserDeletionJob } from './user-deletion.queue.js';
import { eraseQueuedJobs, type ErasedIds, type QueuedErasure } from './erase-queued-jobs.queue.js';

export interface ProfilesDeps {
  redis: Redis;
  keys: RedisKeys;
  /** RETENTION_DAYS: the lifetime of a profile. */
  retentionDays: number;
  /** REDIS_PREFIX: the BullMQ prefix of the deletion and ingestion queues. */
  redisPrefix: string;
}

/** User deletions and the queues they reach, on the factory's connection (its queues are made on first use). */
export interface UserDeletionQueue {
  /** The ingestion jobs of any of these users being processed right now (active). */
  inFlightJobsOf(projectId: string, userIds: readonly string[]): Promise<InFlightJob[]>;
  enqueue(job: UserDeletionJob): Promise<void>;
  /** The deletion worker: waits (at most `timeoutMs`) until these jobs are no longer active; false when some still are. */
  waitUntilInactive(jobs: readonly InFlightJob[], timeoutMs: number): Promise<boolean>;
  /** The deletion worker: the users erased from the ingestion jobs kept for retries (failed, delayed, waiting). */
  eraseQueuedJobs(e: ErasedIds): Promise<QueuedErasure>;
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
    waitUntilInactive: (jobs, timeoutMs) => waitUntilInactive(redis, redisPrefix, jobs, timeoutMs),
    eraseQueuedJobs: (e) => eraseQueuedJobs(redis, redisPrefix, e),
  };
  const profiles = new ProfileStore(redis, keys, { retentionDays: deps.retentionDays });
  return { profiles, userDeletions: new UserDeletionStore(redis, keys), userDeletionQueue };
}

// A user's rows in the warehouse, for the workers that merge and delete users.
export * from './user-data.warehouse.js';
