import type { Redis } from 'ioredis';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { CatalogCache, type CatalogCacheDeps } from './catalog.cache.js';
import { RankingCounterStore } from './ranking-counter.store.js';
import { TargetActionViewStore } from './target-action-views.store.js';
import { RankingStatsStore } from './ranking-stats.store.js';
import type { RankingPolicy } from './ranking/ranking-policy.js';
import { thompsonSampling } from './ranking/thompson-sampling.js';

/** The catalogue cache's stores and connections. */
export type DeliveryDeps = CatalogCacheDeps;

/** Delivery's per-process, in-memory state: compiled catalogue plans kept fresh from the bus, ranking counter snapshots and the ranking policy. */
export interface Delivery {
  /** The cache only opens its timer once a project is asked for. */
  catalogPlans: CatalogCache;
  rankingStats: RankingStatsStore;
  rankingPolicy: RankingPolicy;
}

export function createDelivery(deps: DeliveryDeps): Delivery {
  return {
    catalogPlans: new CatalogCache(deps),
    rankingStats: new RankingStatsStore(deps.redis, deps.keys, { log: deps.log }),
    rankingPolicy: thompsonSampling(),
  };
}

export async function closeDelivery(delivery: Delivery): Promise<void> {
  await delivery.catalogPlans.close();
}

/** What the workers role writes for delivery: the ranking counters of interactions and the views target-action events convert. */
export interface DeliveryCounters {
  rankingCounters: RankingCounterStore;
  targetActionViews: TargetActionViewStore;
}

export function createDeliveryCounters(deps: { redis: Redis; keys: RedisKeys; retentionDays: number }): DeliveryCounters {
  const { redis, keys, retentionDays } = deps;
  return { rankingCounters: new RankingCounterStore(redis, keys), targetActionViews: new TargetActionViewStore(redis, keys, { retentionDays }) };
}
