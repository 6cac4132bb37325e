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
    lifecycle: { ready: false },
    surfaces: new SurfaceStore(redis, keys, now),
    treatmentTypes: new TreatmentTypeStore(redis, keys, now),
    dataFields: new DataFieldStore(redis, keys, now),
    treatments: new TreatmentStore(redis, keys, now),
    mutualExclusionGroups: new MutualExclusionGroupStore(redis, keys, now),
    ingest: createIngestProducers(redis, config.redisPrefix),
    profiles: new ProfileStore(redis, keys, { retentionDays: config.retentionDays }),
    metrics: createMetrics({ now }),
    warehouse: remoteWarehouseOps(redis, config.redisPrefix, log),
  };
  ctx.delivery = deliveryRuntime(ctx);
  ctx.metrics.watchCache('api_key', auth.cacheStats);
  if (ctx.delivery.catalog instanceof CatalogCache) ctx.metrics.watchCache('catalog', ctx.delivery.catalog.cacheStats);
  ctx.dataFieldValues = async (projectId, profile) => dataFieldValuesJson(await ctx.dataFields.list(projectId), profile, ctx.now());
  return ctx;
}

/** Delivery's in-memory state; the cache only opens its timer once a project is asked for. */
function deliveryRuntime(ctx: ServiceContext): DeliveryRuntime {
  return { catalog: new CatalogCache(ctx), rankingStats: new RankingStatsStore(ctx.redis, ctx.keys, { log: ctx.log }), policy: thompsonSampling() };
}

export async function closeContext(ctx: ServiceContext): Promise<void> {
  await ctx.delivery?.catalog.close();
  await ctx.ingest.close();
  if ('close' in ctx.warehouse) await (ctx.warehouse as RemoteWarehouseOps).close();
  await ctx.bus.close();
  ctx.redis.disconnect();
}
