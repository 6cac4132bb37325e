import type { Logger } from 'pino';
import type { Config } from './config.js';
import { createRedis } from './clients/redis.js';
import { InvalidationBus } from './clients/invalidation-bus.js';
import { redisKeys } from './redis-keys.js';
import { ProjectStore } from './stores/project.store.js';
import { ApiKeyStore } from './stores/api-key.store.js';
import { Authenticator } from './auth/authenticator.js';
import { SurfaceStore } from './stores/surface.store.js';
import { TreatmentTypeStore } from './stores/treatment-type.store.js';
import { DataFieldStore } from './stores/data-field.store.js';
import { TreatmentStore } from './stores/treatment.store.js';
import { MutualExclusionGroupStore } from './stores/mutual-exclusion-group.store.js';
import type { DeliveryRuntime, ServiceContext } from './service-context.js';
import { CatalogCache } from './delivery/catalog-cache.js';
import { RankingStatsStore } from './stores/ranking-stats.store.js';
import { thompsonSampling } from './domain/ranking/thompson-sampling.js';
import { createIngestProducers } from './queues/ingest-producers.js';
import { ProfileStore } from './stores/profile.store.js';
import { dataFieldValuesJson } from './domain/data-field-values.js';
import { createMetrics } from './metrics.js';
import { remoteWarehouseOps, type RemoteWarehouseOps } from './queues/warehouse-rpc.js';
import { Queue } from 'bullmq';
import { bullPrefix, QUEUE } from './queues/queues.js';
import { DecisionLogProducer } from './queues/decision-log.js';
import { EventSchemaStore } from './stores/event-schema.store.js';
import { RequestLimits } from './limits/request-limits.js';
import { IngestBacklog } from './limits/ingest-backlog.js';

export interface ContextOptions {
  /** Injectable clock for tests. */
  now?: () => number;
}

/** Builds every client and store once; `closeContext` releases them in order. */
export function createServiceContext(config: Readonly<Config>, log: Logger, opts: ContextOptions = {}): ServiceContext {
  const now = opts.now ?? Date.now;
  const redis = createRedis(config, 'producer', 'tds-api');
  redis.on('error', (err) => log.debug({ err }, 'redis (producer) error'));
  const keys = redisKeys(config.redisPrefix);
  const bus = new InvalidationBus(config, keys.invalidationChannel(), log);
  const projects = new ProjectStore(redis, keys, now);
  const apiKeys = new ApiKeyStore(redis, keys, now);
  const auth = new Authenticator(apiKeys, projects, bus);
  const ingest = createIngestProducers(redis, config.redisPrefix);
  const ctx: ServiceContext = {
    config,
    log,
    redis,
    keys,
    bus,
    now,
    projects,
    apiKeys,
    auth,
    limits: new RequestLimits(config),
    lifecycle: { ready: false },
    surfaces: new SurfaceStore(redis, keys, now),
    treatmentTypes: new TreatmentTypeStore(redis, keys, now),
    dataFields: new DataFieldStore(redis, keys, now),
    treatments: new TreatmentStore(redis, keys, now),
    mutualExclusionGroups: new MutualExclusionGroupStore(redis, keys, now),
    eventSchemas: new EventSchemaStore(redis, keys, now),
    ingest,
    ingestBacklog: new IngestBacklog({
      redis,
      eventsQueue: ingest.eventsQueue,
      eventsProducers: [ingest.logEvents, ingest.events],
      interactionsQueue: ingest.interactionsQueue,
      // one small hash per deployment (two counters), beside the queues it describes
      mixKey: `${config.redisPrefix}:ingest:mix`,
      maxEvents: config.ingestMaxBacklog,
      log,
    }),
    profiles: new ProfileStore(redis, keys, { retentionDays: config.retentionDays }),
    metrics: createMetrics({ now }),
    warehouse: remoteWarehouseOps(redis, config.redisPrefix, log),
    decisionLog: decisionLog(redis, config.redisPrefix, log),
  };
  ctx.delivery = deliveryRuntime(ctx);
  ctx.metrics.watchCache('api_key', auth.cacheStats);
  if (ctx.delivery.catalog instanceof CatalogCache) ctx.metrics.watchCache('catalog', ctx.delivery.catalog.cacheStats);
  ctx.dataFieldValues = async (projectId, profile) => dataFieldValuesJson(await ctx.dataFields.list(projectId), profile, ctx.now());
  return ctx;
}

/** The decision log's producer on the fail-fast connection: a Redis outage never holds a response. */
function decisionLog(redis: ReturnType<typeof createRedis>, redisPrefix: string, log: Logger): DecisionLogProducer {
  const queue = new Queue(QUEUE.decisions, { connection: redis, prefix: bullPrefix(redisPrefix, redis), skipVersionCheck: true, skipMetasUpdate: true });
  queue.on('error', () => undefined);
  return new DecisionLogProducer(queue, log.child({ component: 'decision-log' }));
}

/** Delivery's in-memory state; the cache only opens its timer once a project is asked for. */
function deliveryRuntime(ctx: ServiceContext): DeliveryRuntime {
  return { catalog: new CatalogCache(ctx), rankingStats: new RankingStatsStore(ctx.redis, ctx.keys, { log: ctx.log }), policy: thompsonSampling() };
}

export async function closeContext(ctx: ServiceContext): Promise<void> {
  await ctx.delivery?.catalog.close();
  ctx.ingestBacklog.close();
  await ctx.ingest.close();
  if (ctx.decisionLog instanceof DecisionLogProducer) await ctx.decisionLog.close();
  if ('close' in ctx.warehouse) await (ctx.warehouse as RemoteWarehouseOps).close();
  await ctx.bus.close();
  ctx.redis.disconnect();
}
