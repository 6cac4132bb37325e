import type { ClickHouseClient } from '@clickhouse/client';
import { createRedis } from '../shared/clients/redis.js';
import type { ServiceContext } from '../shared/service-context.js';
import { ProfileStore } from '../shared/stores/profile.store.js';
import { markerGraceSeconds, startIngestWorkers, type IngestWorkers } from './ingest/ingest-workers.js';
import type { EventOpsProvider } from './ingest/events.processor.js';
import type { InteractionOpsProvider } from './ingest/interactions.processor.js';
import { DataFieldStore } from '../shared/stores/data-field.store.js';
import { ProjectStore } from '../shared/stores/project.store.js';
import { DataFieldCache, dataFieldEventOps, dataFieldInteractionOps } from './aggregate/data-field-cache.js';
import { startAggregationWorker } from './aggregate/scheduler.js';
import { startPubSubIntake } from './ingest/pubsub-intake.js';
import { RankingCounterStore, rankingOps } from '../shared/stores/ranking-stats.store.js';
import { clickhouseCheck, type OpsContribution, type ReadinessCheck } from '../shared/platform/ops-server.js';
import { TreatmentStore } from '../shared/stores/treatment.store.js';
import { ViewCapCache, viewCapInteractionOps } from './aggregate/cap-counters.js';
import { EventSchemaStore } from '../shared/stores/event-schema.store.js';
import { eventSchemaRegistrar } from './ingest/event-schema-registrar.js';
import { UserDeletionStore } from '../shared/stores/user-deletion.store.js';
import { startUserDeletionWorker } from './warehouse/user-data.js';
import { SurfaceStore } from '../shared/stores/surface.store.js';
import { TargetActionViewStore } from '../shared/stores/target-action-views.store.js';
import { TargetActionCache } from './aggregate/target-action-cache.js';
import { targetActionEventOps, targetActionViewOps, type TargetActionDeps } from './ingest/target-action-conversions.js';

export { startScheduler } from './aggregate/scheduler.js';

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
export async function startWorkers(ctx: ServiceContext, clickhouse: ClickHouseClient, opts: { concurrency?: number } = {}): Promise<WorkersRole> {
  const connection = createRedis(ctx.config, 'worker', 'tds-workers');
  connection.on('error', (err) => ctx.log.debug({ err }, 'redis (workers) error'));
  const profiles = new ProfileStore(connection, ctx.keys, { retentionDays: ctx.config.retentionDays });
  const dataFields = new DataFieldStore(connection, ctx.keys, ctx.now);
  const fieldCache = new DataFieldCache((projectId) => dataFields.list(projectId), ctx.bus);
  const eventSchemas = new EventSchemaStore(connection, ctx.keys, ctx.now);
  const treatments = new TreatmentStore(connection, ctx.keys, ctx.now);
  const ranking = { store: new RankingCounterStore(connection, ctx.keys), deltasFor: rankingOps };
  const surfaces = new SurfaceStore(connection, ctx.keys, ctx.now);
  const targetActions = new TargetActionCache({ treatments: (p) => treatments.list(p), surfaces: (p) => surfaces.names(p), eventName: async (p, id) => (await eventSchemas.getById(p, id))?.eventName }, ctx.bus);
  const conversions: TargetActionDeps = { catalog: targetActions, views: new TargetActionViewStore(connection, ctx.keys, { retentionDays: ctx.config.retentionDays }), ranking: ranking.store, profiles, markerGraceSeconds: markerGraceSeconds(ctx.config.workerLockMs), log: ctx.log.child({ role: 'workers' }) };
  const eventOps = concatEventOps([dataFieldEventOps(fieldCache), eventSchemaRegistrar(eventSchemas, ctx.log.child({ role: 'workers' })), targetActionEventOps(conversions)]);
  const viewCaps = new ViewCapCache((projectId) => treatments.list(projectId), ctx.bus);
  const interactionOps = concatInteractionOps([dataFieldInteractionOps(fieldCache), viewCapInteractionOps(viewCaps), targetActionViewOps(conversions)]);
  const aggregations = startAggregationWorker({ connection, redisPrefix: ctx.config.redisPrefix, keys: ctx.keys, clickhouse, dataFields, projects: new ProjectStore(connection, ctx.keys, ctx.now), log: ctx.log.child({ role: 'aggregations' }), now: ctx.now, bus: ctx.bus, profileTtlSeconds: ctx.config.retentionDays * 86_400, metrics: ctx.metrics });
  const userDeletions = new UserDeletionStore(connection, ctx.keys);
  const deletionWorker = startUserDeletionWorker({ connection, redisPrefix: ctx.config.redisPrefix, clickhouse, store: userDeletions, log: ctx.log.child({ role: 'user-deletions' }), metrics: ctx.metrics });
  const ingest = startIngestWorkers({ erased: userDeletions, connection, redisPrefix: ctx.config.redisPrefix, clickhouse, profiles, eventOps, interactionOps, ranking, log: ctx.log.child({ role: 'workers' }), now: ctx.now, concurrency: opts.concurrency ?? ctx.config.workerConcurrency, lockMs: ctx.config.workerLockMs, onMetric: ctx.metrics.countIngest, metrics: ctx.metrics, decisionWaitMs: ctx.config.interactionDecisionWaitMs });
  const pubsubIntake = await startPubSubIntake(ctx, clickhouse);
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
    ops: { checks: [clickhouseCheck(clickhouse), consumers] },
    close: () => {
      // Intake first: messages in hand still reach the queue (or are nacked) before the workers stop.
      closing ??= pubsubIntake.close().then(() => Promise.all([ingest.close(), aggregations.close(), deletionWorker.close()])).then(() => {
        fieldCache.close();
        viewCaps.close();
        targetActions.close();
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
