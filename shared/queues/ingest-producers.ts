import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { EnqueueBatcher } from './enqueue-batcher.js';
import { bullPrefix, QUEUE, type EventsQueueJob, type InteractionJob } from './queues.js';

/** The API's side of the ingestion queues: fail-fast producers on the request-path connection. */
export interface IngestProducers {
  eventsQueue: Queue;
  interactionsQueue: Queue;
  events: EnqueueBatcher<EventsQueueJob>;
  interactions: EnqueueBatcher<InteractionJob>;
  close(): Promise<void>;
}

export function createIngestProducers(connection: Redis, redisPrefix: string): IngestProducers {
  const prefix = bullPrefix(redisPrefix);
  // No start-up INFO/meta calls: on the fail-fast connection a slow boot could time them out
  // and leave the queue object failing every later call.
  const opts = { connection, prefix, skipVersionCheck: true, skipMetasUpdate: true };
  const eventsQueue = new Queue(QUEUE.events, opts);
  const interactionsQueue = new Queue(QUEUE.interactions, opts);
  // Queue errors surface on the awaited calls; the listener keeps an outage from crashing the process.
  eventsQueue.on('error', () => undefined);
  interactionsQueue.on('error', () => undefined);
  return {
    eventsQueue,
    interactionsQueue,
    events: new EnqueueBatcher<EventsQueueJob>(eventsQueue, 'events'),
    interactions: new EnqueueBatcher<InteractionJob>(interactionsQueue, 'interaction'),
    async close() {
      await eventsQueue.close();
      await interactionsQueue.close();
    },
  };
}
