import type { Warehouse } from '../shared/platform/warehouse/warehouse.js';
import { DeadLetterSink } from './ingestion/dead-letter-sink.js';
import { createRedis } from '../shared/platform/redis/redis.js';
import type { Platform } from '../shared/platform/platform.js';
import type { ProfileEvent, ProfileOp } from '../shared/profiles/index.js';
import { createProfiles } from '../shared/profiles/create-profiles.js';
import { createAggregation } from '../shared/aggregation/create-aggregation.js';
import { createProjects } from '../shared/projects/create-projects.js';
import { createTreatments } from '../shared/treatments/create-treatments.js';
import { createCatalog } from '../shared/catalog/create-catalog.js';
import type { Ingestion } from '../shared/ingestion/index.js';
import { rankingOps } from '../shared/delivery/index.js';
import { createDeliveryCounters } from '../shared/delivery/create-delivery.js';
import { clickhouseCheck, type OpsContribution, type ReadinessCheck } from '../shared/platform/ops-server.js';
import { markerGraceSeconds, startIngestWorkers, type IngestWorkers } from './ingestion/ingest-workers.js';
import type { EventOpsProvider } from './ingestion/events.processor.js';
import type { InteractionOpsProvider } from './ingestion/interactions.processor.js';
import { DataFieldCache, dataFieldEventOps, dataFieldInteractionOps } from './aggregation/data-field-cache.js';
import { startAggregationWorker } from './aggregation/scheduler.js';
import { startPubSubIntake } from './ingestion/pubsub-intake.js';
import { CapCache, viewCapInteractionOps } from './delivery/cap-counters.js';
import { eventSchemaRegistrar } from './catalog/event-schema-registrar.js';
import { startUserDeletionWorker } from './profiles/user-data.js';
import { TargetActionCache } from './delivery/target-action-cache.js';
import { targetActionEventOps, targetActionViewOps, type TargetActionDeps } from './delivery/target-action-conversions.js';
import { closeWorkers, settlesWithin } from '../shared/platform/stop.js';

export { startScheduler } from './aggregation/scheduler.js';

export interface RoleHandle {
  name: string;
  /**
   * Idempotent; active work gets `graceMs` to finish (not waited for while Redis is unreachable),
   * and what is left unfinished stays queued and is retried. Never takes much longer than `graceMs`.
   */
  close(graceMs?: number): Promise<void>;
  /** Readiness checks and metrics this role adds to the process's ops listener. */
  ops?: OpsContribution;
}

export interface WorkersRole extends RoleHandle {
  ingest: IngestWorkers;
}

/** What the process hands the workers role: its platform and the ingestion producers it shares with the API role. */
export type WorkersDeps = Pick<Platform, 'config' | 'log' | 'redis' | 'keys' | 'bus' | 'now' | 'metrics'> & Ingestion;

/**
 * Composition root of the workers role: ingestion queues into ClickHouse and the profiles. Its
 * features are built by the same factories as the API's, on a Redis connection of its own that
 * waits through outages (`maxRetriesPerRequest: null`) instead of failing jobs.
 */
export async function startWorkers(ctx: WorkersDeps, warehouse: Warehouse, opts: { concurrency?: number } = {}): Promise<WorkersRole> {
  const { config, keys, now, bus, log, metrics } = ctx;
  // BullMQ's queues and workers on one connection, the stores' commands on another that
  // pipelines those of one turn (hundreds of jobs at once each send a few)
  const connection = createRedis(config, 'worker', 'tds-workers');
  const storeConnection = createRedis(config, 'store', 'tds-workers-stores');
  for (const c of [connection, storeConnection]) c.on('error', (err) => log.debug({ err }, 'redis (workers) error'));
  const stores = { redis: storeConnection, keys, now };
  const { profiles, userDeletions, userDeletionQueue } = createProfiles({
    redis: storeConnection,
    keys,
    retentionDays: config.retentionDays,
    redisPrefix: config.redisPrefix,
  });
  const { dataFields } = createAggregation({ ...stores, redisPrefix: config.redisPrefix });
  const { eventSchemas, surfaces } = createCatalog(stores);
  const { treatments } = createTreatments(stores);
  const { projects } = createProjects({ ...stores, bus });
  const fieldCache = new DataFieldCache((projectId) => dataFields.list(projectId), bus);
  const { rankingCounters, targetActionViews } = createDeliveryCounters({ redis: storeConnection, keys, retentionDays: config.retentionDays });
  const ranking = { store: rankingCounters, deltasFor: rankingOps };
  const targetActions = new TargetActionCache(
    { treatments: (p) => treatments.list(p), surfaces: (p) => surfaces.names(p), eventName: async (p, id) => (await eventSchemas.getById(p, id))?.eventName },
    bus,
  );
  const conversions: TargetActionDeps = {
    catalog: targetActions,
    views: targetActionViews,
    ranking: ranking.store,
    profiles,
    markerGraceSeconds: markerGraceSeconds(config.workerLockMs),
    log: log.child({ role: 'workers' }),
  };
  const eventOps = concatEventOps([
    dataFieldEventOps(fieldCache),
    eventSchemaRegistrar(eventSchemas, log.child({ role: 'workers' })),
    targetActionEventOps(conversions),
  ]);
  const viewCaps = new CapCache('VIEWED', (projectId) => treatments.list(projectId), bus);
  const returnedCaps = new CapCache('RETURNED', (projectId) => treatments.list(projectId), bus);
  const interactionOps = concatInteractionOps([dataFieldInteractionOps(fieldCache), viewCapInteractionOps(viewCaps), targetActionViewOps(conversions)]);
  const aggregations = startAggregationWorker({
    connection,
    redisPrefix: config.redisPrefix,
    keys,
    warehouse,
    dataFields,
    deletions: userDeletions,
    projects,
    log: log.child({ role: 'aggregations' }),
    now,
    bus,
    profileTtlSeconds: config.retentionDays * 86_400,
    metrics,
  });
  const deletionWorker = startUserDeletionWorker({
    connection,
    redisPrefix: config.redisPrefix,
    warehouse,
    store: userDeletions,
    queues: userDeletionQueue,
    log: log.child({ role: 'user-deletions' }),
    metrics,
  });
  const deadLetters = new DeadLetterSink(warehouse, now);
  const ingest = startIngestWorkers({
    erased: userDeletions,
    connection,
    redisPrefix: config.redisPrefix,
    warehouse,
    deadLetters,
    profiles,
    eventOps,
    interactionOps,
    ranking,
    returnedCaps: (projectId) => returnedCaps.get(projectId),
    log: log.child({ role: 'workers' }),
    now,
    concurrency: opts.concurrency ?? config.workerConcurrency,
    mergedJobEvents: config.mergedJobEvents,
    lockMs: config.workerLockMs,
    onMetric: metrics.countIngest,
    metrics,
    decisionWaitMs: config.interactionDecisionWaitMs,
    identityMerge: config.identityMerge,
  });
  const pubsubIntake = await startPubSubIntake(ctx, deadLetters);
  log.info('workers role started');
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
    close: (graceMs = 15_000) => {
      closing ??= (async () => {
        const endsAt = performance.now() + graceMs;
        const left = () => Math.max(0, endsAt - performance.now());
        // Intake first: messages in hand still reach the queue (or are nacked) before the workers
        // stop. A message it could not settle in time is redelivered by Pub/Sub.
        await settlesWithin(pubsubIntake.close(), Math.min(5000, left() / 2));
        await Promise.all([ingest.close(left()), aggregations.close(left()), closeWorkers([deletionWorker], left(), log)]);
        fieldCache.close();
        viewCaps.close();
        returnedCaps.close();
        targetActions.close();
        connection.disconnect();
        storeConnection.disconnect();
      })();
      return closing;
    },
  };
}

/** Several providers contribute ops to the same job (data-field aggregations, ranking statistics): concatenated per event. */
function concatEventOps(providers: EventOpsProvider[]): EventOpsProvider {
  if (providers.length === 1) return providers[0];
  return async (projectId, userId, events) => {
    const parts = await Promise.all(providers.map((p) => p(projectId, userId, events)));
    // per event, the providers' ops one after another (loops: this runs for every ingested event)
    const out: ProfileEvent['ops'][] = new Array(events.length);
    for (let i = 0; i < events.length; i++) {
      // one provider's ops are taken as they are (not copied); a second one's go into a copy
      let ops: ProfileOp[] | undefined;
      let copied = false;
      for (const part of parts) {
        const mine = part[i];
        if (mine === undefined || mine.length === 0) continue;
        if (ops === undefined) ops = mine;
        else {
          if (!copied) {
            ops = ops.slice();
            copied = true;
          }
          for (const op of mine) ops.push(op);
        }
      }
      out[i] = ops;
    }
    return out;
  };
}

function concatInteractionOps(providers: InteractionOpsProvider[]): InteractionOpsProvider {
  return async (job) => (await Promise.all(providers.map((p) => p(job)))).flatMap((ops) => ops ?? []);
}
