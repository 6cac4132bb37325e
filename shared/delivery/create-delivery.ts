import { CatalogCache, type CatalogCacheDeps } from './catalog.cache.js';
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
