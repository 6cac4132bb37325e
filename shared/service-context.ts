import type { CoreContext } from './context.js';
import type { SurfaceStore } from './stores/surface.store.js';
import type { TreatmentTypeStore } from './stores/treatment-type.store.js';
import type { DataFieldStore } from './stores/data-field.store.js';
import type { TreatmentStore } from './stores/treatment.store.js';
import type { MutualExclusionGroupStore } from './stores/mutual-exclusion-group.store.js';

/** Everything a route or worker may use; built by `createServiceContext`. */
export interface ServiceContext extends CoreContext {
  surfaces: SurfaceStore;
  treatmentTypes: TreatmentTypeStore;
  dataFields: DataFieldStore;
  treatments: TreatmentStore;
  mutualExclusionGroups: MutualExclusionGroupStore;
}
