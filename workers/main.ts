import type { ClickHouseClient } from '@clickhouse/client';
import { createRedis } from '../shared/clients/redis.js';
import type { ServiceContext } from '../shared/service-context.js';
import { ProfileStore } from '../shared/stores/profile.store.js';
import { startIngestWorkers, type IngestWorkers } from './ingest/ingest-workers.js';

export interface RoleHandle {
  name: string;
  /** Idempotent; finishes active work before it resolves. */
  close(): Promise<void>;
}

export interface WorkersRole extends RoleHandle {
  ingest: IngestWorkers;
}

/**
 * Composition root of the workers role: ingestion queues into ClickHouse and the profiles. Its
 * Redis connection waits through outages (`maxRetriesPerRequest: null`) instead of failing jobs.
 */
export async function startWorkers(ctx: ServiceContext, clickhouse: ClickHouseClient, opts: { concurrency?: number } = {}): Promise<WorkersRole> {
  const connection = createRedis(ctx.config.redisUrl, 'worker', 'tds-workers');
  connection.on('error', (err) => ctx.log.debug({ err }, 'redis (workers) error'));
  const profiles = new ProfileStore(connection, ctx.keys);
  const ingest = startIngestWorkers({ connection, redisPrefix: ctx.config.redisPrefix, clickhouse, profiles, log: ctx.log.child({ role: 'workers' }), now: ctx.now, concurrency: opts.concurrency ?? ctx.config.workerConcurrency, lockMs: ctx.config.workerLockMs });
  ctx.log.info('workers role started');
  let closing: Promise<void> | undefined;
  return {
    name: 'workers',
    ingest,
    close: () => {
      closing ??= ingest.close().then(() => {
        connection.disconnect();
      });
      return closing;
    },
  };
}

/** Composition root of the scheduler role (declarative job schedulers). */
export async function startScheduler(ctx: ServiceContext): Promise<RoleHandle> {
  ctx.log.info('scheduler role started');
  return { name: 'scheduler', close: async () => undefined };
}
