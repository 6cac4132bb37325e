import type { StoreDeps } from '../platform/redis/store-deps.js';
import { DataFieldStore } from './data-field.store.js';

/** Named apart from the `Aggregation` of a data field. */
export interface AggregationFeature {
  dataFields: DataFieldStore;
}

export function createAggregation(deps: StoreDeps): AggregationFeature {
  return { dataFields: new DataFieldStore(deps.redis, deps.keys, deps.now) };
}

// The recompute's reads of the warehouse, for the workers that run it.
export * from './aggregation-pages.warehouse.js';
