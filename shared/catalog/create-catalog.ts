import type { StoreDeps } from '../platform/redis/store-deps.js';
import { EventSchemaStore } from './event-schema.store.js';
import { MutualExclusionGroupStore } from './mutual-exclusion-group.store.js';
import { SurfaceStore } from './surface.store.js';
import { TreatmentTypeStore } from './treatment-type.store.js';

export interface Catalog {
  surfaces: SurfaceStore;
  treatmentTypes: TreatmentTypeStore;
  mutualExclusionGroups: MutualExclusionGroupStore;
  eventSchemas: EventSchemaStore;
}

export function createCatalog(deps: StoreDeps): Catalog {
  const { redis, keys, now } = deps;
  return {
    surfaces: new SurfaceStore(redis, keys, now),
    treatmentTypes: new TreatmentTypeStore(redis, keys, now),
    mutualExclusionGroups: new MutualExclusionGroupStore(redis, keys, now),
    eventSchemas: new EventSchemaStore(redis, keys, now),
  };
}
