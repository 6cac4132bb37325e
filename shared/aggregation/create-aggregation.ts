import type { StoreDeps } from '../platform/redis/store-deps.js';
import type { StoredProfile } from '../profiles/index.js';
import { DataFieldStore } from './data-field.store.js';
import { dataFieldValuesJson } from './data-field-values.js';

export type DataFieldValues = (projectId: string, profile: StoredProfile) => Promise<Record<string, string | number | boolean | null>>;

/** Named apart from the `Aggregation` of a data field. */
export interface AggregationFeature {
  dataFields: DataFieldStore;
  /** Computed data-field values of a profile, by dataFieldId, at the clock's now. */
  dataFieldValues: DataFieldValues;
}

export function createAggregation(deps: StoreDeps): AggregationFeature {
  const dataFields = new DataFieldStore(deps.redis, deps.keys, deps.now);
  return { dataFields, dataFieldValues: async (projectId, profile) => dataFieldValuesJson(await dataFields.list(projectId), profile, deps.now()) };
}
