import { createHash } from 'node:crypto';
import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { bullPrefix, INGEST_JOB_OPTIONS, QUEUE } from './queues.js';

/**
 * D44: the ClickHouse side of DeleteUserData is a queued job, not a request/reply call. The API
 * answers once the job is in Redis (durable: AOF), and the workers run it until it succeeds: a
 * deletion accepted while ClickHouse is down, or while no workers process runs, is carried out
 * when they are back instead of being lost or failing the call (an rpc would need ClickHouse up
 * at the moment of the call and would lose the deletion with a crash in between).
 */
export const USER_DELETION_QUEUE = QUEUE.userDeletions;

export interface UserDeletionJob {
  kind: 'deleteUser';
  projectId: string;
  userId: string;
  /** Rows ingested up to this time (epoch ms) are deleted; later rows belong to a new profile. */
  deletedAtMs: number;
}

/** Retried with the ingestion's capped backoff (practically forever); kept a while for the dashboard. */
export const USER_DELETION_JOB_OPTIONS: JobsOptions = {
  attempts: INGEST_JOB_OPTIONS.attempts,
  backoff: INGEST_JOB_OPTIONS.backoff,
  removeOnComplete: { age: 24 * 3600, count: 10_000 },
  removeOnFail: { age: 30 * 24 * 3600, count: 10_000 },
};

/** The job id of one deletion (a repeated enqueue of the same deletion is one job). No user id in clear. */
export function userDeletionJobId(job: UserDeletionJob): string {
  return `del-${createHash('sha256').update(JSON.stringify([job.projectId, job.userId, job.deletedAtMs])).digest('hex').slice(0, 32)}`;
}

const queues = new WeakMap<Redis, Queue<UserDeletionJob>>();

/**
 * The producer on a connection (made on first use, one per connection: most processes never
 * delete a user). It shares the connection, so it needs no closing of its own.
 */
export function userDeletionQueue(connection: Redis, redisPrefix: string): Queue<UserDeletionJob> {
  let q = queues.get(connection);
  if (!q) {
    q = new Queue<UserDeletionJob>(USER_DELETION_QUEUE, { connection, prefix: bullPrefix(redisPrefix, connection), skipVersionCheck: true });
    q.on('error', () => undefined);
    queues.set(connection, q);
  }
  return q;
}

export async function enqueueUserDeletion(connection: Redis, redisPrefix: string, job: UserDeletionJob): Promise<void> {
  await userDeletionQueue(connection, redisPrefix).add('deleteUser', job, { ...USER_DELETION_JOB_OPTIONS, jobId: userDeletionJobId(job) });
}
