import type { StoreDeps } from '../platform/redis/store-deps.js';
import type { StoredProfile } from '../profiles/index.js';
import type { DataFieldRecord } from './types.js';
import { backfillStatuses, type BackfillStatus } from './backfill-status.queue.js';
import { DataFieldStore } from './data-field.store.js';
import { dataFieldValuesJson } from './data-field-values.js';

export type DataFieldValues = (projectId: string, profile: StoredProfile) => Promise<Record<string, string | number | boolean | null>>;

export interface AggregationDeps extends StoreDeps {
  /** REDIS_PREFIX: the BullMQ prefix of the aggregations queue, whose backfill jobs are looked up. */
  redisPrefix: string;
}

/** Named apart from the `Aggregation` of a data field. */
export interface AggregationFeature {
  dataFields: DataFieldStore;
  /** Computed data-field values of a profile, by dataFieldId, at the clock's now. */
  dataFieldValues: DataFieldValues;
  /** Where each field's backfill from history stands, by dataFieldId. */
  backfillStatuses(projectId: string, fields: DataFieldRecord[]): Promise<Map<string, BackfillStatus>>;
}

export function createAggregation(deps: AggregationDeps): AggregationFeature {
  const dataFields = new DataFieldStore(deps.redis, deps.keys, deps.now);
  return {
    dataFields,
    dataFieldValues: async (projectId, profile) => dataFieldValuesJson(await dataFields.list(projectId), profile, deps.now()),
    backfillStatuses: (projectId, fields) => backfillStatuses(deps, projectId, fields),
  };
}

// The recompute's reads of the warehouse, for the workers that run it.
export * from './aggregation-pages.warehouse.js';
