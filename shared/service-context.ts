import type { CoreContext } from './context.js';
import type { SurfaceStore } from './stores/surface.store.js';
import type { TreatmentTypeStore } from './stores/treatment-type.store.js';
import type { DataFieldStore } from './stores/data-field.store.js';
import type { TreatmentStore } from './stores/treatment.store.js';
import type { MutualExclusionGroupStore } from './stores/mutual-exclusion-group.store.js';
import type { IngestProducers } from './queues/ingest-producers.js';
import type { ProfileStore, StoredProfile } from './stores/profile.store.js';
import type { CatalogPlan } from './domain/catalog-plan.js';
import type { RankingPolicy } from './domain/ranking/ranking-policy.js';
import type { RankingStatsStore } from './stores/ranking-stats.store.js';
import type { ClickHouseClient } from '@clickhouse/client';
import type { Metrics } from './metrics.js';
import type { WarehouseOps } from './queues/warehouse-rpc.js';

/**
 * Delivery's per-process, in-memory state: compiled catalogue plans kept fresh from the
 * invalidation bus (shared/delivery/catalog-cache.ts), ranking counter snapshots and the ranking policy.
 */
export interface DeliveryRuntime {
  catalog: { plan(projectId: string): Promise<CatalogPlan>; close(): Promise<void> };
  rankingStats: RankingStatsStore;
  policy: RankingPolicy;
}

/** Everything a route or worker may use; built by `createServiceContext`. */
export interface ServiceContext extends CoreContext {
  surfaces: SurfaceStore;
  treatmentTypes: TreatmentTypeStore;
  dataFields: DataFieldStore;
  treatments: TreatmentStore;
  mutualExclusionGroups: MutualExclusionGroupStore;
  ingest: IngestProducers;
  profiles: ProfileStore;
  /** Counters and gauges of this thread, served at `GET /metrics` of the ops listener (`OPS_PORT`). */
  metrics: Metrics;
  /** Set by the composition root when this process talks to ClickHouse (one chDB engine per process). */
  clickhouse?: ClickHouseClient;
  /**
   * ClickHouse reads asked for through the API: this process's own ClickHouse when it has one,
   * else a request/reply call to the workers role over the rpc queue.
   */
  warehouse: WarehouseOps;
  /** GetTreatments' caches and ranking policy (set by `createServiceContext`). */
  delivery?: DeliveryRuntime;
  /** Computed data-field values of a profile, by dataFieldId (set by the delivery area). */
  dataFieldValues?: (projectId: string, profile: StoredProfile) => Promise<Record<string, string | number | boolean | null>>;
}
