import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { EnqueueBatcher } from './enqueue-batcher.queue.js';
import { bullPrefix, QUEUE } from '../platform/queues.js';
import { queueConnection } from '../platform/redis/redis.js';
import { MERGED_JOB_EVENTS, type EventsBatchJob, type EventsJob, type InteractionJob, type InteractionsBatchJob, type SingleEventsJob } from './jobs.js';

/** The API's side of the ingestion queues: fail-fast producers on the request-path connection. */
export interface IngestProducers {
  eventsQueue: Queue;
  interactionsQueue: Queue;
  /** One job per item (Pub/Sub messages: the job id de-duplicates a redelivery). */
  events: EnqueueBatcher<SingleEventsJob>;
  /** LogEvents requests, merged over LOG_EVENTS_LINGER_MS into jobs of up to MERGED_JOB_EVENTS events. */
  logEvents: EnqueueBatcher<EventsJob>;
  /** LogTreatmentInteraction calls, merged over LOG_EVENTS_LINGER_MS into jobs of up to MERGED_JOB_INTERACTIONS. */
  interactions: EnqueueBatcher<InteractionJob>;
  close(): Promise<void>;
}

/**
 * Events from which a merged LogEvents job goes at the end of the event loop's turn instead of
 * waiting LOG_EVENTS_LINGER_MS for more: it then takes every request of that turn, up to
 * MERGED_JOB_EVENTS. A busy API reads many requests a turn, so its jobs fill to 500 events in
 * one add, while a closed loop of small requests (50 connections of 10 events: never 500 at once)
 * is not made to wait the linger for a job that cannot fill. Jobs of up to 500 events filled this
 * way against jobs of 100 (`npm run bench -- ingest`, requests of 100 events, two alternating
 * pairs): 80,012 and 85,670 events/s against 64,791 and 69,781, the background 13.3 and 12.3 µs
 * an event against 17.3 and 15.4, Redis 0.17-0.18 cores against 0.22; LogEvents' closed loop
 * unchanged (0.66-0.91 of its bare route in four runs either way).
 */
export const MERGED_JOB_MIN_EVENTS = 100;

/**
 * How long a LogEvents request waits for others to share its job (ms). At a few thousand small
 * requests a second the requests of one turn are one or two, and a job's queue and worker
 * overhead (its add, fetch, completion) then costs more than its events: a few milliseconds of
 * wait fill the job instead. A job of MERGED_JOB_MIN_EVENTS goes at the end of its turn and a full
 * one at once, so a busy service adds no wait.
 */
export const LOG_EVENTS_LINGER_MS = 5;

/**
 * Interactions per merged LogTreatmentInteraction job at most. One job per interaction cost the
 * API about 245 µs of CPU and the background about 300 µs per interaction at 2,000 a second (its
 * add, fetch, scripts and completion; `bench/interaction-cost.ts`), against about 30 µs for an
 * event in a merged job; an interaction's row and scripts are an event's size, so a job of 100
 * holds what a merged LogEvents job holds.
 */
export const MERGED_JOB_INTERACTIONS = 100;

/** `mergedJobEvents`: MERGED_JOB_EVENTS unless configured (config.mergedJobEvents). */
export function createIngestProducers(connection: Redis, redisPrefix: string, mergedJobEvents = MERGED_JOB_EVENTS): IngestProducers {
  const prefix = bullPrefix(redisPrefix, connection);
  // No start-up INFO/meta calls: on the fail-fast connection a slow boot could time them out
  // and leave the queue object failing every later call.
  const opts = { connection: queueConnection(connection), prefix, skipVersionCheck: true, skipMetasUpdate: true };
  const eventsQueue = new Queue(QUEUE.events, opts);
  const interactionsQueue = new Queue(QUEUE.interactions, opts);
  // Queue errors surface on the awaited calls; the listener keeps an outage from crashing the process.
  eventsQueue.on('error', () => undefined);
  interactionsQueue.on('error', () => undefined);
  return {
    eventsQueue,
    interactionsQueue,
    events: new EnqueueBatcher<SingleEventsJob>(eventsQueue, 'events'),
    logEvents: new EnqueueBatcher<EventsJob>(eventsQueue, 'events', {
      merge: {
        build: (requests): EventsBatchJob => ({ kind: 'eventsBatch', requests }),
        maxWeight: mergedJobEvents,
        minWeight: Math.min(MERGED_JOB_MIN_EVENTS, mergedJobEvents),
      },
      lingerMs: LOG_EVENTS_LINGER_MS,
    }),
    interactions: new EnqueueBatcher<InteractionJob>(interactionsQueue, 'interaction', {
      merge: { build: (interactions): InteractionsBatchJob => ({ kind: 'interactionsBatch', interactions }), maxWeight: MERGED_JOB_INTERACTIONS },
      lingerMs: LOG_EVENTS_LINGER_MS,
    }),
    async close() {
      await eventsQueue.close();
      await interactionsQueue.close();
    },
  };
}
