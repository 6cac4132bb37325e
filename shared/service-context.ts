import type { CoreContext } from './context.js';
import type { SurfaceStore } from './catalog/index.js';
import type { TreatmentTypeStore } from './catalog/index.js';
import type { DataFieldStore } from './aggregation/index.js';
import type { TreatmentStore } from './treatments/index.js';
import type { MutualExclusionGroupStore } from './catalog/index.js';
import type { IngestProducers } from './ingestion/index.js';
import type { ProfileStore, StoredProfile } from './profiles/index.js';
import type { CatalogPlan } from './delivery/index.js';
import type { RankingPolicy } from './delivery/index.js';
import type { RankingStatsStore } from './delivery/index.js';
import type { Metrics } from './platform/metrics.js';
import type { WarehouseOps } from './platform/warehouse/warehouse-rpc.js';
import type { Warehouse } from './platform/warehouse/warehouse.js';
import type { DecisionSink } from './impact/index.js';
import type { EventSchemaStore } from './catalog/index.js';
import type { IngestBacklog } from './ingestion/index.js';

/**
 * Delivery's per-process, in-memory state: compiled catalogue plans kept fresh from the
 * invalidation bus (shared/delivery/catalog.cache.ts), ranking counter snapshots and the ranking policy.
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
  eventSchemas: EventSchemaStore;
  ingest: IngestProducers;
  /** The ingestion backlog against INGEST_MAX_BACKLOG (D45 backpressure), polled while ingestion is asked about. */
  ingestBacklog: IngestBacklog;
  profiles: ProfileStore;
  /** Counters and gauges of this thread, served at `GET /metrics` of the ops listener (`OPS_PORT`). */
  metrics: Metrics;
  /** Set by the composition root when this process talks to ClickHouse (one chDB engine per process). */
  clickhouse?: Warehouse;
  /**
   * ClickHouse reads asked for through the API: this process's own ClickHouse when it has one,
   * else a request/reply call to the workers role over the rpc queue.
   */
  warehouse: WarehouseOps;
  /** The decision log (D36): GetTreatments hands it every response's decisions, off the request path. */
  decisionLog: DecisionSink;
  /** GetTreatments' caches and ranking policy (set by `createServiceContext`). */
  delivery?: DeliveryRuntime;
  /** Computed data-field values of a profile, by dataFieldId (set by the delivery area). */
  dataFieldValues?: (projectId: string, profile: StoredProfile) => Promise<Record<string, string | number | boolean | null>>;
}
