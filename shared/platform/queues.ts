import type { JobsOptions } from 'bullmq';
import { isCluster } from './redis/redis.js';
import { BACKOFF_CAP_MS, FAILED_JOB_KEPT_SECONDS, INGEST_JOB_ATTEMPTS } from './job-retries.js';

export { BACKOFF_CAP_MS, JOB_MARKER_TTL_SECONDS } from './job-retries.js';

/**
 * Queue names and job options, shared by the API (producers) and the workers (consumers). The job
 * payloads are declared by their features (ingestion/jobs.ts, impact/decisions.ts, aggregation/jobs.ts):
 * plain JSON, timestamps as epoch milliseconds, int64 as decimal strings.
 */
export const QUEUE = {
  events: 'events',
  interactions: 'interactions',
  aggregations: 'aggregations',
  /** The decision log: GetTreatments decisions on their way to ClickHouse. */
  decisions: 'decisions',
  /** Request/reply calls from API processes to the process that owns ClickHouse (warehouse-rpc.ts). */
  rpc: 'rpc',
  /** Ingest jobs that were held by workers that died, retried one at a time (ingest-workers.ts). */
  isolated: 'isolated',
  /** DeleteUserData's ClickHouse deletions, retried until done (user-deletion-queue.ts). */
  userDeletions: 'user-deletions',
} as const;
export type QueueName = (typeof QUEUE)[keyof typeof QUEUE];

/** Failed jobs kept per queue (newest first) for the dashboard. */
export const FAILED_JOBS_KEPT = 10_000;

/**
 * Retries with capped exponential backoff for transient failures (ClickHouse or Redis down):
 * a job that returned 200 to a client must not run out of attempts during an outage of hours.
 * Poison jobs fail at once with UnrecoverableError.
 *
 * A completed job is removed at once: exactly-once rests on the job markers in the users'
 * profile slots (cut to a short grace at completion) and the ClickHouse de-duplication keys,
 * never on the BullMQ job, and a kept job would hold its whole payload (up to 1 MiB) in Redis for
 * nothing. A Pub/Sub redelivery after completion makes a new job of the same id, which the
 * markers and keys make a no-op. The metrics count completions; the dashboard shows the rest.
 */
export const INGEST_JOB_OPTIONS: JobsOptions = {
  attempts: INGEST_JOB_ATTEMPTS,
  backoff: { type: 'capped-exponential', delay: 200 },
  removeOnComplete: true,
  // Failed jobs are in `dead_letters` already (payload and reason); the queue keeps the newest
  // ones for the dashboard only, so a flood of poison input cannot grow Redis without bound.
  removeOnFail: { age: FAILED_JOB_KEPT_SECONDS, count: FAILED_JOBS_KEPT },
};

export function cappedExponentialBackoff(attemptsMade: number): number {
  return Math.min(BACKOFF_CAP_MS, 200 * 2 ** Math.min(attemptsMade, 20));
}

/**
 * BullMQ prefix: under the service's Redis prefix, so tests and deployments do not collide. On a
 * Redis Cluster (the connection is an ioredis `Cluster`) BullMQ's scripts touch several keys of a
 * queue, so the prefix is hash-tagged, `{<prefix>}:bull`, and every queue lives in one slot; on a
 * single Redis it stays `<prefix>:bull`, so existing deployments keep their queues.
 */
export function bullPrefix(redisPrefix: string, connection?: unknown): string {
  return isCluster(connection) ? `{${redisPrefix}}:bull` : `${redisPrefix}:bull`;
}
