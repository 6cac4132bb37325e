import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { Config } from '../platform/config.js';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { IngestBacklog } from './ingest-backlog.service.js';
import { createIngestProducers, type IngestProducers } from './ingest-producers.queue.js';
import { PubSubSourceStore } from './pubsub-source.store.js';

export interface IngestionDeps {
  /** The request-path connection: an enqueue during an outage fails at once instead of waiting. */
  redis: Redis;
  config: Pick<Config, 'redisPrefix' | 'ingestMaxBacklog' | 'mergedJobEvents'>;
  log: Logger;
  keys: RedisKeys;
  now: () => number;
}

/** The producing side of ingestion: one per process, shared by the API and the Pub/Sub intake. */
export interface Ingestion {
  ingest: IngestProducers;
  /** The ingestion backlog against INGEST_MAX_BACKLOG (backpressure), polled while ingestion is asked about. */
  ingestBacklog: IngestBacklog;
  /** The projects' Pub/Sub sources (the admin API sets them, every workers process reconciles its subscriptions with them). */
  pubsubSources: PubSubSourceStore;
}

export function createIngestion(deps: IngestionDeps): Ingestion {
  const { redis, config, log } = deps;
  const ingest = createIngestProducers(redis, config.redisPrefix, config.mergedJobEvents);
  const ingestBacklog = new IngestBacklog({
    redis,
    eventsQueue: ingest.eventsQueue,
    eventsProducers: [ingest.logEvents, ingest.events],
    interactionsQueue: ingest.interactionsQueue,
    interactionsProducers: [ingest.interactions],
    // one small hash per deployment (two counters per queue), beside the queues it describes
    mixKey: `${config.redisPrefix}:ingest:mix`,
    maxEvents: config.ingestMaxBacklog,
    log,
  });
  return { ingest, ingestBacklog, pubsubSources: new PubSubSourceStore(redis, deps.keys, deps.now) };
}

export async function closeIngestion(ingestion: Ingestion): Promise<void> {
  ingestion.ingestBacklog.close();
  await ingestion.ingest.close();
}

// Ingestion's rows of the warehouse and its dead-letter read, for the workers that write and answer them.
export * from './event-rows.warehouse.js';
export * from './dead-letters.warehouse.js';
