import type { Logger } from 'pino';
import type { Config } from './platform/config.js';
import { createRedis } from './platform/redis/redis.js';
import { InvalidationBus } from './platform/redis/invalidation-bus.js';
import { redisKeys } from './platform/redis/redis-keys.js';
import { ProjectStore } from './projects/index.js';
import { ApiKeyStore } from './projects/index.js';
import { Authenticator } from './projects/index.js';
import { SurfaceStore } from './catalog/index.js';
import { TreatmentTypeStore } from './catalog/index.js';
import { DataFieldStore } from './aggregation/index.js';
import { TreatmentStore } from './treatments/index.js';
import { MutualExclusionGroupStore } from './catalog/index.js';
import type { DeliveryRuntime, ServiceContext } from './service-context.js';
import { CatalogCache } from './delivery/index.js';
import { RankingStatsStore } from './delivery/index.js';
import { thompsonSampling } from './delivery/index.js';
import { createIngestProducers } from './ingestion/index.js';
import { ProfileStore } from './profiles/index.js';
import { dataFieldValuesJson } from './aggregation/index.js';
import { createMetrics } from './platform/metrics.js';
import { remoteWarehouseOps, type RemoteWarehouseOps } from './platform/warehouse/warehouse-rpc.js';
import { Queue } from 'bullmq';
import { bullPrefix, QUEUE } from './platform/queues.js';
import { DecisionLogProducer } from './impact/index.js';
import { EventSchemaStore } from './catalog/index.js';
import { RequestLimits } from './platform/limits/request-limits.js';
import { IngestBacklog } from './ingestion/index.js';

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
