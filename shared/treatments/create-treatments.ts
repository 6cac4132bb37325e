import type { StoreDeps } from '../platform/redis/store-deps.js';
import { TreatmentStore } from './treatment.store.js';

export interface Treatments {
  treatments: TreatmentStore;
}

export function createTreatments(deps: StoreDeps): Treatments {
  return { treatments: new TreatmentStore(deps.redis, deps.keys, deps.now) };
}
