import { createRedis } from '../shared/platform/redis/redis.js';
import type { ServiceContext } from '../shared/service-context.js';
import { ProfileStore } from '../shared/profiles/index.js';
import { startIngestWorkers, type IngestWorkers } from './ingestion/ingest-workers.js';
import type { EventOpsProvider } from './ingestion/events.processor.js';
import type { InteractionOpsProvider } from './ingestion/interactions.processor.js';
import { DataFieldStore } from '../shared/aggregation/index.js';
import { ProjectStore } from '../shared/projects/index.js';
import { DataFieldCache, dataFieldEventOps, dataFieldInteractionOps } from './aggregation/data-field-cache.js';
import { startAggregationWorker } from './aggregation/scheduler.js';
import { startPubSubIntake } from './ingestion/pubsub-intake.js';
import { RankingCounterStore, rankingOps } from '../shared/delivery/index.js';
import { clickhouseCheck, type OpsContribution, type ReadinessCheck } from '../shared/platform/ops-server.js';
import { TreatmentStore } from '../shared/treatments/index.js';
import { ViewCapCache, viewCapInteractionOps } from './aggregation/cap-counters.js';
import { EventSchemaStore } from '../shared/catalog/index.js';
import { eventSchemaRegistrar } from './ingestion/event-schema-registrar.js';
import { UserDeletionStore } from '../shared/profiles/index.js';
import { startUserDeletionWorker } from './profiles/user-data.js';
import type { Warehouse } from '../shared/platform/warehouse/warehouse.js';
import { DeadLetterSink } from './ingestion/dead-letter-sink.js';

export { startScheduler } from './aggregation/scheduler.js';

export interface RoleHandle {
  name: string;
  /** Idempotent; finishes active work before it resolves. */
  close(): Promise<void>;
  /** Readiness checks and metrics this role adds to the process's ops listener. */
  ops?: OpsContribution;
}

export interface WorkersRole extends RoleHandle {
  ingest: IngestWorkers;
}

/**
 * Composition root of the workers role: ingestion queues into ClickHouse and the profiles. Its
 * Redis connection waits through outages (`maxRetriesPerRequest: null`) instead of failing jobs.
 */
export async function startWorkers(ctx: ServiceContext, warehouse: Warehouse, opts: { concurrency?: number } = {}): Promise<WorkersRole> {
  const connection = createRedis(ctx.config, 'worker', 'tds-workers');
  connection.on('error', (err) => ctx.log.debug({ err }, 'redis (workers) error'));
  const profiles = new ProfileStore(connection, ctx.keys, { retentionDays: ctx.config.retentionDays });
  const dataFields = new DataFieldStore(connection, ctx.keys, ctx.now);
  const fieldCache = new DataFieldCache((projectId) => dataFields.list(projectId), ctx.bus);
  const eventSchemas = new EventSchemaStore(connection, ctx.keys, ctx.now);
  const eventOps = concatEventOps([dataFieldEventOps(fieldCache), eventSchemaRegistrar(eventSchemas, ctx.log.child({ role: 'workers' }))]);
  const treatments = new TreatmentStore(connection, ctx.keys, ctx.now);
  const viewCaps = new ViewCapCache((projectId) => treatments.list(projectId), ctx.bus);
  const interactionOps = concatInteractionOps([dataFieldInteractionOps(fieldCache), viewCapInteractionOps(viewCaps)]);
  const ranking = { store: new RankingCounterStore(connection, ctx.keys), deltasFor: rankingOps };
  const aggregations = startAggregationWorker({ connection, redisPrefix: ctx.config.redisPrefix, keys: ctx.keys, warehouse, dataFields, projects: new ProjectStore(connection, ctx.keys, ctx.now), log: ctx.log.child({ role: 'aggregations' }), now: ctx.now, bus: ctx.bus, profileTtlSeconds: ctx.config.retentionDays * 86_400, metrics: ctx.metrics });
  const userDeletions = new UserDeletionStore(connection, ctx.keys);
  const deletionWorker = startUserDeletionWorker({ connection, redisPrefix: ctx.config.redisPrefix, warehouse, store: userDeletions, log: ctx.log.child({ role: 'user-deletions' }), metrics: ctx.metrics });
  const deadLetters = new DeadLetterSink(warehouse, ctx.now);
  const ingest = startIngestWorkers({ erased: userDeletions, connection, redisPrefix: ctx.config.redisPrefix, warehouse, deadLetters, profiles, eventOps, interactionOps, ranking, log: ctx.log.child({ role: 'workers' }), now: ctx.now, concurrency: opts.concurrency ?? ctx.config.workerConcurrency, lockMs: ctx.config.workerLockMs, onMetric: ctx.metrics.countIngest, metrics: ctx.metrics, decisionWaitMs: ctx.config.interactionDecisionWaitMs });
  const pubsubIntake = await startPubSubIntake(ctx, deadLetters);
  ctx.log.info('workers role started');
  let closing: Promise<void> | undefined;
  const consumers: ReadinessCheck = {
    name: 'queue-consumers',
    check: () => {
      const stopped = [...ingest.workers, aggregations.worker, deletionWorker].filter((w) => closing !== undefined || !w.isRunning()).map((w) => w.name);
      if (stopped.length > 0) throw new Error(`not consuming: ${stopped.join(', ')}`);
    },
  };
  return {
    name: 'workers',
    ingest,
    ops: { checks: [clickhouseCheck(warehouse), consumers] },
    close: () => {
      // Intake first: messages in hand still reach the queue (or are nacked) before the workers stop.
      closing ??= pubsubIntake.close().then(() => Promise.all([ingest.close(), aggregations.close(), deletionWorker.close()])).then(() => {
        fieldCache.close();
        viewCaps.close();
        connection.disconnect();
      });
      return closing;
    },
  };
}

/** Several providers contribute ops to the same job (data-field aggregations, ranking statistics): concatenated per event. */
function concatEventOps(providers: EventOpsProvider[]): EventOpsProvider {
  if (providers.length === 1) return providers[0];
  return async (projectId, userId, events) => {
    const parts = await Promise.all(providers.map((p) => p(projectId, userId, events)));
    return events.map((_, i) => parts.flatMap((part) => part[i] ?? []));
  };
}

function concatInteractionOps(providers: InteractionOpsProvider[]): InteractionOpsProvider {
  return async (job) => (await Promise.all(providers.map((p) => p(job)))).flatMap((ops) => ops ?? []);
}
