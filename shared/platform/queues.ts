import type { JobsOptions } from 'bullmq';
import type { EventAttributes, PropertyValue } from '../ingestion/index.js';
import type { DecisionRecord } from '../impact/index.js';
import { isCluster } from './redis/redis.js';

/**
 * Queue names and job payloads, shared by the API (producers) and the workers (consumers).
 * Payloads are plain JSON: timestamps as epoch milliseconds, int64 as decimal strings.
 */
export const QUEUE = {
  events: 'events',
  interactions: 'interactions',
  aggregations: 'aggregations',
  /** The decision log (D36): GetTreatments decisions on their way to ClickHouse. */
  decisions: 'decisions',
  /** Request/reply calls from API processes to the process that owns ClickHouse (warehouse-rpc.ts). */
  rpc: 'rpc',
  /** Ingest jobs that were held by workers that died, retried one at a time (ingest-workers.ts). */
  isolated: 'isolated',
  /** DeleteUserData's ClickHouse deletions (D44), retried until done (user-deletion-queue.ts). */
  userDeletions: 'user-deletions',
} as const;
export type QueueName = (typeof QUEUE)[keyof typeof QUEUE];

/** One user event as the workers store it (normalised by the API or the Pub/Sub intake). */
export interface EventPayload extends EventAttributes {
  eventName: string;
  clientEventTs: number;
  serverReceivedTs?: number;
}

/**
 * A batch of events of one user. `origin` decides the de-duplication key of events without an
 * insertId: `j:<jobId>:<index>` for API calls, `m:<messageId>:<index>` for Pub/Sub messages (D33),
 * so a retried job or a redelivered message never counts twice.
 */
export interface EventsJob {
  kind: 'events';
  projectId: string;
  userId: string;
  events: EventPayload[];
  origin: { source: 'api' } | { source: 'pubsub'; messageId: string };
  receivedAt: number;
}

/** Profile attributes from a Pub/Sub UserAttribute message (last-write-wins by updateTs). */
export interface UserAttributesJob {
  kind: 'userAttributes';
  projectId: string;
  userId: string;
  userProperties: Record<string, PropertyValue>;
  updateTs: number;
  messageId: string;
  receivedAt: number;
}

/**
 * The LogEvents requests that arrived in one event-loop turn, merged into one job: one BullMQ
 * add, fetch and completion for many requests instead of one each (the queue's Redis cost is per
 * job). Each request keeps its own identity `<jobId>.<index>`: its exactly-once marker and the
 * de-duplication keys of its events without insertId, exactly as if it were a job of that id.
 */
export interface EventsBatchJob {
  kind: 'eventsBatch';
  requests: EventsJob[];
}

/** A job of one request or message. */
export type SingleEventsJob = EventsJob | UserAttributesJob;
export type EventsQueueJob = SingleEventsJob | EventsBatchJob;

export interface InteractionJob {
  kind: 'interaction';
  projectId: string;
  /** D49: absent when the client omitted it; the worker resolves it from the decision log. */
  userId: string;
  treatmentId: string;
  treatmentTrackingId: string;
  /** D49: absent when the client omitted it; the worker resolves it from the decision log. */
  surface: string;
  /**
   * D49: the fields the worker must read from the decision log (by the tracking id's response
   * id) before storing; a given userId/surface must then agree with the decision.
   */
  resolve?: true;
  interactionType: string;
  /** int64 microseconds as a decimal string */
  interactionTimeMicros: string;
  actionName?: string;
  receivedAt: number;
}

/**
 * The GetTreatments responses of one event-loop turn (up to MAX_DECISION_RECORDS_PER_JOB), each
 * with its decisions. Identity of a stored row: (projectId, responseId, treatmentId, surface).
 */
export interface DecisionsJob {
  kind: 'decisions';
  records: DecisionRecord[];
}

/** Recompute (or backfill) data-field values from ClickHouse. */
export interface AggregationJob {
  kind: 'recompute';
  projectId?: string;
  dataFieldIds?: string[];
  reason: 'schedule' | 'backfill' | 'manual';
}

/** Failed jobs kept per queue (newest first) for the dashboard. */
export const FAILED_JOBS_KEPT = 10_000;

/**
 * Retries with capped exponential backoff for transient failures (ClickHouse or Redis down):
 * a job that returned 200 to a client must not run out of attempts during an outage of hours.
 * Poison jobs fail at once with UnrecoverableError.
 */
export const INGEST_JOB_OPTIONS: JobsOptions = {
  attempts: 100_000,
  backoff: { type: 'capped-exponential', delay: 200 },
  removeOnComplete: { age: 3600, count: 10_000 },
  // Failed jobs are in `dead_letters` already (payload and reason); the queue keeps the newest
  // ones for the dashboard only, so a flood of poison input cannot grow Redis without bound.
  removeOnFail: { age: 30 * 24 * 3600, count: FAILED_JOBS_KEPT },
};

export const BACKOFF_CAP_MS = 30_000;

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
