import type { Redis } from 'ioredis';
import type { RedisKeys } from '../platform/redis/redis-keys.js';
import { dataFieldValuesJson } from '../aggregation/index.js';
import type { StoredProfile } from '../profiles/index.js';
import { CatalogCache, type CatalogCacheDeps } from './catalog.cache.js';
import { RankingCounterStore, RankingStatsStore } from './ranking-stats.store.js';
import { TargetActionViewStore } from './target-action-views.store.js';
import type { RankingPolicy } from './ranking/ranking-policy.js';
import { thompsonSampling } from './ranking/thompson-sampling.js';

/** The catalogue cache's stores and connections, and the clock of data-field windows. */
export interface DeliveryDeps extends CatalogCacheDeps {
  now: () => number;
}

export type DataFieldValues = (projectId: string, profile: StoredProfile) => Promise<Record<string, string | number | boolean | null>>;

/** Delivery's per-process, in-memory state: compiled catalogue plans kept fresh from the bus, ranking counter snapshots and the ranking policy. */
export interface Delivery {
  /** The cache only opens its timer once a project is asked for. */
  catalogPlans: CatalogCache;
  rankingStats: RankingStatsStore;
  rankingPolicy: RankingPolicy;
  /** Computed data-field values of a profile, by dataFieldId. */
  dataFieldValues: DataFieldValues;
}

export function createDelivery(deps: DeliveryDeps): Delivery {
  return {
    catalogPlans: new CatalogCache(deps),
    rankingStats: new RankingStatsStore(deps.redis, deps.keys, { log: deps.log }),
    rankingPolicy: thompsonSampling(),
    dataFieldValues: async (projectId, profile) => dataFieldValuesJson(await deps.dataFields.list(projectId), profile, deps.now()),
  };
}

export async function closeDelivery(delivery: Delivery): Promise<void> {
  await delivery.catalogPlans.close();
}

/** Delivery's background writers: what the workers record from interactions and events for ranking and target actions. */
export interface DeliveryRecorders {
  /** Ranking counters of interactions, applied once per job. */
  rankingCounters: RankingCounterStore;
  /** Views awaiting their target action (a conversion), kept for the retention. */
  targetActionViews: TargetActionViewStore;
}

export function createDeliveryRecorders(deps: { redis: Redis; keys: RedisKeys; retentionDays: number }): DeliveryRecorders {
  return {
    rankingCounters: new RankingCounterStore(deps.redis, deps.keys),
    targetActionViews: new TargetActionViewStore(deps.redis, deps.keys, { retentionDays: deps.retentionDays }),
  };
}
