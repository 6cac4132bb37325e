import { createHash } from 'node:crypto';
import { Queue, type JobsOptions } from 'bullmq';
import type { Redis } from 'ioredis';
import { bullPrefix, INGEST_JOB_OPTIONS, QUEUE } from '../platform/queues.js';
import { queueConnection } from '../platform/redis/redis.js';

/**
 * The ClickHouse side of DeleteUserData is a queued job, not a request/reply call. The API
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
  /** The pre-login ids merged into the user, erased with it (absent: none). */
  mergedIds?: string[];
  /** Rows ingested up to this time (epoch ms) are deleted; later rows belong to a new profile. */
  deletedAtMs: number;
  /**
   * Ingestion jobs of the user (or of its merged ids) that were being processed when the
   * tombstone was written: they had passed their tombstone check already, so their profile
   * changes and rows may land after the erasure. The deletion job waits for them to finish, then
   * erases the Redis keys again and deletes the rows up to that moment.
   */
  inFlight?: InFlightJob[];
}

export interface InFlightJob {
  queue: string;
  jobId: string;
}

/** The queues whose jobs change profiles and write per-user rows. */
export const INGEST_QUEUES = [QUEUE.events, QUEUE.interactions, QUEUE.decisions, QUEUE.isolated] as const;

/** Whether a job's payload (any ingestion queue's) concerns this user. */
export function jobConcernsUser(data: unknown, projectId: string, userId: string): boolean {
  if (!data || typeof data !== 'object') return false;
  const d = data as {
    projectId?: unknown;
    userId?: unknown;
    requests?: unknown;
    interactions?: unknown;
    records?: unknown;
    packed?: unknown;
    data?: unknown;
    kind?: unknown;
  };
  if (d.projectId === projectId && d.userId === userId) return true;
  // a decisions job's records, positional: [projectId, userId, responseId, decideTimeMs, decisions]
  if (Array.isArray(d.packed)) return d.packed.some((r) => Array.isArray(r) && r[0] === projectId && r[1] === userId);
  if (Array.isArray(d.requests)) return d.requests.some((r) => jobConcernsUser(r, projectId, userId));
  if (Array.isArray(d.interactions)) return d.interactions.some((r) => jobConcernsUser(r, projectId, userId));
  if (Array.isArray(d.records)) return d.records.some((r) => jobConcernsUser(r, projectId, userId));
  // an isolated job wraps the original payload
  if (d.kind === undefined && d.data !== undefined) return jobConcernsUser(d.data, projectId, userId);
  return false;
}

const handles = new WeakMap<Redis, Map<string, Queue>>();

/** A producer handle of an ingest queue on this connection, made once (it shares the connection: nothing to close). */
export function queueHandle(connection: Redis, redisPrefix: string, name: string): Queue {
  let byName = handles.get(connection);
  if (!byName) handles.set(connection, (byName = new Map()));
  let q = byName.get(name);
  if (!q) {
    q = new Queue(name, {
      connection: queueConnection(connection),
      prefix: bullPrefix(redisPrefix, connection),
      skipVersionCheck: true,
      skipMetasUpdate: true,
    });
    q.on('error', () => undefined);
    byName.set(name, q);
  }
  return q;
}

/** The ingestion jobs of any of these users being processed right now (active). */
export async function inFlightJobsOf(connection: Redis, redisPrefix: string, projectId: string, userIds: readonly string[]): Promise<InFlightJob[]> {
  const out: InFlightJob[] = [];
  for (const queue of INGEST_QUEUES) {
    const active = await queueHandle(connection, redisPrefix, queue).getActive();
    for (const job of active) if (job?.id !== undefined && userIds.some((u) => jobConcernsUser(job.data, projectId, u))) out.push({ queue, jobId: job.id });
  }
  return out;
}

/**
 * Waits until none of these jobs is active any more, at most `timeoutMs` (a job held by a worker
 * that died is retried later, and its retry is dropped by the tombstone). Returns whether they all finished.
 */
export async function waitUntilInactive(connection: Redis, redisPrefix: string, jobs: readonly InFlightJob[], timeoutMs: number): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  for (const j of jobs) {
    for (;;) {
      const job = await queueHandle(connection, redisPrefix, j.queue).getJob(j.jobId);
      if (!job || !(await job.isActive())) break;
      if (Date.now() > end) return false;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  return true;
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
  return `del-${createHash('sha256')
    .update(JSON.stringify([job.projectId, job.userId, job.deletedAtMs]))
    .digest('hex')
    .slice(0, 32)}`;
}

const queues = new WeakMap<Redis, Queue<UserDeletionJob>>();

/**
 * The producer on a connection (made on first use, one per connection: most processes never
 * delete a user). It shares the connection's queue connection (`queueConnection`: BullMQ's scripts
 * defined on the connection itself would reach a pipeline already pending without them), so it
 * needs no closing of its own.
 */
export function userDeletionQueue(connection: Redis, redisPrefix: string): Queue<UserDeletionJob> {
  let q = queues.get(connection);
  if (!q) {
    q = new Queue<UserDeletionJob>(USER_DELETION_QUEUE, {
      connection: queueConnection(connection),
      prefix: bullPrefix(redisPrefix, connection),
      skipVersionCheck: true,
    });
    q.on('error', () => undefined);
    queues.set(connection, q);
  }
  return q;
}

export async function enqueueUserDeletion(connection: Redis, redisPrefix: string, job: UserDeletionJob): Promise<void> {
  await userDeletionQueue(connection, redisPrefix).add('deleteUser', job, { ...USER_DELETION_JOB_OPTIONS, jobId: userDeletionJobId(job) });
}
